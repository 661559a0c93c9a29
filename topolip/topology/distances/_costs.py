"""Costs shared by the solvers of :mod:`topolip.topology.distances`: distance to the diagonal, the
``l_q`` ground metric between points, ``p``-th powers with a cap, and the essential points' cost.
"""

from __future__ import annotations

import math

import numpy as np


def diag_factor(q: float) -> float:
    # l_q distance of (b, d) to the diagonal: the nearest diagonal point is ((b+d)/2, (b+d)/2)
    # for every q >= 1 (symmetry and convexity), at distance 2**(1/q) * (d - b) / 2.
    return 0.5 if q == math.inf else 2.0 ** (1.0 / q) / 2.0


def ground(A: np.ndarray, B: np.ndarray, q: float) -> np.ndarray:
    """(n, m) l_q distances between the rows of A (n, 2) and B (m, 2)."""
    d0 = np.subtract(A[:, 0, None], B[None, :, 0])
    d1 = np.subtract(A[:, 1, None], B[None, :, 1])
    if q == 2.0:
        np.square(d0, out=d0)
        d0 += np.square(d1, out=d1)
        return np.sqrt(d0, out=d0)
    np.abs(d0, out=d0)
    np.abs(d1, out=d1)
    if q == math.inf:
        return np.maximum(d0, d1, out=d0)
    return np.add(d0, d1, out=d0)


def power(x: np.ndarray, p: float, cap: float = math.inf) -> np.ndarray:
    """``x ** p`` in place; values above ``cap`` (overflow included) are clipped to ``cap``."""
    if p == 1.0:
        return x
    if p == 2.0:
        return np.square(x, out=x)
    with np.errstate(over="ignore", under="ignore"):
        np.power(x, p, out=x)
    if cap < math.inf:
        np.minimum(x, cap, out=x)
    return x


def essential_cost(ea: np.ndarray, eb: np.ndarray, p: float) -> float:
    """Cost of matching essential births (sorted order is optimal on a line)."""
    if len(ea) != len(eb):
        return math.inf
    if len(ea) == 0:
        return 0.0
    d = np.abs(ea - eb)
    if p == math.inf:
        return float(d.max())
    with np.errstate(under="ignore"):
        return float(np.sum(d**p))
