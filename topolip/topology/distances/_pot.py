"""Exact ``W_p`` of the finite points as a transport problem, by POT's network simplex."""

from __future__ import annotations

import math
import warnings

import numpy as np

from topolip.topology.distances._costs import diag_factor, ground, power


def finite_pow_pot(A, B, p, q, num_iter_max: int | None = None,
                    cap: float = math.inf) -> float:
    """sum of p-th powers, exact, via POT's network simplex (ot.emd).

    Transport problem with one diagonal node per side: supplies (1,..,1, m),
    demands (1,..,1, n), costs [[c, g_a], [g_b, 0]]. Its vertex optima are
    integral, i.e. partial matchings. Any POT warning (iteration limit, non
    optimal result) is raised as RuntimeError.
    """
    import ot

    c = diag_factor(q)
    ga = power(c * (A[:, 1] - A[:, 0]), p, cap)
    gb = power(c * (B[:, 1] - B[:, 0]), p, cap)
    n, m = len(A), len(B)
    if n == 0 or m == 0:
        return float(ga.sum() + gb.sum())
    M = np.zeros((n + 1, m + 1))
    M[:n, :m] = power(ground(A, B, q), p, cap)
    M[:n, m] = ga
    M[n, :m] = gb
    sa = np.ones(n + 1)
    sa[n] = m
    sb = np.ones(m + 1)
    sb[m] = n
    if num_iter_max is None:
        num_iter_max = max(100_000, 100 * (n + 1) * (m + 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        G, log = ot.emd(sa, sb, M, numItermax=int(num_iter_max), log=True)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    for w in caught:  # pass on what is not about the solver's result (deprecations, ...)
        if not issubclass(w.category, UserWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if log.get("warning") is not None or log.get("result_code", 1) != 1 or msgs:
        raise RuntimeError(
            "POT's exact solver (ot.emd) did not certify an optimal plan: "
            f"result_code={log.get('result_code')}, warning={log.get('warning')!r}, "
            f"warnings={msgs}; use method='assignment', or raise num_iter_max"
        )
    return float(np.sum(G * M))
