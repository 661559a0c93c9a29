"""Exact ``W_p`` of the finite points by a rectangular assignment on the reduced costs (scipy)."""

from __future__ import annotations

import math

import numpy as np

from topolip.topology.distances._costs import diag_factor, ground, power

# Above this share of useful pairs, the dense solver is faster than the sparse one.
_SPARSE_DENSITY = 0.3


def finite_pow_assignment(A, B, p, q, cap: float = math.inf) -> float:
    """sum of p-th powers, exact, via a rectangular assignment on the reduced costs.

    For partial matchings M, sum_M c + sum_unmatched g = sum g + sum_M (c - g_i - g_j);
    only pairs with c' = c - g_i - g_j < 0 can help, so W^p = sum g + min over full
    assignments of the smaller side of sum min(c', 0) (extend a partial matching by
    pairs of value 0; drop the pairs with c' >= 0 of an assignment).
    """
    c = diag_factor(q)
    ga = power(c * (A[:, 1] - A[:, 0]), p, cap)
    gb = power(c * (B[:, 1] - B[:, 0]), p, cap)
    if len(A) == 0 or len(B) == 0:
        return float(ga.sum() + gb.sum())
    cost = power(ground(A, B, q), p, cap)
    cprime = cost - ga[:, None] - gb[None, :]
    neg = cprime < 0
    rows = np.flatnonzero(neg.any(axis=1))
    cols = np.flatnonzero(neg.any(axis=0))
    mi = np.empty(0, np.intp)
    mj = np.empty(0, np.intp)
    if len(rows) > len(cols):  # rows: the side with fewer active points
        mj, mi = _reduced_assignment(cprime.T, neg.T, cols, rows, gb)
    elif len(rows):
        mi, mj = _reduced_assignment(cprime, neg, rows, cols, ga)
    free_a = np.ones(len(A), bool)
    free_a[mi] = False
    free_b = np.ones(len(B), bool)
    free_b[mj] = False
    return float(cost[mi, mj].sum() + ga[free_a].sum() + gb[free_b].sum())


def _reduced_assignment(cprime, neg, rows, cols, g_rows):
    """Optimal pairs (i, j) with cprime[i, j] < 0 of min sum of min(cprime, 0).

    ``rows`` (no more than ``cols``) and ``cols`` are the indices with a negative
    entry. Sparse problems go to scipy's LAPJVsp on the negative entries, with one
    private column per row for "unmatched" (all weights shifted by the same constant,
    which every full matching pays once per row, so that no weight is 0); dense ones
    to ``linear_sum_assignment``.
    """
    rows = rows[np.argsort(-g_rows[rows], kind="stable")]  # the solvers run faster this way
    n_r, n_c = len(rows), len(cols)
    i, j = np.nonzero(neg)
    if len(i) <= _SPARSE_DENSITY * n_r * n_c:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import min_weight_full_bipartite_matching

        row_rank = np.empty(neg.shape[0], np.intp)
        row_rank[rows] = np.arange(n_r)
        col_rank = np.empty(neg.shape[1], np.intp)
        col_rank[cols] = np.arange(n_c)
        w = cprime[i, j]
        shift = -2.0 * float(w.min())  # weights in [shift / 2, shift]: never 0
        graph = csr_matrix(
            (
                np.concatenate([w + shift, np.full(n_r, shift)]),
                (
                    np.concatenate([row_rank[i], np.arange(n_r)]),
                    np.concatenate([col_rank[j], n_c + np.arange(n_r)]),
                ),
            ),
            shape=(n_r, n_c + n_r),
        )
        r, k = min_weight_full_bipartite_matching(graph)
        keep = k < n_c
        mi, mj = rows[r[keep]], cols[k[keep]]
    else:
        from scipy.optimize import linear_sum_assignment

        sub = np.minimum(cprime[np.ix_(rows, cols)], 0.0)
        r, k = linear_sum_assignment(sub)
        keep = sub[r, k] < 0
        mi, mj = rows[r[keep]], cols[k[keep]]
    keep = cprime[mi, mj] < 0
    return mi[keep], mj[keep]
