"""The ``xmc:DIR`` corpus kind: a data set of the Extreme Classification Repository as labelled rows.

``DIR`` holds ``train.txt`` and ``test.txt`` in the repository's sparse format
(:func:`~bigvocab.data.xmc.read_xmc`); the last twentieth of the training rows is held out as
the validation split. The vocabulary is the labels ``0 .. L-1`` (their names are their ids) with
their training counts, and the splits are :class:`~bigvocab.data.xmc.LabelledRows`, which the
``xmc`` model reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bigvocab.data.corpora import Corpus, corpus_kind
from bigvocab.data.vocab import Vocab
from bigvocab.data.xmc import read_xmc
from bigvocab.errors import ConfigError, DataError

#: One row in this many training rows is held out for validation (the last ones).
VALID_SHARE = 20


@corpus_kind("xmc", "xmc:DIR", builds_vocabulary=False)
def load_xmc(spec: str, arg: str, options: Any) -> Corpus:
    """Labelled rows of the Extreme Classification Repository: DIR/train.txt and DIR/test.txt, the
    last twentieth of train held out for validation."""
    if options.min_count is not None or options.max_size is not None:
        raise ConfigError("min_count/max_size do not apply to an xmc corpus: its labels are fixed")
    folder = Path(arg).expanduser()
    if not folder.is_dir():
        raise DataError(f"{spec!r}: {str(folder)!r} is not a directory with train.txt and test.txt")
    rows, test = (read_xmc(folder / name) for name in ("train.txt", "test.txt"))
    if (rows.num_features, rows.num_labels) != (test.num_features, test.num_labels):
        raise DataError(
            f"{spec!r}: train.txt has {rows.num_features} features and {rows.num_labels} labels, "
            f"test.txt {test.num_features} and {test.num_labels}"
        )
    held = max(1, len(rows) // VALID_SHARE)
    if len(rows) < 2:
        raise DataError(f"{spec!r}: train.txt needs at least 2 rows (one is held out for validation)")
    order = torch.arange(len(rows))
    train, valid = rows.subset(order[:-held]), rows.subset(order[-held:])
    vocab = options.vocab
    if vocab is None:
        vocab = Vocab([str(label) for label in range(rows.num_labels)], train.label_counts().tolist(), unk=None)
    elif len(vocab) != rows.num_labels:
        raise DataError(f"{spec!r} has {rows.num_labels} labels; the given vocabulary has {len(vocab)}")
    meta = {"source": str(folder), "rows": {"train": len(train), "valid": len(valid), "test": len(test)}}
    return Corpus(spec, vocab, train, valid, test, None, meta, model_options={"num_features": rows.num_features})
