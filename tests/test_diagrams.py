"""Tests of topolip.topology (points, diagram, rips, batch): Rips diagrams through ripser,
conventions, input checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from topolip.topology.diagram import FILTRATION, Diagram, RipsDiagrams, check_diagram
from topolip.topology.rips import rips_diagrams


def circle(n: int) -> np.ndarray:
    t = 2 * np.pi * np.arange(n) / n
    return np.c_[np.cos(t), np.sin(t)]


# ----------------------------------------------------------------------------- known answers


def test_circle_100_points_single_h1_point_dying_at_1_7526():
    res = rips_diagrams(circle(100))
    h1 = res[1]
    assert h1.finite.shape == (1, 2)
    assert len(h1.essential) == 0
    birth, death = h1.finite[0]
    # ripser's diameter convention: the loop is born with the 100-gon's edges and dies
    # with the first triangle around the centre, whose longest side spans 34 of 100 steps.
    assert birth == pytest.approx(2 * math.sin(math.pi / 100), rel=1e-12)
    assert death == pytest.approx(2 * math.sin(34 * math.pi / 100), rel=1e-12)
    assert death == pytest.approx(1.7526, abs=5e-5)


def test_circle_h0_has_one_essential_class_and_chord_deaths():
    res = rips_diagrams(circle(100))
    h0 = res[0]
    np.testing.assert_array_equal(h0.essential, [0.0])
    assert h0.finite.shape == (99, 2)
    np.testing.assert_array_equal(h0.finite[:, 0], 0.0)
    np.testing.assert_allclose(h0.finite[:, 1], 2 * math.sin(math.pi / 100), rtol=1e-12)


def test_values_are_exact_float64_pairwise_distances_not_float32():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3)) * 1e3 + 1e4
    res = rips_diagrams(X)
    table = set(pdist(X).tolist()) | {0.0}
    values = np.concatenate([res[0].finite.ravel(), res[1].finite.ravel()])
    assert len(values) > 40
    assert all(v in table for v in values.tolist())
    # and they agree with ripser's float32 output to float32 precision
    import ripser

    ref = ripser.ripser(X, maxdim=1)["dgms"]
    ref0 = np.sort(ref[0][np.isfinite(ref[0][:, 1]), 1])
    np.testing.assert_allclose(np.sort(res[0].finite[:, 1]), ref0, rtol=2e-7)
    ref1 = ref[1][np.lexsort((ref[1][:, 1], ref[1][:, 0]))]
    np.testing.assert_allclose(res[1].finite, ref1, rtol=2e-7)


def test_exactly_one_essential_h0_class_and_no_essential_h1():
    X = np.random.default_rng(0).normal(size=(60, 4))
    res = rips_diagrams(X, degrees=(0, 1, 2))
    assert res.degrees == (0, 1, 2)
    assert len(res[0].essential) == 1
    assert len(res[1].essential) == 0
    assert len(res[2].essential) == 0
    assert res[0].finite.shape == (59, 2)
    assert res.filtration == FILTRATION
    assert "diameter" in res.filtration and "ripser" in res.filtration


def test_two_points_give_empty_h1_without_error():
    res = rips_diagrams([[0.0, 0.0], [3.0, 4.0]], degrees=(0, 1, 2))
    np.testing.assert_array_equal(res[0].array, [[0.0, 5.0], [0.0, np.inf]])
    assert res[1].finite.shape == (0, 2) and res[1].essential.shape == (0,)
    assert len(res[2]) == 0


def test_duplicate_points_are_valid():
    res = rips_diagrams(np.zeros((5, 3)))
    np.testing.assert_array_equal(res[0].array, [[0.0, np.inf]])
    assert len(res[1]) == 0
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    res = rips_diagrams(X)
    np.testing.assert_array_equal(res[0].array, [[0.0, 1.0], [0.0, np.inf]])
    dup = rips_diagrams(np.vstack([circle(12), circle(12)]))
    single = rips_diagrams(circle(12))
    np.testing.assert_array_equal(dup[1].finite, single[1].finite)


def test_degree_only_one():
    res = rips_diagrams(circle(12), degrees=(1,))
    assert res.degrees == (1,)
    assert res[1].finite.shape == (1, 2)
    with pytest.raises(KeyError, match="degree 0 was not computed"):
        res[0]


def test_wide_cloud_warning_is_silenced_but_other_warnings_are_not(monkeypatch):
    X = np.random.default_rng(1).normal(size=(6, 50))  # more columns than rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = rips_diagrams(X)
    assert len(res[0].essential) == 1

    import ripser

    real = ripser.ripser

    def noisy(*args, **kwargs):
        warnings.warn(
            "The input point cloud has more columns than rows; did you mean to transpose?",
            stacklevel=2,
        )
        warnings.warn("some other ripser warning", stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(ripser, "ripser", noisy)
    with pytest.warns(UserWarning, match="some other ripser warning") as record:
        rips_diagrams(X)
    assert not any("more columns than rows" in str(w.message) for w in record)


def test_small_clouds_never_reach_ripser_with_two_points(monkeypatch):
    import ripser

    def boom(*_args, **_kwargs):
        raise AssertionError("ripser must not be called for 2 points")

    monkeypatch.setattr(ripser, "ripser", boom)
    res = rips_diagrams(np.array([[0.0], [2.0]]), degrees=(0, 1))
    np.testing.assert_array_equal(res[0].finite, [[0.0, 2.0]])


# ----------------------------------------------------------------------------- subsampling


def test_subsampling_reports_covering_radius_and_indices():
    rng = np.random.default_rng(5)
    X = np.r_[circle(200) + 0.05 * rng.normal(size=(200, 2))]
    res = rips_diagrams(X, n_perm=40)
    assert res.subsampled
    assert res.n_points == 200
    assert res.idx_perm.shape == (40,)
    assert len(set(res.idx_perm.tolist())) == 40
    assert res.idx_perm[0] == 0
    # covering radius: the largest distance from a point to the kept subset
    d = np.linalg.norm(X[:, None, :] - X[None, res.idx_perm, :], axis=2).min(axis=1)
    assert res.r_cover == pytest.approx(d.max(), rel=1e-12)
    assert res.r_cover > 0
    assert len(res[0]) == 40


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_subsample_diagrams_within_twice_the_covering_radius(seed):
    from topolip.topology.distances import bottleneck

    X = np.random.default_rng(seed).normal(size=(150, 3))
    full = rips_diagrams(X)
    sub = rips_diagrams(X, n_perm=50)
    for k in (0, 1):
        assert bottleneck(full[k], sub[k]) <= 2 * sub.r_cover + 1e-12


def test_greedy_permutation_is_ripsers():
    import ripser

    X = np.random.default_rng(8).normal(size=(120, 6))
    ours = rips_diagrams(X, n_perm=30)
    theirs = ripser.ripser(X, maxdim=1, n_perm=30)
    np.testing.assert_array_equal(ours.idx_perm, theirs["idx_perm"])
    assert ours.r_cover == pytest.approx(theirs["r_cover"], rel=1e-6)
    np.testing.assert_allclose(
        ours[1].finite, theirs["dgms"][1][np.lexsort(theirs["dgms"][1].T[::-1])], rtol=2e-7
    )


def test_n_perm_at_least_m_keeps_every_point():
    X = circle(10)
    res = rips_diagrams(X, n_perm=10)
    assert res.r_cover == 0.0 and res.idx_perm is None and not res.subsampled
    np.testing.assert_array_equal(res[1].finite, rips_diagrams(X)[1].finite)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("points", "match"),
    [
        ([[0.0, np.nan], [1.0, 2.0]], r"points: expected finite coordinates, got NaN in row 0"),
        ([[0.0, 1.0], [np.inf, 2.0]], r"points: expected finite coordinates, got inf in row 1"),
        ([[0.0, 1.0]], r"points: expected at least 2 points"),
        (np.zeros((0, 3)), r"points: expected at least 2 points"),
        ([0.0, 1.0, 2.0], r"points: expected a 2-d array .* got 1-d"),
        (np.zeros((4, 2, 2)), r"points: expected a 2-d array .* got 3-d.*reshape"),
        ([["a", "b"], ["c", "d"]], r"points: expected a numeric array"),
        (np.zeros((3, 0)), r"points: expected at least 1 coordinate"),
    ],
)
def test_bad_points_raise_with_clear_message(points, match):
    with pytest.raises(ValueError, match=match):
        rips_diagrams(points)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"degrees": ()}, r"degrees: expected at least one degree"),
        ({"degrees": (0, -1)}, r"degrees: expected non-negative ints"),
        ({"degrees": (0, 0)}, r"degrees: expected distinct degrees"),
        ({"degrees": (0.5,)}, r"degrees: expected non-negative ints"),
        ({"degrees": None}, r"degrees: expected a sequence"),
        ({"n_perm": 1}, r"n_perm: expected None or an int >= 2, got 1"),
        ({"n_perm": 2.5}, r"n_perm: expected None or an int >= 2"),
        ({"n_perm": True}, r"n_perm: expected None or an int >= 2"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rips_diagrams(circle(8), **kwargs)


def test_int_degree_is_accepted():
    assert rips_diagrams(circle(8), degrees=1).degrees == (1,)


# ----------------------------------------------------------------------------- check_diagram


@pytest.mark.parametrize("empty", [[], np.zeros((0,)), np.zeros((0, 2)), ()])
def test_check_diagram_empty(empty):
    out = check_diagram(empty)
    assert out.shape == (0, 2) and out.dtype == np.float64


def test_check_diagram_returns_float64_copy():
    src = np.array([[0, 1], [2, 5]], dtype=np.int32)
    out = check_diagram(src)
    assert out.dtype == np.float64
    out[0, 0] = 9
    assert src[0, 0] == 0
    np.testing.assert_array_equal(check_diagram([[0.0, np.inf]]), [[0.0, np.inf]])
    dgm = Diagram.from_array([[0, 1], [0, np.inf]], degree=0)
    np.testing.assert_array_equal(check_diagram(dgm), dgm.array)


@pytest.mark.parametrize(
    ("dgm", "match"),
    [
        ([[0.0, np.nan]], r"dgm_a: expected no NaN, got NaN in row 0"),
        ([[1.0, 0.5]], r"dgm_a: expected death >= birth in every row, got row 0 = \(1.0, 0.5\)"),
        ([[0.0, -np.inf]], r"dgm_a: expected deaths in \[birth, \+inf\]"),
        ([[-np.inf, 1.0]], r"dgm_a: expected finite births"),
        ([[np.inf, np.inf]], r"dgm_a: expected finite births"),
        ([0.0, 1.0], r"dgm_a: expected an array of shape \(n, 2\) .* got shape \(2,\)"),
        ([[0.0, 1.0, 2.0]], r"dgm_a: expected an array of shape \(n, 2\) .* got shape \(1, 3\)"),
        (np.zeros((2, 2, 2)), r"dgm_a: expected an array of shape \(n, 2\)"),
        ([["x", "y"]], r"dgm_a: expected a numeric array"),
    ],
)
def test_check_diagram_errors_name_the_argument(dgm, match):
    with pytest.raises(ValueError, match=match):
        check_diagram(dgm, name="dgm_a")


# ----------------------------------------------------------------------------- dataclasses


def test_diagram_is_frozen_and_read_only():
    dgm = Diagram.from_array([[0.0, 1.0], [0.2, 0.3], [0.0, np.inf]], degree=0)
    assert dgm.finite.shape == (2, 2) and dgm.essential.tolist() == [0.0]
    assert len(dgm) == 3
    assert "n_essential=1" in repr(dgm)
    with pytest.raises(ValueError, match="read-only"):
        dgm.finite[0, 0] = 5.0
    with pytest.raises(AttributeError):
        dgm.degree = 1  # type: ignore[misc]
    np.testing.assert_array_equal(dgm.array[-1], [0.0, np.inf])


def test_diagram_validation():
    with pytest.raises(ValueError, match="finite: expected only finite deaths"):
        Diagram(finite=np.array([[0.0, np.inf]]), essential=np.empty(0), degree=0)
    with pytest.raises(ValueError, match="essential: expected finite births"):
        Diagram(finite=np.empty((0, 2)), essential=np.array([np.inf]), degree=0)
    with pytest.raises(ValueError, match="degree: expected a non-negative int"):
        Diagram(finite=np.empty((0, 2)), essential=np.empty(0), degree=-1)


def test_rips_diagrams_as_dict_and_types():
    res = rips_diagrams(circle(12))
    assert isinstance(res, RipsDiagrams)
    d = res.as_dict()
    assert sorted(d) == [0, 1]
    np.testing.assert_array_equal(d[0], res[0].array)
    assert all(isinstance(g, Diagram) for g in res.diagrams)
    assert [g.degree for g in res.diagrams] == [0, 1]


@pytest.mark.parametrize(("m", "d", "block"), [(120, 30, 1), (120, 30, 7 * 30),
                                                (120, 30, 65_536), (40, 3000, 65_536),
                                                (200, 12_544, 65_536)])
def test_pair_distances_are_pdist_bit_for_bit(monkeypatch, m, d, block):
    """One pair per cdist call, a few, or all in one: each value is pdist's, bit for bit."""
    from scipy.spatial.distance import pdist, squareform

    from topolip.topology import _float

    rng = np.random.default_rng(m + d)
    X = rng.normal(size=(m, d)) * 10.0 ** rng.uniform(-3, 3, size=(m, 1))
    i = rng.integers(0, m - 1, 200)
    j = i + rng.integers(1, m - i)
    monkeypatch.setattr(_float, "PAIR_BLOCK_VALUES", block)
    assert np.array_equal(_float.pair_distances(X, i, j), squareform(pdist(X))[i, j])


# --- the GUDHI backend -------------------------------------------------------------------------


def _same(a, b):
    return all(np.array_equal(a[k].finite, b[k].finite)
               and np.array_equal(a[k].essential, b[k].essential) for k in a.degrees)


@pytest.mark.parametrize("m", [3, 4, 6, 12, 40])
def test_gudhi_backend_gives_the_same_diagrams_on_small_clouds(m):
    """Both backends' values are snapped to the same exact distances: on clouds without two
    distances inside one float32 rounding the diagrams are bit for bit equal, in every degree."""
    rng = np.random.default_rng(m)
    for trial in range(5):
        X = rng.normal(size=(m, 7)) * 10.0 ** rng.uniform(-3, 3)
        degrees = (0, 1, 2) if m <= 12 else (0, 1)
        a = rips_diagrams(X, degrees)
        b = rips_diagrams(X, degrees, backend="gudhi")
        assert _same(a, b), (m, trial)
    t = 2 * np.pi * np.arange(12) / 12
    circle = rips_diagrams(np.c_[np.cos(t), np.sin(t)], backend="gudhi")
    np.testing.assert_allclose(circle[1].finite, [[2 * np.sin(np.pi / 12), np.sqrt(3)]],
                               rtol=1e-14)
    # the 12 edges of the polygon are equal up to float64 rounding: ripser's float32 merges them
    # and may keep another one of them than GUDHI's float64 does
    ripser_circle = rips_diagrams(np.c_[np.cos(t), np.sin(t)])
    np.testing.assert_allclose(circle[1].finite, ripser_circle[1].finite, rtol=1e-14)


def test_gudhi_backend_is_float64_where_ripser_merges_distances():
    """On 100-point clouds a death can differ: ripser's float32 cannot tell two distances apart
    and its value is snapped to the nearer one; GUDHI computes in float64. Never by more than a
    float32 rounding, and GUDHI's value is the exact diameter of a simplex (a pdist value)."""
    from scipy.spatial.distance import pdist

    from topolip.topology.distances import bottleneck

    rng = np.random.default_rng(0)
    for _ in range(10):
        X = rng.normal(size=(100, int(rng.integers(1, 50))))
        a, b = rips_diagrams(X), rips_diagrams(X, backend="gudhi")
        table = set(pdist(X).tolist()) | {0.0}
        for k in (0, 1):
            assert a[k].finite.shape == b[k].finite.shape
            # points matched, not rows: births equal up to float32 rounding sort either way
            assert bottleneck(a[k].finite, b[k].finite) <= 2 ** -23 * np.abs(a[k].finite).max()
            assert set(b[k].finite.ravel().tolist()) <= table


def test_gudhi_backend_in_worker_processes_and_through_the_spec():
    from topolip.topology.metric import layer_diagrams
    from topolip.topology.rips import rips_diagrams_many
    from topolip.topology.spec import TopoLipSpec

    rng = np.random.default_rng(3)
    clouds = [rng.normal(size=(70, 5)) for _ in range(3)]
    one = rips_diagrams_many(clouds, backend="gudhi", n_jobs=1)
    two = rips_diagrams_many(clouds, backend="gudhi", n_jobs=2)
    assert all(_same(x, y) for x, y in zip(one, two, strict=True))
    spec = TopoLipSpec(backend="gudhi")
    assert spec.label == TopoLipSpec().label  # the number is the same quantity
    via_spec = layer_diagrams({f"l{i}": c for i, c in enumerate(clouds)}, spec, n_jobs=1)
    assert all(_same(x, via_spec[f"l{i}"]) for i, x in enumerate(one))


def test_unknown_or_missing_backend_is_named(monkeypatch):
    import sys

    from topolip.topology.rips import rips_diagrams_many
    from topolip.topology.spec import TopoLipSpec

    X = np.random.default_rng(0).normal(size=(5, 2))
    for bad in ("giotto", None, 1):
        with pytest.raises(ValueError, match=r"backend: expected one of \['ripser', 'gudhi'\]"):
            rips_diagrams(X, backend=bad)
    with pytest.raises(ValueError, match="backend"):
        rips_diagrams_many([X], backend="Ripser")
    with pytest.raises(ValueError, match="backend"):
        TopoLipSpec(backend="ripser.py")
    monkeypatch.setitem(sys.modules, "gudhi.sklearn.rips_persistence", None)
    with pytest.raises(ImportError, match="pip install gudhi"):
        rips_diagrams(X, backend="gudhi")
