r"""Exact diagram distances for degree-0 diagrams (all births 0), in O(n m).

Private helpers of :mod:`topolip.topology.distances`; the public entry points are
:func:`topolip.topology.distances.wasserstein` and :func:`topolip.topology.distances.bottleneck`,
which call these automatically when both diagrams have all births 0.

Setting. A finite point of a degree-0 Vietoris--Rips diagram is ``(0, x)``
with ``x > 0``. Two such points are at :math:`\ell_q` distance
:math:`|x - y|` (only the deaths differ, for every ``q``), and ``(0, x)`` is
at distance :math:`c_q x` from the diagonal, :math:`c_q = 2^{1/q} / 2`.
With :math:`g(x) = (c_q x)^p`, the ``p``-th power of :math:`W_{p,q}` is

.. math::

    \min_{\text{partial matchings } M}
        \sum_{(i,j) \in M} |x_i - y_j|^p
        + \sum_{i \notin M} g(x_i) + \sum_{j \notin M} g(y_j).

Monotone matchings suffice. Sort ``x`` and ``y`` increasingly. For
:math:`x \le x'` and :math:`y \le y'` and any convex :math:`f`,
:math:`f(x - y) + f(x' - y') \le f(x - y') + f(x' - y)` (the cost
:math:`|x - y|^p`, :math:`p \ge 1`, is a Monge array; e.g. Burkard, Klinz,
Rudolf, "Perspectives of Monge properties in optimization", Discrete Appl.
Math. 70 (1996)). Exchanging the partners of two crossing matched pairs
therefore never increases the cost, and leaves the set of unmatched points
and their diagonal costs unchanged. Repeating the exchange turns any optimal
partial matching into one whose matched pairs are increasing in both
coordinates. The same exchange holds for the bottleneck cost, since
:math:`\max(|x-y|, |x'-y'|) \le \max(|x-y'|, |x'-y|)`.

Hence the dynamic program over prefixes (an edit distance),

.. math::

    F_{i,j} = \min\bigl(F_{i-1,j} + g(x_i),\; F_{i,j-1} + g(y_j),\;
                       F_{i-1,j-1} + |x_i - y_j|^p\bigr),

is exact. It is evaluated here in the shifted form
:math:`D_{i,j} = F_{i,j} - \sum_{k\le i} g(x_k) - \sum_{l\le j} g(y_l)`,
:math:`D_{i,j} = \min(D_{i-1,j}, D_{i,j-1}, D_{i-1,j-1} + c'_{ij})` with
:math:`c'_{ij} = \min(0, |x_i-y_j|^p - g(x_i) - g(y_j))`, one vectorized row at
a time (the horizontal moves are free, so a row is a cumulative minimum); the
optimal matching is then recovered by backtracking and its cost is summed
from the original non-negative terms, so no cancellation enters the result.
"""

from __future__ import annotations

import math

import numpy as np

from topolip.topology.distances._costs import diag_factor, power

__all__: list[str] = []


def h0_matching(cprime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal monotone partial matching of sorted points ``x`` (n,) and ``y`` (m,).

    ``cprime`` is the ``(n, m)`` array :math:`\\min(0, |x_i-y_j|^p - g(x_i) - g(y_j))`
    (it alone determines the matching; the points are not needed).
    Returns the matched index arrays ``(i, j)`` (increasing).
    """
    n, m = cprime.shape
    T = np.zeros((n + 1, m + 1))
    H = np.empty(m)
    for i in range(1, n + 1):
        prev = T[i - 1]
        np.add(prev[:-1], cprime[i - 1], out=H)
        np.minimum(H, prev[1:], out=H)
        np.minimum.accumulate(H, out=T[i, 1:])
    # Backtrack. Every entry of T is one of its candidate values exactly (min and
    # cumulative min select, they do not round), so equality tests are exact.
    at = T.item
    i, j = n, m
    mi: list[int] = []
    mj: list[int] = []
    while i > 0 and j > 0:
        v = at(i, j)
        if v == at(i - 1, j):
            i -= 1
        elif v == at(i, j - 1):
            j -= 1
        else:
            mi.append(i - 1)
            mj.append(j - 1)
            i -= 1
            j -= 1
    return np.array(mi[::-1], dtype=np.intp), np.array(mj[::-1], dtype=np.intp)


def h0_bottleneck(x: np.ndarray, y: np.ndarray, c: float) -> float:
    r"""Exact bottleneck distance between ``{(0, x_i)}`` and ``{(0, y_j)}``.

    ``x`` (n,) and ``y`` (m,) are sorted deaths, ``n, m >= 1``; ``c`` is the
    diagonal factor :math:`c_q`. Time O((n + m) log(n + m)) per tested
    threshold and O(n + m) memory: no ``(n, m)`` array is formed.

    The answer :math:`t^*` is the smallest candidate (a value
    :math:`\operatorname{fl}|x_i - y_j|`, :math:`c x_i` or :math:`c y_j`) at
    which a matching of cost :math:`\le t^*` exists. A threshold :math:`t` is
    feasible iff the points with :math:`c x > t` can be matched within
    :math:`t` and so can the points with :math:`c y > t` (Mendelsohn--Dulmage
    theorem: two such one-sided matchings combine into one). Each point's
    admissible partners form a contiguous window of the sorted other side
    (floating-point rounding of :math:`|x - y|` is monotone) whose ends
    increase along the sorted points, so Hall's condition needs checking on
    contiguous runs only: :math:`hi_{k_2} - lo_{k_1} \ge k_2 - k_1 + 1` for all
    :math:`k_1 \le k_2`, one cumulative maximum. Bisection on :math:`t` narrows
    the interval until few candidates remain, which are then enumerated from
    the windows and searched exactly.
    """
    gx, gy = c * x, c * y

    def feasible(t: float) -> bool:
        return _hall(*_windows(x[gx > t], y, t)) and _hall(*_windows(y[gy > t], x, t))

    def n_pairs(t: float) -> int:
        lo, hi = _windows(x, y, t)
        return int((hi - lo).sum())

    def n_diag(a: float, b: float) -> int:
        return int(((gx > a) & (gx <= b)).sum() + ((gy > a) & (gy <= b)).sum())

    a, b = -1.0, float(max(gx[-1], gy[-1]))  # t* in (a, b]; b (all to the diagonal) feasible
    pairs_a, pairs_b = 0, n_pairs(b)
    while pairs_b - pairs_a + n_diag(a, b) > 2048:
        t = a + (b - a) / 2
        if not a < t < b:
            break
        if feasible(t):
            b, pairs_b = t, n_pairs(t)
        else:
            a, pairs_a = t, n_pairs(t)
    cand = np.unique(np.concatenate([_pair_values(x, y, a, b), gx, gy]))
    cand = cand[(cand > a) & (cand <= b)]
    lo_i, hi_i = 0, len(cand) - 1  # the smallest feasible candidate exists in (a, b]
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        if feasible(float(cand[mid])):
            hi_i = mid
        else:
            lo_i = mid + 1
    return float(cand[lo_i])


def finite_pow_h0(A, B, p, q, cap: float = math.inf) -> float:
    """sum of p-th powers for degree-0 diagrams (births treated as 0), exact DP."""
    c = diag_factor(q)
    x = np.sort(A[:, 1])
    y = np.sort(B[:, 1])
    if len(x) > len(y):  # loop over the shorter side
        x, y = y, x
    gx = power(c * x, p, cap)
    gy = power(c * y, p, cap)
    if len(x) == 0:
        return float(gy.sum())
    cprime = power(np.abs(x[:, None] - y[None, :]), p, cap)
    cprime -= gx[:, None]
    cprime -= gy[None, :]
    np.minimum(cprime, 0.0, out=cprime)
    i, j = h0_matching(cprime)
    del cprime
    free_x = np.ones(len(x), bool)
    free_x[i] = False
    free_y = np.ones(len(y), bool)
    free_y[j] = False
    matched = power(np.abs(x[i] - y[j]), p, cap)
    return float(matched.sum() + gx[free_x].sum() + gy[free_y].sum())


def _windows(req: np.ndarray, pool: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``[lo, hi)`` of ``pool`` entries with ``fl(|r - pool|) <= t``, per ``r`` in ``req``.

    Both arrays sorted. Positions from ``searchsorted`` are verified at their
    boundaries with the exact comparison; rows that fail (values within a few
    ulps of a boundary) are recomputed densely. Empty windows have ``lo == hi``.
    """
    m = len(pool)
    lo = np.searchsorted(pool, req - t, side="left")
    hi = np.searchsorted(pool, req + t, side="right")
    if len(req) == 0 or m == 0:
        return lo, lo.copy()
    padded = np.concatenate([[-np.inf], pool, [np.inf]])  # positions -1 and m never qualify

    def ok(idx):
        return np.abs(req - padded[idx + 1]) <= t

    ok_lo, ok_hi1 = ok(lo), ok(hi - 1)
    nonempty = lo < hi
    bad = ok(lo - 1) | ok(hi)
    bad |= np.where(nonempty, ~(ok_lo & ok_hi1), ok_lo | ok_hi1)
    hi = np.where(nonempty, hi, lo)
    if bad.any():
        rows = np.flatnonzero(bad)
        dense = np.abs(req[rows, None] - pool[None, :]) <= t
        cnt = dense.sum(axis=1)
        lo[rows] = np.where(cnt > 0, dense.argmax(axis=1), 0)
        hi[rows] = lo[rows] + cnt
    return lo, hi


def _hall(lo: np.ndarray, hi: np.ndarray) -> bool:
    """Hall's condition for sorted points with windows [lo, hi) of increasing ends."""
    if len(lo) == 0:
        return True
    if (hi <= lo).any():
        return False
    k = np.arange(len(lo))
    return bool(np.all(hi - k - 1 >= np.maximum.accumulate(lo - k)))


def _pair_values(x: np.ndarray, y: np.ndarray, a: float, b: float) -> np.ndarray:
    """All ``fl(|x_i - y_j|)`` in ``(a, b]``: window at ``b`` minus window at ``a``."""
    lb, hb = _windows(x, y, b)
    if a >= 0:
        la, ha = _windows(x, y, a)
        empty = la >= ha
        la = np.where(empty, hb, la)  # window at a empty: take all of [lb, hb)
        ha = np.where(empty, hb, ha)
    else:
        la = ha = hb
    starts = np.concatenate([lb, ha])
    stops = np.concatenate([la, hb])
    rows = np.concatenate([np.arange(len(x)), np.arange(len(x))])
    lengths = np.maximum(stops - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0)
    rep = np.repeat(rows, lengths)
    offs = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    cols = np.repeat(starts, lengths) + offs
    vals = np.abs(x[rep] - y[cols])
    return vals[(vals > a) & (vals <= b)]
