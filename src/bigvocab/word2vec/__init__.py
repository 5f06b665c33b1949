"""word2vec as gensim users know it, on a compiled Hogwild! engine (see :mod:`.model`)."""

from bigvocab.word2vec.keyed_vectors import KeyedVectors
from bigvocab.word2vec.model import Word2Vec

__all__ = ["KeyedVectors", "Word2Vec"]
