r"""Exact diagram distances for degree-0 diagrams (all births 0), in O(n m).

Private helpers of :mod:`topolip.distances`; the public entry points are
:func:`topolip.distances.wasserstein` and :func:`topolip.distances.bottleneck`,
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

import numpy as np

__all__: list[str] = []


def h0_matching(x: np.ndarray, y: np.ndarray, cprime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal monotone partial matching for sorted ``x`` (n,), ``y`` (m,).

    ``cprime`` is the ``(n, m)`` array :math:`\\min(0, |x_i-y_j|^p - g(x_i) - g(y_j))`.
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


def h0_bottleneck_feasible(
    dist: np.ndarray, need_x: np.ndarray, need_y: np.ndarray, t: float
) -> bool:
    r"""Whether a matching of bottleneck cost ``<= t`` exists (sorted deaths).

    ``dist`` is the ``(n, m)`` array :math:`|x_i - y_j|` for increasing ``x``
    and ``y``; ``need_x`` / ``need_y`` flag the points whose diagonal cost
    exceeds ``t`` (they must be matched). By the Mendelsohn--Dulmage theorem a
    matching covering both flagged sets exists iff one covers the flagged
    ``x`` and one covers the flagged ``y``. Each point's admissible partners
    form a contiguous window of the sorted other side (rounding of
    :math:`|x - y|` is monotone), with window ends increasing along the sorted
    points, so Hall's condition needs checking on contiguous runs only:
    for runs :math:`k_1 \le k_2`, :math:`hi_{k_2} - lo_{k_1} \ge k_2 - k_1 + 1`.
    """
    return _covers(dist[need_x] <= t) and _covers((dist[:, need_y] <= t).T)


def _covers(ok: np.ndarray) -> bool:
    if ok.shape[0] == 0:
        return True
    cnt = ok.sum(axis=1)
    if (cnt == 0).any():
        return False
    lo = ok.argmax(axis=1)
    hi = lo + cnt
    k = np.arange(ok.shape[0])
    return bool(np.all(hi - k - 1 >= np.maximum.accumulate(lo - k)))
