"""Corpora, vocabularies, the synthetic language, labelled rows for retrieval and XMC (the
Extreme Classification Repository's reader, a synthetic task with a known optimum); batching
lives in ``data.batching``."""

from bigvocab.data import xmc_corpus  # noqa: F401  (registers the xmc corpus kind)
from bigvocab.data.corpora import EOS, UNK, Corpus, load_corpus
from bigvocab.data.synthetic import SyntheticLanguage
from bigvocab.data.synthetic_xmc import SyntheticXMC
from bigvocab.data.vocab import UnknownWordError, Vocab
from bigvocab.data.xmc import LabelledRows, read_xmc, write_xmc

__all__ = [
    "EOS",
    "UNK",
    "Corpus",
    "LabelledRows",
    "SyntheticLanguage",
    "SyntheticXMC",
    "UnknownWordError",
    "Vocab",
    "load_corpus",
    "read_xmc",
    "write_xmc",
]
