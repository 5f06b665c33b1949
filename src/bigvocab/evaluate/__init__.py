"""Exact perplexity, word vectors (word2vec format, nearest neighbours), analogies, similarity."""

from bigvocab.evaluate.analogy import AnalogyResult, SectionResult, evaluate_analogies, read_analogies
from bigvocab.evaluate.normaliser import NormaliserStats, check_has_normaliser, log_normaliser_stats
from bigvocab.evaluate.perplexity import perplexity, perplexity_from, total_log_prob
from bigvocab.evaluate.similarity import SimilarityResult, evaluate_similarity, read_word_pairs, spearman
from bigvocab.evaluate.vectors import WordVectors, load_word2vec_format, load_word_vectors

__all__ = [
    "AnalogyResult",
    "NormaliserStats",
    "SectionResult",
    "SimilarityResult",
    "WordVectors",
    "check_has_normaliser",
    "evaluate_analogies",
    "evaluate_similarity",
    "load_word2vec_format",
    "load_word_vectors",
    "log_normaliser_stats",
    "perplexity",
    "perplexity_from",
    "read_analogies",
    "read_word_pairs",
    "spearman",
    "total_log_prob",
]
