r"""Exact distances between persistence diagrams: Wasserstein and bottleneck.

the method page (book/method.md) (the companion's formalization): :math:`W_{p,q}(D, D')`
is the ``p``-Wasserstein distance between diagrams with the :math:`\ell_q`
ground metric on the plane and free matching to the diagonal;
:math:`p = \infty` is the bottleneck distance. Defaults ``p = 1``,
``q = inf`` (GUDHI's defaults). Naming: the *order* ``p`` is GUDHI's
``order`` (called ``q`` in GUDHI's manual); the *ground metric* ``q`` is
GUDHI's ``internal_p``.

Policy, the same in every function here:

* essential points (death ``inf``) are matched among themselves, by birth;
  different counts give ``inf`` (never a large finite stand-in);
* finite points are matched to each other or to the diagonal;
* empty and one-sided inputs are answered before any solver is called;
* values are exact: an assignment solver (or POT's network simplex, checked
  for convergence) for finite ``p``, a threshold search with exact matching
  tests for ``p = inf``, and an exact dynamic program for degree-0 diagrams.

The module imports neither torch nor the rest of :mod:`topolip` (only
:mod:`topolip.diagrams`).

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention
   and Convolution Models Using a Novel Metric", arXiv:2410.17628.
.. [2] D. Cohen-Steiner, H. Edelsbrunner, J. Harer, "Stability of persistence
   diagrams", Discrete Comput. Geom. 37 (2007).
.. [3] M. Kerber, D. Morozov, A. Nigmetov, "Geometry helps to compare
   persistence diagrams", ACM J. Exp. Algorithmics 22 (2017) (Hera).
.. [4] GUDHI, "Wasserstein distance" and "Bottleneck distance" user manuals,
   https://gudhi.inria.fr/python/latest/ .
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from topolip import _h0
from topolip.diagrams import Diagram, RipsDiagrams, check_diagram

__all__ = ["bottleneck", "diagram_distance", "wasserstein"]

_METHODS = ("auto", "h0", "assignment", "pot")
_SPARSE_DENSITY = 0.3
# Above this order, W_p is computed relative to the bottleneck distance (no underflow of t**p).
_LARGE_P = 2.0  # above this share of useful pairs, the dense solver is faster


# --------------------------------------------------------------------------- input handling


def _check_p(p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p) or p < 1:
        raise ValueError(
            f"p: expected the order p >= 1 (a real number) or math.inf (bottleneck), got "
            f"{p!r}; W_p is a metric only for p >= 1"
        )
    return float(p)


def _check_q(q) -> float:
    if (
        isinstance(q, bool)
        or not isinstance(q, numbers.Real)
        or float(q) not in (1.0, 2.0, math.inf)
    ):
        raise ValueError(
            f"q: expected the ground metric l_q with q in {{1, 2, math.inf}}, got {q!r} "
            f"(GUDHI's internal_p); use q=math.inf for the default l_inf ground metric"
        )
    return float(q)


def _as_array(dgm, name: str) -> tuple[np.ndarray, int | None]:
    if isinstance(dgm, Diagram):
        return dgm.array, dgm.degree
    if isinstance(dgm, RipsDiagrams):
        raise ValueError(
            f"{name}: expected one diagram, got a RipsDiagrams with degrees {dgm.degrees}; "
            f"pass res[k] for one degree, or use diagram_distance for several"
        )
    return check_diagram(dgm, name=name), None


def _prepare(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate, split into finite off-diagonal points and sorted essential births."""
    A, ka = _as_array(a, "a")
    B, kb = _as_array(b, "b")
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(
            f"a, b: expected diagrams of the same homological degree, got degree {ka} and "
            f"degree {kb}; pass a.array / b.array to compare them anyway"
        )
    ea = np.sort(A[np.isinf(A[:, 1]), 0])
    eb = np.sort(B[np.isinf(B[:, 1]), 0])
    A = A[np.isfinite(A[:, 1]) & (A[:, 1] > A[:, 0])]
    B = B[np.isfinite(B[:, 1]) & (B[:, 1] > B[:, 0])]
    return A, B, ea, eb


def _scale(*arrays: np.ndarray) -> float:
    """A power of two near the largest finite magnitude (division by it is exact)."""
    mx = max((float(np.abs(x).max()) for x in arrays if x.size), default=0.0)
    if mx == 0.0 or not math.isfinite(mx):
        return 1.0
    return 2.0 ** math.floor(math.log2(mx))


def _diag_factor(q: float) -> float:
    # l_q distance of (b, d) to the diagonal: the nearest diagonal point is ((b+d)/2, (b+d)/2)
    # for every q >= 1 (symmetry and convexity), at distance 2**(1/q) * (d - b) / 2.
    return 0.5 if q == math.inf else 2.0 ** (1.0 / q) / 2.0


def _ground(A: np.ndarray, B: np.ndarray, q: float) -> np.ndarray:
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


def _power(x: np.ndarray, p: float, cap: float = math.inf) -> np.ndarray:
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


def _is_h0(A: np.ndarray, B: np.ndarray) -> bool:
    """All finite births 0 within float tolerance of the diagrams' scale."""
    vals = [x for x in (A, B) if x.size]
    if not vals:
        return True
    scale = max(float(np.abs(x).max()) for x in vals)
    tol = 64.0 * np.finfo(np.float64).eps * scale
    return all(float(np.abs(x[:, 0]).max()) <= tol for x in vals)


# --------------------------------------------------------------------------- finite p solvers


def _finite_pow_h0(A, B, p, q, cap: float = math.inf) -> float:
    """sum of p-th powers for degree-0 diagrams (births treated as 0), exact DP."""
    c = _diag_factor(q)
    x = np.sort(A[:, 1])
    y = np.sort(B[:, 1])
    if len(x) > len(y):  # loop over the shorter side
        x, y = y, x
    gx = _power(c * x, p, cap)
    gy = _power(c * y, p, cap)
    if len(x) == 0:
        return float(gy.sum())
    cprime = _power(np.abs(x[:, None] - y[None, :]), p, cap)
    cprime -= gx[:, None]
    cprime -= gy[None, :]
    np.minimum(cprime, 0.0, out=cprime)
    i, j = _h0.h0_matching(cprime)
    del cprime
    free_x = np.ones(len(x), bool)
    free_x[i] = False
    free_y = np.ones(len(y), bool)
    free_y[j] = False
    matched = _power(np.abs(x[i] - y[j]), p, cap)
    return float(matched.sum() + gx[free_x].sum() + gy[free_y].sum())


def _finite_pow_assignment(A, B, p, q, cap: float = math.inf) -> float:
    """sum of p-th powers, exact, via a rectangular assignment on the reduced costs.

    For partial matchings M, sum_M c + sum_unmatched g = sum g + sum_M (c - g_i - g_j);
    only pairs with c' = c - g_i - g_j < 0 can help, so W^p = sum g + min over full
    assignments of the smaller side of sum min(c', 0) (extend a partial matching by
    pairs of value 0; drop the pairs with c' >= 0 of an assignment).
    """
    c = _diag_factor(q)
    ga = _power(c * (A[:, 1] - A[:, 0]), p, cap)
    gb = _power(c * (B[:, 1] - B[:, 0]), p, cap)
    if len(A) == 0 or len(B) == 0:
        return float(ga.sum() + gb.sum())
    cost = _power(_ground(A, B, q), p, cap)
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


def _finite_pow_pot(A, B, p, q, num_iter_max: int | None = None,
                    cap: float = math.inf) -> float:
    """sum of p-th powers, exact, via POT's network simplex (ot.emd).

    Transport problem with one diagonal node per side: supplies (1,..,1, m),
    demands (1,..,1, n), costs [[c, g_a], [g_b, 0]]. Its vertex optima are
    integral, i.e. partial matchings. Any POT warning (iteration limit, non
    optimal result) is raised as RuntimeError.
    """
    import ot

    c = _diag_factor(q)
    ga = _power(c * (A[:, 1] - A[:, 0]), p, cap)
    gb = _power(c * (B[:, 1] - B[:, 0]), p, cap)
    n, m = len(A), len(B)
    if n == 0 or m == 0:
        return float(ga.sum() + gb.sum())
    M = np.zeros((n + 1, m + 1))
    M[:n, :m] = _power(_ground(A, B, q), p, cap)
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


def _finite_bottleneck(A, B, q, h0: bool) -> float:
    """Exact bottleneck of the finite parts: smallest feasible candidate threshold."""
    c = _diag_factor(q)
    if len(A) == 0 or len(B) == 0:
        pers = np.concatenate([A[:, 1] - A[:, 0], B[:, 1] - B[:, 0]])
        return float(c * pers.max(initial=0.0))
    if h0:
        return _h0.h0_bottleneck(np.sort(A[:, 1]), np.sort(B[:, 1]), c)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    ga = c * (A[:, 1] - A[:, 0])
    gb = c * (B[:, 1] - B[:, 0])
    cost = _ground(A, B, q)
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


def _essential_cost(ea: np.ndarray, eb: np.ndarray, p: float) -> float:
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


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise ValueError(f"method: expected one of {_METHODS}, got {method!r}")
    return method


# --------------------------------------------------------------------------- public API


def wasserstein(a, b, p: float = 1.0, q: float = math.inf, *, method: str = "auto") -> float:
    r"""Exact ``p``-Wasserstein distance :math:`W_{p,q}` between two diagrams.

    Order ``p``, ground metric :math:`\ell_q`. In GUDHI's terms
    (:func:`gudhi.wasserstein.wasserstein_distance`, :func:`gudhi.hera.wasserstein_distance`)
    ``order`` is the book's ``p`` and ``internal_p`` its ``q``.

    Parameters
    ----------
    a, b : array_like of shape (n, 2) and (m, 2), or Diagram
        ``(birth, death)`` rows in the filtration's units (activation units for
        Rips diagrams); deaths may be ``inf``. Empty diagrams are valid.
    p : float, default=1.0
        Order, ``p >= 1`` or ``math.inf`` (then this is :func:`bottleneck`).
    q : {1, 2, math.inf}, default=math.inf
        Ground metric :math:`\ell_q` on the plane.
    method : {"auto", "h0", "assignment", "pot"}, default="auto"
        Solver for the finite points, all exact. ``"auto"`` uses the degree-0
        dynamic program when every finite birth of both diagrams is 0 (up to
        :math:`64\,\varepsilon` times the diagrams' largest value), else
        ``"assignment"`` (an exact assignment on the reduced costs, by scipy's
        sparse ``min_weight_full_bipartite_matching`` or dense
        ``linear_sum_assignment``). ``"h0"`` forces the dynamic program (births must be 0),
        ``"assignment"`` and ``"pot"`` (POT's ``ot.emd``, convergence checked)
        force a general solver, for tests and benchmarks.

    Returns
    -------
    float
        :math:`W_{p,q}(a, b) \ge 0`, in the diagrams' units; ``inf`` when the
        numbers of essential points differ.

    Raises
    ------
    ValueError
        On a malformed diagram (see :func:`topolip.diagrams.check_diagram`),
        ``p < 1``, ``q`` not in ``{1, 2, inf}``, an unknown ``method``,
        ``method="h0"`` with non-zero births, or two :class:`Diagram` objects
        of different degrees.
    RuntimeError
        If ``method="pot"`` and POT does not certify optimality.

    Notes
    -----
    With :math:`\Delta` the diagonal, finite parts :math:`F, F'` and sorted
    essential births :math:`e_1 \le \dots \le e_k`, :math:`e'_1 \le \dots \le e'_k`,

    .. math::

        W_{p,q}(D, D')^p = \min_{\gamma} \sum_{x \in F \cup \Delta}
            \|x - \gamma(x)\|_q^p \;+\; \sum_{i=1}^{k} |e_i - e'_i|^p ,

    over bijections :math:`\gamma : F \cup \Delta \to F' \cup \Delta` (a point
    matched to the diagonal pays :math:`\|x - \pi_\Delta(x)\|_q =
    2^{1/q}(d - b)/2`). If the essential counts differ the distance is
    :math:`\infty`. Essential points are compared by birth only, whatever
    ``q``; sorted order is optimal for a convex cost on a line.

    The finite part is solved exactly: the partial matching problem equals
    :math:`\sum g + \min_\sigma \sum_i \min(0, c_{i\sigma(i)} - g_i - g'_{\sigma(i)})`
    over assignments :math:`\sigma` of the smaller side, with
    :math:`g = \|x - \pi_\Delta x\|_q^p` (extend a partial matching by pairs of
    value 0, or drop the pairs of value 0 from an assignment). It is solved on
    the rows and columns that have a negative entry, by scipy's LAPJVsp
    (``min_weight_full_bipartite_matching``, on the negative entries only)
    when few pairs are useful, else by ``linear_sum_assignment``; POT solves the equivalent
    transport problem with one diagonal node per side. The reported value is re-summed from
    the optimal matching's non-negative terms. For degree-0 diagrams (all births 0) the
    optimal matching is monotone in the deaths and an O(n m) dynamic program
    is exact; see :mod:`topolip._h0` for the proof. Time and memory are
    O(n m) for the cost matrix; the assignment solver is superlinear in the
    number of useful pairs (those with negative reduced cost).

    *Large orders* (``p > 2``). Costs are divided by the bottleneck distance
    :math:`t = W_{\infty,q} \le W_{p,q}` before the ``p``-th power, so the
    optimal sum of :math:`(c/t)^p` lies in :math:`[1, N]` (``N`` points): it
    neither underflows to 0 (``p = 1000`` or ``1e6`` still gives
    :math:`W_p \ge W_\infty`) nor overflows. Entries above :math:`2(N + 1)` are
    clipped to it; no optimal matching uses one (its sum is at most ``N``),
    so the optimum is unchanged.

    References
    ----------
    .. [1] B. Chen, arXiv:2410.17628 (TopoLip).
    .. [2] D. Cohen-Steiner, H. Edelsbrunner, J. Harer, J. Mileyko,
       "Lipschitz functions have L_p-stable persistence", Found. Comput.
       Math. 10 (2010).
    .. [3] GUDHI Wasserstein distance manual (``order``, ``internal_p``),
       https://gudhi.inria.fr/python/latest/wasserstein_distance_user.html
    .. [4] M. Kerber, D. Morozov, A. Nigmetov, "Geometry helps to compare
       persistence diagrams", ACM J. Exp. Algorithmics 22 (2017).

    Examples
    --------
    >>> wasserstein([], [[0.1137, 4.457]])  # (4.457 - 0.1137) / 2
    2.17165
    >>> wasserstein([[0, 3], [0, 10]], [[0, 7]], p=2.0)  # |10-7|^2 + (3/2)^2
    3.3541019662496847
    >>> wasserstein([[0, float("inf")]], [[0, 1]])
    inf
    """
    p = _check_p(p)
    q = _check_q(q)
    _check_method(method)
    if p == math.inf:
        return bottleneck(a, b, q=q, method="assignment" if method == "pot" else method)
    A, B, ea, eb = _prepare(a, b)
    if len(ea) != len(eb):
        return math.inf
    h0 = _is_h0(A, B)
    cap = math.inf
    if p > _LARGE_P:
        # Large orders: divide by the bottleneck distance t <= W_p, so that the optimal
        # matching's sum of (cost / t) ** p lies in [1, number of points] (no underflow to 0,
        # no overflow); costs above the cap can be in no optimal matching (see Notes).
        s = max(_essential_cost(ea, eb, math.inf),
                _finite_bottleneck(A, B, q, h0) if len(A) or len(B) else 0.0)
        if s == 0.0:
            return 0.0
        cap = 2.0 * (len(A) + len(B) + len(ea) + 1)
    else:
        s = _scale(A, B, ea, eb)  # exact rescaling: no overflow of cost ** p
    A, B, ea, eb = A / s, B / s, ea / s, eb / s
    if method == "h0" and not h0:
        raise ValueError(
            "method: 'h0' needs every finite birth of both diagrams to be 0 (degree-0 "
            "Rips diagrams); got non-zero births; use method='auto'"
        )
    total = _essential_cost(ea, eb, p)
    if len(A) == 0 and len(B) == 0:
        finite = 0.0
    elif method == "pot":
        finite = _finite_pow_pot(A, B, p, q, cap=cap)
    elif method == "h0" or (method == "auto" and h0):
        finite = _finite_pow_h0(A, B, p, q, cap)
    else:
        finite = _finite_pow_assignment(A, B, p, q, cap)
    total += finite
    return float(s * total ** (1.0 / p))


def bottleneck(a, b, q: float = math.inf, *, method: str = "auto") -> float:
    r"""Exact bottleneck distance :math:`W_{\infty,q}` between two diagrams.

    Ground metric :math:`\ell_q`; the default :math:`\ell_\infty` is the
    classical bottleneck distance of Cohen-Steiner, Edelsbrunner and Harer,
    the one of :func:`gudhi.bottleneck_distance` and :func:`gudhi.hera.bottleneck_distance`.

    Parameters
    ----------
    a, b : array_like of shape (n, 2) and (m, 2), or Diagram
        ``(birth, death)`` rows; deaths may be ``inf``; empty diagrams valid.
    q : {1, 2, math.inf}, default=math.inf
        Ground metric :math:`\ell_q` on the plane.
    method : {"auto", "h0", "assignment"}, default="auto"
        ``"auto"`` uses the degree-0 interval test when all births are 0,
        else the general matching test; ``"assignment"`` forces the general
        test, ``"h0"`` the interval test (births must be 0).

    Returns
    -------
    float
        :math:`W_{\infty,q}(a, b)`; ``inf`` when the numbers of essential
        points differ.

    Raises
    ------
    ValueError
        On a malformed diagram, ``q`` not in ``{1, 2, inf}``, an unknown
        ``method``, or ``method="h0"`` with non-zero births.

    Notes
    -----
    .. math::

        W_{\infty,q}(D, D') = \max\Bigl(\min_{\gamma} \max_{x \in F\cup\Delta}
            \|x - \gamma(x)\|_q,\; \max_i |e_i - e'_i|\Bigr).

    The value is one of the candidate costs (a pairwise distance, a distance
    to the diagonal, an essential birth gap). The smallest feasible candidate
    is found by binary search; a threshold :math:`t` is feasible iff the
    points farther than :math:`t` from the diagonal can all be matched within
    :math:`t`, tested exactly with Hopcroft--Karp maximum matchings
    (``scipy.sparse.csgraph.maximum_bipartite_matching``), once per side: by
    the Mendelsohn--Dulmage theorem a matching covering the required points of
    each side separately yields one covering both. For degree-0 diagrams
    Hall's condition on sorted windows replaces the matching. No
    approximation is involved (unlike Hera's default ``delta=0.01``).

    References
    ----------
    .. [1] D. Cohen-Steiner, H. Edelsbrunner, J. Harer, "Stability of
       persistence diagrams", Discrete Comput. Geom. 37 (2007).
    .. [2] M. Kerber, D. Morozov, A. Nigmetov, "Geometry helps to compare
       persistence diagrams", ACM J. Exp. Algorithmics 22 (2017).
    .. [3] B. Chen, arXiv:2410.17628 (TopoLip).

    Examples
    --------
    >>> bottleneck([[0, 1], [0, 4]], [[0, 1.5]])  # (0, 4) to the diagonal costs 2
    2.0
    >>> bottleneck([[0.0, 1.0], [0.0, float("inf")]], [[0.0, 1.0]])
    inf
    """
    q = _check_q(q)
    _check_method(method)
    if method == "pot":
        raise ValueError("method: 'pot' solves finite p only; use 'auto' or 'assignment'")
    A, B, ea, eb = _prepare(a, b)
    ess = _essential_cost(ea, eb, math.inf)
    if ess == math.inf:
        return math.inf
    h0 = _is_h0(A, B)
    if method == "h0" and not h0:
        raise ValueError(
            "method: 'h0' needs every finite birth of both diagrams to be 0; use method='auto'"
        )
    use_h0 = method == "h0" or (method == "auto" and h0)
    if len(A) == 0 and len(B) == 0:
        return float(ess)
    return float(max(ess, _finite_bottleneck(A, B, q, use_h0)))


def _per_degree(dgms, name: str) -> dict[int, object]:
    if isinstance(dgms, RipsDiagrams):
        return dict(zip(dgms.degrees, dgms.diagrams, strict=True))
    if isinstance(dgms, Mapping):
        out = {}
        for k, v in dgms.items():
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
                raise ValueError(f"{name}: expected non-negative int degrees as keys, got {k!r}")
            out[int(k)] = v
        return out
    if isinstance(dgms, Sequence) and not isinstance(dgms, str | bytes):
        return dict(enumerate(dgms))
    raise ValueError(
        f"{name}: expected a RipsDiagrams, a mapping degree -> diagram, or a list of diagrams "
        f"indexed by degree (ripser's 'dgms'), got {type(dgms).__name__}"
    )


def diagram_distance(
    dgms_a, dgms_b, p: float = 1.0, q: float = math.inf, degrees=None, *, method: str = "auto"
) -> float:
    r"""Distance between the diagrams of several degrees, combined as in book/method.md.

    Parameters
    ----------
    dgms_a, dgms_b : RipsDiagrams, mapping int -> diagram, or list of diagrams
        Diagrams per homological degree (a list is indexed by degree, like
        ripser's ``dgms``). Each diagram is an ``(n, 2)`` array or a
        :class:`~topolip.diagrams.Diagram`.
    p : float, default=1.0
        Order, ``p >= 1`` or ``math.inf``; GUDHI's ``order``.
    q : {1, 2, math.inf}, default=math.inf
        Ground metric :math:`\ell_q`; GUDHI's ``internal_p``.
    degrees : sequence of int or None, default=None
        Degrees to combine; ``None`` means every degree of ``dgms_a``, which
        must then be exactly the degrees of ``dgms_b``.
    method : str, default="auto"
        Passed to :func:`wasserstein`.

    Returns
    -------
    float
        :math:`\bigl(\sum_k W_{p,q}(D_k, D'_k)^p\bigr)^{1/p}`, or
        :math:`\max_k W_{\infty,q}(D_k, D'_k)` for ``p = inf``.

    Raises
    ------
    ValueError
        If a requested degree is missing on one side, the degree sets differ
        (``degrees=None``), no degree is selected, or any argument of
        :func:`wasserstein` is invalid.

    Notes
    -----
    The combination is the :math:`\ell_p` norm of the per-degree distances,
    which is the ``p``-Wasserstein distance between the disjoint unions of
    the diagrams when points may only be matched within a degree.

    References
    ----------
    .. [1] B. Chen, arXiv:2410.17628 (TopoLip); the method page (book/method.md).

    Examples
    --------
    >>> a = {0: [[0, 1], [0, float("inf")]], 1: [[0.5, 0.9]]}
    >>> b = {0: [[0, 2], [0, float("inf")]], 1: []}
    >>> diagram_distance(a, b)  # W_0 = 1, W_1 = 0.2
    1.2
    >>> diagram_distance(a, b, p=math.inf)
    1.0
    """
    p = _check_p(p)
    da = _per_degree(dgms_a, "dgms_a")
    db = _per_degree(dgms_b, "dgms_b")
    if degrees is None:
        if set(da) != set(db):
            raise ValueError(
                f"degrees: dgms_a has degrees {sorted(da)} and dgms_b has {sorted(db)}; "
                f"pass degrees=... to choose the common ones"
            )
        degs = sorted(da)
    else:
        if isinstance(degrees, numbers.Integral):
            degrees = (degrees,)
        degs = list(degrees)
        missing = [k for k in degs if k not in da or k not in db]
        if missing:
            raise ValueError(
                f"degrees: requested {degs}, but degree(s) {missing} missing in dgms_a "
                f"(has {sorted(da)}) or dgms_b (has {sorted(db)})"
            )
    if not degs:
        raise ValueError("degrees: expected at least one degree to combine, got none")
    parts = [wasserstein(da[k], db[k], p=p, q=q, method=method) for k in degs]
    if p == math.inf:
        return float(max(parts))
    if any(math.isinf(w) for w in parts):
        return math.inf
    s = max(parts)
    if s == 0.0:
        return 0.0
    return float(s * math.fsum((w / s) ** p for w in parts) ** (1.0 / p))
