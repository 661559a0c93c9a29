"""Tests of topolip.topology.distances against hand values, GUDHI, brute force and persim."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topolip.topology.diagram import Diagram
from topolip.topology.distances import (
    _assignment,
    _h0,
    _pot,
    bottleneck,
    diagram_distance,
    wasserstein,
)
from topolip.topology.rips import rips_diagrams

INF = math.inf


def random_diagram(rng, n, *, h0=False, n_ess=0, ties=False):
    births = np.zeros(n) if h0 else rng.uniform(0, 2, n)
    pers = rng.exponential(0.5, n)
    if ties:
        births = np.round(births, 1)
        pers = np.round(pers, 1)
    dgm = np.c_[births, births + pers]
    ess = np.c_[rng.uniform(0, 1, n_ess) * (not h0), np.full(n_ess, INF)]
    return np.vstack([dgm, ess])


def brute_force(a, b, p, q):
    """W_{p,q} by enumerating bijections of the diagonal-augmented sets (tiny inputs)."""
    a = np.asarray(a, float).reshape(-1, 2)
    b = np.asarray(b, float).reshape(-1, 2)
    c = 0.5 if q == INF else 2 ** (1 / q) / 2
    n, m = len(a), len(b)
    N = n + m
    if N == 0:
        return 0.0
    C = np.zeros((N, N))
    for i in range(N):
        for j in range(N):
            if i < n and j < m:
                C[i, j] = np.linalg.norm(a[i] - b[j], ord=q)
            elif i < n and j == m + i:
                C[i, j] = c * (a[i, 1] - a[i, 0])
            elif i < n:
                C[i, j] = INF
            elif j < m and i == n + j:
                C[i, j] = c * (b[j, 1] - b[j, 0])
            elif j < m:
                C[i, j] = INF
    best = INF
    for perm in itertools.permutations(range(N)):
        vals = C[np.arange(N), perm]
        if np.isinf(vals).any():
            continue
        v = vals.max() if p == INF else float(np.sum(vals**p)) ** (1 / p)
        best = min(best, v)
    return best


def threshold_bottleneck(a, b):
    """W_{inf,inf} without our code: essential births by sorted order, and the finite part as
    the smallest entry t of the diagonal-augmented cost matrix at which a perfect matching using
    only entries <= t exists (scipy's linear_sum_assignment on the 0/1 matrix [C > t])."""
    from scipy.optimize import linear_sum_assignment

    a = np.asarray(a, float).reshape(-1, 2)
    b = np.asarray(b, float).reshape(-1, 2)
    ea, eb = np.sort(a[np.isinf(a[:, 1]), 0]), np.sort(b[np.isinf(b[:, 1]), 0])
    if len(ea) != len(eb):
        return INF
    ess = float(np.abs(ea - eb).max(initial=0.0))
    a, b = a[np.isfinite(a[:, 1])], b[np.isfinite(b[:, 1])]
    n, m = len(a), len(b)
    C = np.full((n + m, n + m), INF)
    C[:n, :m] = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    C[np.arange(n), m + np.arange(n)] = 0.5 * (a[:, 1] - a[:, 0])
    C[n + np.arange(m), np.arange(m)] = 0.5 * (b[:, 1] - b[:, 0])
    C[n:, m:] = 0.0
    if n + m == 0:
        return ess
    cand = np.unique(C[np.isfinite(C)])
    lo, hi = 0, len(cand) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        bad = (C > cand[mid]).astype(float)
        r, k = linear_sum_assignment(bad)
        if bad[r, k].sum() == 0:
            hi = mid
        else:
            lo = mid + 1
    return max(ess, float(cand[lo]))


# ----------------------------------------------------------------------------- issue values


@pytest.mark.parametrize("p", [1.0, 2.0, INF])
@pytest.mark.parametrize("q", [1.0, 2.0, INF])
def test_different_essential_counts_are_infinitely_far(p, q):
    a = np.array([[0, INF], [0.1, 0.5]])
    b = np.array([[0, 1], [0.1, 0.5]])
    assert wasserstein(a, b, p=p, q=q) == INF
    assert wasserstein(b, a, p=p, q=q) == INF
    assert bottleneck(a, b, q=q) == INF
    assert wasserstein(a, [], p=p, q=q) == INF


def test_persim_silently_drops_infinite_points_we_do_not():
    """Regression: persim answers a finite number for diagrams infinitely apart."""
    persim = pytest.importorskip("persim")
    a = np.array([[0, INF], [0.1, 0.5]])
    b = np.array([[0, 1], [0.1, 0.5]])
    with pytest.warns(UserWarning, match="non-finite death"):
        theirs = persim.wasserstein(a, b)
    assert math.isfinite(theirs)  # persim: essential class dropped, finite answer
    assert wasserstein(a, b, q=2) == INF  # ours: the policy of the method page (book/method.md)
    with pytest.warns(UserWarning, match="non-finite death"):
        assert math.isfinite(persim.bottleneck(a, b))
    assert bottleneck(a, b) == INF


@pytest.mark.parametrize("p", [1.0, 2.0, 3.5, INF])
@pytest.mark.parametrize("q", [1.0, 2.0, INF])
def test_self_distance_is_exactly_zero(p, q):
    rng = np.random.default_rng(7)
    for h0 in (False, True):
        a = random_diagram(rng, 30, h0=h0, n_ess=1 if h0 else 2)
        perm = rng.permutation(len(a))
        assert wasserstein(a, a[perm], p=p, q=q) == 0.0
        methods = ["auto", "assignment"] + (["pot"] if p != INF else []) + (["h0"] if h0 else [])
        for method in methods:
            assert wasserstein(a, a, p=p, q=q, method=method) == 0.0


def test_empty_against_one_point_is_2_17165():
    assert wasserstein([], [[0.1137, 4.457]], p=1.0, q=INF) == pytest.approx(2.17165, rel=1e-14)
    assert wasserstein(np.empty((0, 2)), np.array([[0.1137, 4.457]])) == pytest.approx(2.17165)
    assert bottleneck([], [[0.1137, 4.457]]) == pytest.approx(2.17165, rel=1e-14)


def test_both_empty_is_zero():
    for p in (1.0, 2.0, INF):
        assert wasserstein([], np.zeros((0, 2)), p=p) == 0.0
    assert bottleneck([], []) == 0.0


# ----------------------------------------------------------------------------- hand computed


def test_pythagorean_triple_ground_metrics():
    a = [[0.0, 10.0]]
    b = [[3.0, 14.0]]  # offset (3, 4): l_1 = 7, l_2 = 5, l_inf = 4; diagonal is farther
    assert wasserstein(a, b, q=2.0) == 5.0
    assert wasserstein(a, b, q=1.0) == 7.0
    assert wasserstein(a, b, q=INF) == 4.0
    assert bottleneck(a, b, q=2.0) == 5.0


def test_two_pythagorean_pairs_order_two():
    a = [[0.0, 10.0], [20.0, 40.0]]
    b = [[3.0, 14.0], [25.0, 52.0]]  # offsets (3, 4) and (5, 12)
    assert wasserstein(a, b, p=2.0, q=2.0) == pytest.approx(math.sqrt(25 + 169), rel=1e-15)
    assert wasserstein(a, b, p=1.0, q=2.0) == pytest.approx(18.0, rel=1e-15)
    assert wasserstein(a, b, p=INF, q=2.0) == 13.0


def test_diagonal_is_cheaper_than_a_far_partner():
    # (0, 1) and (10, 11): matching costs 10, both to the diagonal 0.5 + 0.5 (l_inf)
    assert wasserstein([[0, 1]], [[10, 11]]) == 1.0
    assert wasserstein([[0, 1]], [[10, 11]], q=2.0) == pytest.approx(math.sqrt(2))
    assert wasserstein([[0, 1]], [[10, 11]], q=1.0) == 2.0
    assert bottleneck([[0, 1]], [[10, 11]]) == 0.5


def test_essential_points_matched_by_sorted_birth():
    a = [[0.0, INF], [1.0, INF], [0.0, 0.4]]
    b = [[3.0, INF], [0.5, INF]]
    assert wasserstein(a, b, p=1.0) == pytest.approx(0.5 + 2.0 + 0.2)
    assert wasserstein(a, b, p=2.0) == pytest.approx(math.sqrt(0.25 + 4.0 + 0.04))
    assert bottleneck(a, b) == 2.0


def test_points_on_the_diagonal_change_nothing():
    rng = np.random.default_rng(1)
    a, b = random_diagram(rng, 8), random_diagram(rng, 5)
    a_diag = np.vstack([a, [[0.3, 0.3], [2.0, 2.0]]])
    for p in (1.0, 2.0, INF):
        assert wasserstein(a_diag, b, p=p) == pytest.approx(wasserstein(a, b, p=p), rel=1e-15)


def test_one_sided_sums_diagonal_costs():
    a = [[0.0, 2.0], [1.0, 5.0]]
    assert wasserstein(a, [], p=1.0) == pytest.approx(1.0 + 2.0)
    assert wasserstein([], a, p=2.0, q=2.0) == pytest.approx(math.sqrt(2.0 + 8.0))
    assert wasserstein(a, [], p=1.0, q=1.0) == pytest.approx(2.0 + 4.0)


def test_large_order_does_not_overflow_and_scales():
    assert wasserstein([[0.0, 1e3]], [], p=200.0) == pytest.approx(500.0, rel=1e-12)
    rng = np.random.default_rng(2)
    a, b = random_diagram(rng, 10), random_diagram(rng, 12)
    w = wasserstein(a, b, p=2.0, q=2.0)
    assert w > 0
    assert wasserstein(a * 1e-30, b * 1e-30, p=2.0, q=2.0) == pytest.approx(w * 1e-30, rel=1e-12)
    assert wasserstein(a * 1e30, b * 1e30, p=7.0) == pytest.approx(
        wasserstein(a, b, p=7.0) * 1e30, rel=1e-12
    )


def test_diagram_objects_and_return_type():
    res_a = rips_diagrams(np.random.default_rng(0).normal(size=(30, 3)))
    res_b = rips_diagrams(np.random.default_rng(1).normal(size=(25, 3)))
    for k in (0, 1):
        w_obj = wasserstein(res_a[k], res_b[k], p=2.0)
        w_arr = wasserstein(res_a[k].array, res_b[k].array, p=2.0)
        assert type(w_obj) is float and w_obj == w_arr and w_obj > 0
    with pytest.raises(ValueError, match="same homological degree, got degree 0 and degree 1"):
        wasserstein(res_a[0], res_b[1])
    with pytest.raises(ValueError, match="expected one diagram, got a RipsDiagrams"):
        wasserstein(res_a, res_b)


# ----------------------------------------------------------------------------- oracles


def _pairs(seed, count):
    rng = np.random.default_rng(seed)
    for t in range(count):
        n, m = rng.integers(0, 25, size=2)
        h0 = t % 4 == 0
        ess = int(rng.integers(0, 3)) if not h0 else int(n > 0)
        yield (
            random_diagram(rng, n, h0=h0, n_ess=ess, ties=t % 5 == 0),
            random_diagram(rng, m, h0=h0, n_ess=ess if m > 0 or not h0 else 0, ties=t % 5 == 0),
        )


@pytest.mark.parametrize("p", [1.0, 2.0])
@pytest.mark.parametrize("q", [2.0, INF])
def test_wasserstein_matches_gudhi_on_random_pairs(p, q):
    gw = pytest.importorskip("gudhi.wasserstein")
    checked = 0
    for a, b in _pairs(seed=int(p * 10 + (q == INF)), count=150):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # GUDHI warns when the distance is inf
            ref = gw.wasserstein_distance(a, b, order=p, internal_p=q)
        ours = wasserstein(a, b, p=p, q=q)
        if ref == INF:
            assert ours == INF
            continue
        assert ours == pytest.approx(ref, rel=1e-8, abs=1e-12)
        checked += 1
    assert checked > 100


def test_bottleneck_matches_gudhi_exact_on_random_pairs():
    gudhi = pytest.importorskip("gudhi")
    checked = 0
    for a, b in _pairs(seed=11, count=300):
        ref = gudhi.bottleneck_distance(a, b, e=0)  # e=0: GUDHI's exact algorithm
        ours = wasserstein(a, b, p=INF, q=INF)
        assert ours == pytest.approx(threshold_bottleneck(a, b), rel=1e-12, abs=1e-15)
        if ref == INF:
            assert ours == INF
            continue
        assert ours == pytest.approx(ref, rel=1e-8, abs=1e-12)
        checked += 1
    assert checked > 200


def test_agrees_with_hera_near_exact_wasserstein():
    hera = pytest.importorskip("gudhi.hera")
    rng = np.random.default_rng(4)
    for _ in range(40):
        a, b = random_diagram(rng, 12, n_ess=1), random_diagram(rng, 9, n_ess=1)
        for p, q in [(1.0, INF), (2.0, 2.0)]:
            ref = hera.wasserstein_distance(a, b, order=p, internal_p=q, delta=1e-10)
            assert wasserstein(a, b, p=p, q=q) == pytest.approx(ref, rel=1e-8)
        assert bottleneck(a, b) == pytest.approx(hera.bottleneck_distance(a, b, delta=0), rel=1e-12)


def test_brute_force_oracle_all_ground_metrics():
    rng = np.random.default_rng(9)
    for t in range(60):
        n, m = rng.integers(0, 4, size=2)
        a, b = random_diagram(rng, n, ties=t % 3 == 0), random_diagram(rng, m, h0=t % 2 == 0)
        for p in (1.0, 2.0, INF):
            for q in (1.0, 2.0, INF):
                ref = brute_force(a, b, p, q)
                assert wasserstein(a, b, p=p, q=q) == pytest.approx(ref, rel=1e-12, abs=1e-14)
                if p != INF:
                    assert wasserstein(a, b, p=p, q=q, method="pot") == pytest.approx(
                        ref, rel=1e-12, abs=1e-14
                    )


def test_persim_is_an_oracle_for_finite_euclidean_order_one():
    persim = pytest.importorskip("persim")
    rng = np.random.default_rng(6)
    for _ in range(30):
        a, b = random_diagram(rng, 15), random_diagram(rng, 11)
        assert wasserstein(a, b, p=1.0, q=2.0) == pytest.approx(persim.wasserstein(a, b), rel=1e-9)
        assert bottleneck(a, b) == pytest.approx(persim.bottleneck(a, b), rel=1e-12)


@pytest.mark.parametrize("method", ["assignment", "pot"])
def test_general_solvers_agree_on_sparse_and_dense_problems(method, monkeypatch):
    rng = np.random.default_rng(12)
    a, b = random_diagram(rng, 60), random_diagram(rng, 70)
    ref = wasserstein(a, b, p=1.5, q=2.0, method=method)
    monkeypatch.setattr(_assignment, "_SPARSE_DENSITY", -1.0)  # force the dense solver
    dense = wasserstein(a, b, p=1.5, q=2.0, method="assignment")
    monkeypatch.setattr(_assignment, "_SPARSE_DENSITY", 2.0)  # force the sparse solver
    sparse = wasserstein(a, b, p=1.5, q=2.0, method="assignment")
    assert dense == pytest.approx(ref, rel=1e-12) and sparse == pytest.approx(ref, rel=1e-12)


# ----------------------------------------------------------------------------- H0 path


deaths = st.lists(
    st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]) | st.floats(0.01, 5.0),
    min_size=0,
    max_size=25,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=deaths,
    y=deaths,
    p=st.sampled_from([1.0, 1.5, 2.0, 3.0]),
    q=st.sampled_from([1.0, 2.0, INF]),
)
def test_h0_dynamic_program_equals_general_solver(x, y, p, q):
    a = np.c_[np.zeros(len(x)), x]
    b = np.c_[np.zeros(len(y)), y]
    dp = wasserstein(a, b, p=p, q=q, method="h0")
    general = wasserstein(a, b, p=p, q=q, method="assignment")
    assert dp == pytest.approx(general, rel=1e-12, abs=1e-15)
    assert wasserstein(a, b, p=p, q=q, method="pot") == pytest.approx(general, rel=1e-12, abs=1e-15)
    assert bottleneck(a, b, q=q, method="h0") == bottleneck(a, b, q=q, method="assignment")


def test_h0_path_is_used_automatically(monkeypatch):
    calls = []
    real = _h0.h0_matching

    def spy(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_h0, "h0_matching", spy)
    rng = np.random.default_rng(0)
    a, b = random_diagram(rng, 20, h0=True, n_ess=1), random_diagram(rng, 15, h0=True, n_ess=1)
    w_auto = wasserstein(a, b)
    assert len(calls) == 1
    assert wasserstein(a, b, method="assignment") == pytest.approx(w_auto, rel=1e-12)
    assert len(calls) == 1
    wasserstein(random_diagram(rng, 5), random_diagram(rng, 5))
    assert len(calls) == 1
    # births zero up to float rounding still count as degree 0
    a_noisy = a.copy()
    a_noisy[:, 0] = 1e-18
    assert wasserstein(a_noisy, b) == pytest.approx(w_auto, rel=1e-12)
    assert len(calls) == 2


def test_h0_real_diagrams_dp_equals_general():
    X = np.random.default_rng(3).normal(size=(120, 5))
    Y = np.random.default_rng(4).normal(size=(100, 5)) * 1.1
    a, b = rips_diagrams(X, degrees=(0,))[0], rips_diagrams(Y, degrees=(0,))[0]
    for p in (1.0, 2.0):
        assert wasserstein(a, b, p=p, method="h0") == pytest.approx(
            wasserstein(a, b, p=p, method="assignment"), rel=1e-12
        )
    assert bottleneck(a, b, method="h0") == bottleneck(a, b, method="assignment")


@settings(max_examples=150, deadline=None)
@given(
    req=st.lists(st.floats(0, 1e3) | st.sampled_from([0.1, 0.3, 1e3 / 3, 7.0]), max_size=12),
    pool=st.lists(st.floats(0, 1e3) | st.sampled_from([0.2, 0.3, 1e3 / 3 + 1e-13]), max_size=12),
    pick=st.integers(0, 10_000),
    nudge=st.sampled_from([-1, 0, 1]),
)
def test_h0_windows_are_exact_at_float_boundaries(req, pool, pick, nudge):
    """The searchsorted windows equal the dense fl(|r - y|) <= t test, t on a boundary."""
    r, y = np.sort(np.array(req, float)), np.sort(np.array(pool, float))
    diffs = np.abs(r[:, None] - y[None, :]).ravel()
    t = float(diffs[pick % len(diffs)]) if len(diffs) else 0.5
    t = float(np.nextafter(t, math.inf if nudge > 0 else -math.inf)) if nudge else t
    t = max(t, 0.0)
    lo, hi = _h0._windows(r, y, t)
    dense = np.abs(r[:, None] - y[None, :]) <= t
    assert (hi - lo).tolist() == dense.sum(axis=1).tolist()
    for k in range(len(r)):
        if hi[k] > lo[k]:
            assert dense[k, lo[k] : hi[k]].all()


def test_h0_bottleneck_large_diagrams_equal_general():
    rng = np.random.default_rng(21)
    x = np.round(rng.exponential(1.0, 400), 3)  # many ties
    y = np.round(rng.exponential(1.2, 350), 3)
    a, b = np.c_[np.zeros_like(x), x], np.c_[np.zeros_like(y), y]
    for q in (1.0, 2.0, INF):
        assert bottleneck(a, b, q=q, method="h0") == bottleneck(a, b, q=q, method="assignment")


def test_h0_monotone_matching_helper():
    x = np.array([1.0, 2.0, 10.0])
    y = np.array([1.1, 9.0])
    g = 0.5
    cprime = np.minimum(np.abs(x[:, None] - y) - g * x[:, None] - g * y, 0)
    i, j = _h0.h0_matching(cprime)
    assert i.tolist() == [0, 2] and j.tolist() == [0, 1]


def test_h0_method_rejects_nonzero_births():
    with pytest.raises(ValueError, match="method: 'h0' needs every finite birth"):
        wasserstein([[0.5, 1.0]], [[0.0, 2.0]], method="h0")
    with pytest.raises(ValueError, match="method: 'h0' needs every finite birth"):
        bottleneck([[0.5, 1.0]], [[0.0, 2.0]], method="h0")


# ----------------------------------------------------------------------------- solver safety


def test_empty_and_one_sided_never_call_a_solver(monkeypatch):
    import ot
    import scipy.optimize
    import scipy.sparse.csgraph

    def boom(*_args, **_kwargs):
        raise AssertionError("a solver was called")

    monkeypatch.setattr(ot, "emd", boom)
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", boom)
    monkeypatch.setattr(scipy.sparse.csgraph, "min_weight_full_bipartite_matching", boom)
    monkeypatch.setattr(scipy.sparse.csgraph, "maximum_bipartite_matching", boom)
    one = [[0.0, 1.0], [0.5, 2.0], [0.0, INF]]
    for method in ("auto", "assignment", "pot"):
        assert wasserstein([], [], method=method) == 0.0
        assert wasserstein(one, [[0.0, INF]], method=method) == pytest.approx(0.5 + 0.75)
        assert wasserstein([[1.0, 1.0]], [[0.0, 2.0]], method=method) == 1.0
    assert bottleneck(one, [[0.0, INF]]) == 0.75
    assert bottleneck([[0.0, INF]], [[0.0, INF]]) == 0.0


def test_pot_non_convergence_is_an_error():
    rng = np.random.default_rng(0)
    a, b = random_diagram(rng, 40), random_diagram(rng, 40)
    with pytest.raises(RuntimeError, match="did not certify an optimal plan"):
        _pot.finite_pow_pot(a, b, 1.0, INF, num_iter_max=3)
    assert _pot.finite_pow_pot(a, b, 1.0, INF) == pytest.approx(
        wasserstein(a, b) ** 1.0, rel=1e-12
    )


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": 0.5}, r"p: expected the order p >= 1"),
        ({"p": float("nan")}, r"p: expected the order p >= 1"),
        ({"p": True}, r"p: expected the order p >= 1"),
        ({"p": "1"}, r"p: expected the order p >= 1"),
        ({"q": 3.0}, r"q: expected the ground metric l_q with q in \{1, 2, math.inf\}, got 3.0"),
        ({"q": 0.5}, r"q: expected the ground metric"),
        ({"method": "hera"}, r"method: expected one of"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        wasserstein([[0, 1]], [[0, 2]], **kwargs)


@pytest.mark.parametrize(
    ("a", "match"),
    [
        ([[0.0, np.nan]], r"a: expected no NaN"),
        ([[1.0, 0.0]], r"a: expected death >= birth"),
        ([[0.0, 1.0, 2.0]], r"a: expected an array of shape \(n, 2\)"),
        ([[-np.inf, 1.0]], r"a: expected finite births"),
        ([[0.0, -np.inf]], r"a: expected deaths in \[birth, \+inf\]"),
    ],
)
def test_bad_diagrams_raise_naming_the_argument(a, match):
    with pytest.raises(ValueError, match=match):
        wasserstein(a, [[0, 1]])
    with pytest.raises(ValueError, match=match):
        bottleneck(a, [[0, 1]])
    with pytest.raises(ValueError, match=match.replace("a:", "b:", 1)):
        wasserstein([[0, 1]], a)


def test_bottleneck_rejects_pot_and_bad_q():
    with pytest.raises(ValueError, match="method: 'pot' solves finite p only"):
        bottleneck([[0, 1]], [[0, 2]], method="pot")
    with pytest.raises(ValueError, match="q: expected the ground metric"):
        bottleneck([[0, 1]], [[0, 2]], q=4)


# ----------------------------------------------------------------------------- several degrees


def test_diagram_distance_combines_degrees():
    a = {0: [[0, 1], [0, INF]], 1: [[0.5, 0.9]]}
    b = {0: [[0, 2], [0, INF]], 1: []}
    w0, w1 = wasserstein(a[0], b[0], p=2.0), wasserstein(a[1], b[1], p=2.0)
    assert diagram_distance(a, b, p=2.0) == pytest.approx(math.hypot(w0, w1), rel=1e-15)
    assert diagram_distance(a, b) == pytest.approx(1.0 + 0.2)
    assert diagram_distance(a, b, p=INF) == 1.0
    assert diagram_distance(a, b, degrees=(1,)) == pytest.approx(0.2)
    assert diagram_distance([a[0], a[1]], [b[0], b[1]]) == pytest.approx(1.2)


def test_diagram_distance_on_rips_results_and_inf():
    ra = rips_diagrams(np.random.default_rng(0).normal(size=(20, 2)))
    rb = rips_diagrams(np.random.default_rng(1).normal(size=(20, 2)))
    parts = [wasserstein(ra[k], rb[k]) for k in (0, 1)]
    assert diagram_distance(ra, rb) == pytest.approx(sum(parts), rel=1e-14)
    assert diagram_distance(ra, rb, p=INF) == max(bottleneck(ra[k], rb[k]) for k in (0, 1))
    assert diagram_distance(ra, ra) == 0.0
    b_no_ess = {0: ra[0].finite, 1: ra[1].array}
    assert diagram_distance(ra, b_no_ess) == INF


def test_diagram_distance_errors():
    a = {0: [[0, 1]], 1: []}
    with pytest.raises(
        ValueError, match=r"degrees: dgms_a has degrees \[0, 1\] and dgms_b has \[0\]"
    ):
        diagram_distance(a, {0: [[0, 1]]})
    with pytest.raises(ValueError, match=r"degree\(s\) \[2\] missing"):
        diagram_distance(a, a, degrees=(0, 2))
    with pytest.raises(ValueError, match="expected at least one degree"):
        diagram_distance(a, a, degrees=())
    with pytest.raises(ValueError, match="dgms_a: expected a RipsDiagrams"):
        diagram_distance(3.0, a)
    with pytest.raises(ValueError, match="expected non-negative int degrees"):
        diagram_distance({-1: []}, {-1: []})


# ----------------------------------------------------------------------------- stability


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), eps=st.floats(1e-4, 0.3))
def test_certified_envelope_bottleneck_at_most_twice_the_perturbation(seed, eps):
    """W_{inf,inf}(Dgm X, Dgm X~) <= 2 max_i |x_i - x~_i| (method page, certified envelope)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(25, 3))
    noise = rng.normal(size=X.shape)
    noise *= eps / np.linalg.norm(noise, axis=1).max()
    Xt = X + noise
    shift = np.linalg.norm(X - Xt, axis=1).max()
    da, db = rips_diagrams(X), rips_diagrams(Xt)
    for k in (0, 1):
        assert bottleneck(da[k], db[k]) <= 2 * shift * (1 + 1e-12)


def test_diagram_class_inputs_with_different_essential_counts():
    a = Diagram.from_array([[0, INF], [0.1, 0.5]], degree=0)
    b = Diagram.from_array([[0, 1], [0.1, 0.5]], degree=0)
    assert wasserstein(a, b) == INF and bottleneck(a, b) == INF
