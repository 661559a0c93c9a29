"""Exact bottleneck distance of the finite points: a threshold search with exact matching tests."""

from __future__ import annotations

import numpy as np

from topolip.topology.distances._costs import diag_factor, ground
from topolip.topology.distances._h0 import h0_bottleneck


def finite_bottleneck(A, B, q, h0: bool) -> float:
    """Exact bottleneck of the finite parts: smallest feasible candidate threshold."""
    c = diag_factor(q)
    if len(A) == 0 or len(B) == 0:
        pers = np.concatenate([A[:, 1] - A[:, 0], B[:, 1] - B[:, 0]])
        return float(c * pers.max(initial=0.0))
    if h0:
        return h0_bottleneck(np.sort(A[:, 1]), np.sort(B[:, 1]), c)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    ga = c * (A[:, 1] - A[:, 0])
    gb = c * (B[:, 1] - B[:, 0])
    cost = ground(A, B, q)
    upper = max(float(ga.max()), float(gb.max()))  # everything to the diagonal
    lower = max(
        float(np.minimum(ga, cost.min(axis=1)).max()),
        float(np.minimum(gb, cost.min(axis=0)).max()),
    )
    pool = np.concatenate([cost[(cost > lower) & (cost < upper)], ga, gb])

    def covers(ok: np.ndarray) -> bool:
        if ok.shape[0] == 0:
            return True
        if not ok.any(axis=1).all():
            return False
        match = maximum_bipartite_matching(csr_matrix(ok), perm_type="column")
        return bool((match >= 0).all())

    def feasible(t: float) -> bool:
        # Mendelsohn-Dulmage: a matching covering the points of A that cannot go to
        # the diagonal and one covering those of B give one matching covering both.
        return covers(cost[ga > t] <= t) and covers((cost[:, gb > t] <= t).T)

    if feasible(lower):
        return lower
    lo, hi = lower, upper
    pool = pool[(pool > lo) & (pool < hi)]
    while pool.size:
        t = float(np.partition(pool, pool.size // 2)[pool.size // 2])
        if feasible(t):
            hi = t
            pool = pool[pool < t]
        else:
            lo = t
            pool = pool[pool > t]
    return hi
