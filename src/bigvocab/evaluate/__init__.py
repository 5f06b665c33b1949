"""Exact perplexity, word vectors (word2vec format, nearest neighbours), analogies, similarity,
retrieval and XMC ranking metrics (P@k, nDCG@k, PSP@k, recall@k, MRR)."""

from bigvocab.evaluate.analogy import AnalogyResult, SectionResult, evaluate_analogies, read_analogies
from bigvocab.evaluate.normaliser import NormaliserStats, check_has_normaliser, log_normaliser_stats
from bigvocab.evaluate.perplexity import perplexity, perplexity_from, total_log_prob
from bigvocab.evaluate.retrieval import (
    evaluate_retrieval,
    jain_propensities,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    precision_per_row,
    psp_at_k,
    recall_at_k,
    retrieval_metrics,
)
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
    "evaluate_retrieval",
    "evaluate_similarity",
    "jain_propensities",
    "load_word2vec_format",
    "load_word_vectors",
    "log_normaliser_stats",
    "mean_reciprocal_rank",
    "ndcg_at_k",
    "perplexity",
    "perplexity_from",
    "precision_at_k",
    "precision_per_row",
    "psp_at_k",
    "read_analogies",
    "read_word_pairs",
    "recall_at_k",
    "retrieval_metrics",
    "spearman",
    "total_log_prob",
]
