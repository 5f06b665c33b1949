"""Corpora, vocabularies and the synthetic language (batching lives in ``data.batching``)."""

from bigvocab.data.corpora import EOS, UNK, Corpus, load_corpus
from bigvocab.data.synthetic import SyntheticLanguage
from bigvocab.data.vocab import UnknownWordError, Vocab

__all__ = ["EOS", "UNK", "Corpus", "SyntheticLanguage", "UnknownWordError", "Vocab", "load_corpus"]
