"""Maximum-inner-product search as nearest-neighbour search (Bachrach et al. 2014).

The top of a linear softmax is ``argmax_w h·W_w + b_w``: a maximum inner product, which the
nearest-neighbour indexes do not search directly. Append the bias to each row and a 1 to the
query, a_w = [W_w, b_w] and q = [h, 1], so that the score is q·a_w; then lift every row onto
one sphere of radius R = max_w |a_w| with one more coordinate, x_w = [a_w, sqrt(R² - |a_w|²)],
and give the query a 0 there, q' = [h, 1, 0]. Now

    |q' - x_w|² = |q'|² + R² - 2 (h·W_w + b_w)   and   cos(q', x_w) = (h·W_w + b_w) / (|q'| R),

so for a fixed query the Euclidean nearest neighbours and the smallest angles are exactly the
highest scores: one transform serves L2 indexes (faiss, hnswlib) and angular hashing (the
sign-random-projection LSH) alike.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def lift_rows(weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """weight (V, H), bias (V,) or None -> (V, H + 2) float32 rows of equal norm."""
    rows = weight.detach().float()
    column = bias.detach().float() if bias is not None else rows.new_zeros(rows.shape[0])
    augmented = torch.cat([rows, column[:, None]], dim=1)
    squared = augmented.pow(2).sum(1)
    lift = (squared.max() - squared).clamp_min(0).sqrt()
    return torch.cat([augmented, lift[:, None]], dim=1)


def lift_queries(hidden: Tensor) -> Tensor:
    """hidden (N, H) -> (N, H + 2) float32 queries [h, 1, 0]."""
    queries = hidden.detach().float()
    ones = queries.new_ones(queries.shape[0], 1)
    return torch.cat([queries, ones, torch.zeros_like(ones)], dim=1)
