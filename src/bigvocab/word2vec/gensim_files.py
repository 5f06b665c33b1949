"""gensim's own files (``save`` / ``load``), read and written through gensim itself.

``bigvocab.Word2Vec.load`` reads a model that gensim saved (gensim 1.x to 4.x, which gensim's
loader upgrades), and ``KeyedVectors.save`` / ``load`` use gensim's format, so a gensim user keeps
their files. gensim is an optional dependency (``pip install 'bigvocab[interop]'``).

What carries over from a gensim model: its options, vocabulary and counts, word vectors,
per-word ``vectors_lockf`` and, for negative sampling, the output vectors (``syn1neg``). A
hierarchical softmax's node vectors (``syn1``) do not: bigvocab builds its own Huffman tree from
the counts, whose nodes are not numbered as gensim's, so they start from zero and are learnt again
by further training (the word vectors, what a user queries, are unchanged).
"""

from __future__ import annotations

import logging
import types
from typing import Any

import numpy as np
import torch

from bigvocab.errors import ConfigError

logger = logging.getLogger("bigvocab.word2vec")

#: gensim's constructor options that bigvocab.Word2Vec takes under the same name.
_OPTIONS = (
    "vector_size",
    "alpha",
    "window",
    "min_count",
    "sample",
    "seed",
    "workers",
    "min_alpha",
    "sg",
    "hs",
    "negative",
    "ns_exponent",
    "cbow_mean",
    "epochs",
    "null_word",
    "sorted_vocab",
    "batch_words",
    "max_final_vocab",
    "shrink_windows",
    "max_vocab_size",
)


def gensim_models() -> types.ModuleType:
    """``gensim.models``, or a ConfigError that says how to install it."""
    try:
        import gensim.models
    except ImportError:
        raise ConfigError(
            "reading or writing gensim's own files needs gensim: pip install 'bigvocab[interop]'"
        ) from None
    return gensim.models


def to_gensim_vectors(vectors: Any) -> Any:
    """A ``gensim.models.KeyedVectors`` holding a copy of bigvocab ``vectors`` and its attributes."""
    out = gensim_models().KeyedVectors(vectors.vector_size)
    out.add_vectors(vectors.index_to_key, vectors.vectors)
    for name, values in vectors.expandos.items():
        out.expandos[name] = np.array(values, copy=True)
    return out


def from_gensim_vectors(source: Any, cls: type) -> Any:
    """bigvocab ``cls`` (KeyedVectors) from gensim's: keys, vectors and per-key attributes."""
    vectors = cls(list(source.index_to_key), np.ascontiguousarray(source.vectors, dtype=np.float32))
    for name, values in getattr(source, "expandos", {}).items():
        if len(values) == len(vectors):
            vectors.expandos[name] = np.array(values, copy=True)
    return vectors


def from_gensim_model(source: Any, cls: type) -> Any:
    """bigvocab ``cls`` (Word2Vec) from a loaded ``gensim.models.Word2Vec`` (see the module notes)."""
    options = {name: getattr(source, name) for name in _OPTIONS if getattr(source, name, None) is not None}
    if options.get("hs") and options.get("negative"):
        options["negative"] = 0  # bigvocab trains one output layer; the tree is what gensim's hs=1 means
    model = cls(progress=False, **options)
    words = list(source.wv.index_to_key)
    counts = [int(source.wv.get_vecattr(word, "count")) for word in words]
    model._build(words, counts)
    with torch.no_grad():
        model.module.embedding.weight.copy_(torch.from_numpy(np.asarray(source.wv.vectors, dtype=np.float32)))
    if model.syn1neg is not None and getattr(source, "syn1neg", None) is not None:
        model.syn1neg[...] = source.syn1neg
    elif model.syn1 is not None:
        logger.warning("the hierarchical softmax's node vectors of a gensim model start from zero (another tree)")
    lockf = np.asarray(getattr(source.wv, "vectors_lockf", np.ones(1)), dtype=np.float32)
    model.wv.vectors_lockf = lockf if lockf.shape[0] == len(words) else np.ones(1, dtype=np.float32)
    model.corpus_count = getattr(source, "corpus_count", 0)
    model.corpus_total_words = getattr(source, "corpus_total_words", None)
    return model
