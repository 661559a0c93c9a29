"""The TopoLip engine: one distance matrix per cloud, the same numbers as the stored ones.

The numbers are held by the expected outputs under ``tests/expect/`` (computed once from the
engine, compared here through the public functions; see ``tests/expect/regenerate.py`` for the
cases and how to regenerate them when a change of the numbers is intended).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from expect.regenerate import CASES, EXPECT, read_csv_text, to_text
from scipy.spatial.distance import pdist, squareform

from topolip.experiments import baselines
from topolip.nets.models.probes import collect_activations, forward_probes
from topolip.topology.metric import median_pairwise_distance
from topolip.topology.points import pairwise_distances
from topolip.topology.rips import default_jobs, rips_diagrams, rips_diagrams_many


def _clouds(seed: int, n: int = 12):
    """Random clouds: sizes, dimensions, scales and offsets far from the origin vary."""
    rng = np.random.default_rng(seed)
    for t in range(n):
        m, d = int(rng.integers(3, 70)), int(rng.integers(1, 400))
        x = rng.normal(size=(m, d)) * 10.0 ** rng.uniform(-6, 6)
        x += rng.normal(size=d) * np.abs(x).max() * 10.0 ** rng.uniform(-2, 2)
        if t % 4 == 0:
            x[1] = x[0]  # a duplicate row
        yield x


def test_pairwise_distances_match_pdist_to_1e12():
    for x in _clouds(0):
        D, P = pairwise_distances(x), squareform(pdist(x))
        assert D.dtype == np.float64 and D.shape == P.shape
        assert np.array_equal(D, D.T) and not np.diagonal(D).any() and (D >= 0).all()
        assert np.array_equal(D == 0, P == 0)  # duplicates exactly 0, nothing else
        rel = np.abs(D - P)[P > 0] / P[P > 0]
        assert rel.max() <= 1e-12, rel.max()


def test_pairwise_distances_of_near_coincident_points_are_refined():
    x = np.array([[1e3, 1e3, 0.0], [1e3 + 1e-7, 1e3, 0.0], [0.0, 0.0, 1.0]])
    D = pairwise_distances(x)
    assert D[0, 1] == pytest.approx(1e-7, rel=1e-8)  # the Gram formula alone loses it all
    far = pairwise_distances([[0.0], [1e-30], [1e20], [2e20]])  # centring would merge 0, 1e-30
    assert far[0, 1] == 1e-30 and far[2, 3] == 1e20


def test_diagram_values_are_the_exact_pairwise_distances():
    """Births and deaths are float64 pairwise distances of the cloud, not ripser's float32: in
    H1 exactly the values of ``pdist`` (bit for bit), in H0 to 1e-12."""
    for x in _clouds(1):
        dg = rips_diagrams(x)
        table = np.unique(np.concatenate([[0.0], pdist(x)]))
        h1 = dg[1].finite.ravel()
        assert np.isin(h1, table).all(), h1[~np.isin(h1, table)][:3]
        h0 = dg[0].finite[:, 1]
        pos = np.clip(np.searchsorted(table, h0), 1, len(table) - 1)
        lo, hi = table[pos - 1], table[pos]
        near = np.where(np.abs(h0 - lo) <= np.abs(hi - h0), lo, hi)
        np.testing.assert_allclose(h0, near, rtol=1e-12, atol=0)
        assert (dg[0].finite[:, 0] == 0).all() and dg[0].essential.tolist() == [0.0]


def test_precomputed_distances_and_sub_matrices_give_the_same_diagrams():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 30)) + 5.0
    D = pairwise_distances(x)
    ref = rips_diagrams(x)
    got = rips_diagrams(x, distances=D)
    for k in (0, 1):
        np.testing.assert_array_equal(got[k].finite, ref[k].finite)
    idx = np.unique(rng.integers(0, 60, 60))
    sub = rips_diagrams(x[idx], distances=D[np.ix_(idx, idx)])
    ref_sub = rips_diagrams(x[idx])
    for k in (0, 1):
        np.testing.assert_array_equal(sub[k].finite, ref_sub[k].finite)
    greedy = rips_diagrams(x, n_perm=20, distances=D)
    greedy_ref = rips_diagrams(x, n_perm=20)
    assert greedy.r_cover == greedy_ref.r_cover
    np.testing.assert_array_equal(greedy[1].finite, greedy_ref[1].finite)
    assert median_pairwise_distance(x, distances=D) == pytest.approx(
        float(np.median(pdist(x))), rel=1e-13)


def test_bad_distances_are_refused_by_name():
    x = np.random.default_rng(3).normal(size=(5, 2))
    with pytest.raises(ValueError, match=r"distances: expected the \(5, 5\)"):
        rips_diagrams(x, distances=np.zeros((4, 4)))
    D = pairwise_distances(x)
    D[0, 0] = 1.0
    with pytest.raises(ValueError, match="distances: expected finite nonnegative"):
        rips_diagrams(x, distances=D)
    with pytest.raises(ValueError, match=r"distances: expected the \(5, 5\)"):
        median_pairwise_distance(x, distances=np.zeros((3, 3)))


def test_baselines_from_matrices_equal_the_baselines():
    rng = np.random.default_rng(4)
    clean = {"input": rng.normal(size=(25, 6)), "out": rng.normal(size=(25, 3))}
    pert = {k: v + 0.1 * rng.normal(size=v.shape) for k, v in clean.items()}
    scales = {k: float(np.median(pdist(v))) for k, v in clean.items()}
    for reduce in ("max", "mean"):
        assert baselines.displacement_ratio(clean, pert, reduce=reduce, scales=scales) == (
            pytest.approx(baselines.displacement_ratio(clean, pert, reduce=reduce), rel=1e-12))
    for k in clean:
        got = baselines.rtd_lite(clean[k], pert[k], scale=scales[k],
                                 distances=(pairwise_distances(clean[k]),
                                            pairwise_distances(pert[k])))
        assert got == pytest.approx(baselines.rtd_lite(clean[k], pert[k], scale=scales[k]),
                                    rel=1e-10)
        assert got > 0


def test_rips_diagrams_many_in_worker_processes_equal_one_by_one():
    """The parallel path ships only the scaled matrix to a worker: diagrams equal exactly."""
    rng = np.random.default_rng(11)
    clouds = [rng.normal(size=(m, d)) * 10.0 ** e for m, d, e in
              ((80, 30, 0), (70, 3, -5), (3, 2, 0), (2, 4, 1), (90, 200, 4))]
    clouds[0][5] = clouds[0][4]  # a duplicate row
    dists = [pairwise_distances(c) if i % 2 else None for i, c in enumerate(clouds)]
    one = [rips_diagrams(c, (0, 1, 2), distances=d) for c, d in zip(clouds, dists, strict=True)]
    for n_jobs in (1, 2):
        many = rips_diagrams_many(clouds, (0, 1, 2), distances=dists, n_jobs=n_jobs)
        for a, b in zip(one, many, strict=True):
            assert a.n_points == b.n_points and a.degrees == b.degrees
            for k in a.degrees:
                assert np.array_equal(a[k].finite, b[k].finite)
                assert np.array_equal(a[k].essential, b[k].essential)
    assert len(one[1][1].finite) > 0  # the test has loops to compare
    sub = rips_diagrams_many(clouds[:1], n_perm=20, n_jobs=2)[0]
    ref = rips_diagrams(clouds[0], n_perm=20)
    assert sub.r_cover == ref.r_cover and np.array_equal(sub[1].finite, ref[1].finite)


def test_rips_diagrams_many_refuses_bad_arguments_by_name(monkeypatch):
    x = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(ValueError, match="one matrix"):
        rips_diagrams_many([x, x], distances=[None])
    with pytest.raises(ValueError, match="n_jobs"):
        rips_diagrams_many([x], n_jobs=0)
    with pytest.raises(ValueError, match="NaN"):
        rips_diagrams_many([x, np.full((3, 2), np.nan)])
    monkeypatch.setenv("TOPOLIP_JOBS", "3")
    assert default_jobs(10) == 3 and default_jobs(2) == 2
    monkeypatch.setenv("TOPOLIP_JOBS", "zero")
    with pytest.raises(ValueError, match="TOPOLIP_JOBS"):
        default_jobs(4)


def test_forward_probes_is_collect_activations_and_the_logits_in_one_pass(tiny_conv_stack):
    model, data = tiny_conv_stack
    x = data.x_test[:50]
    acts, logits = forward_probes(model, x, n_probe=17, batch_size=8)
    ref = collect_activations(model, x[:17], batch_size=8)
    assert list(acts) == list(ref)
    assert all(np.array_equal(acts[k], ref[k]) for k in ref)
    with torch.no_grad():
        expect = model.eval()(x).numpy()
    assert logits.shape == (50, expect.shape[1])
    np.testing.assert_allclose(logits, expect, rtol=1e-5, atol=1e-5)
    assert (logits.argmax(1) == expect.argmax(1)).all()
    with pytest.raises(ValueError, match="n_probe"):
        forward_probes(model, x, n_probe=51)


# --- the expected outputs (tests/expect/) -------------------------------------------------------

def test_every_expected_file_exists_and_belongs_to_a_case():
    declared = {f for case in CASES.values() for f in case.files}
    for name in sorted(declared):
        path = EXPECT / name
        assert path.is_file() and path.stat().st_size > 0, (
            f"tests/expect/{name} is missing: run `PYTHONPATH=. python -m "
            f"tests.expect.regenerate` from the repository root")
    stored = {p.name for p in EXPECT.iterdir() if p.suffix in (".csv", ".json")}
    assert stored == declared, f"files of no case: {sorted(stored - declared)}"


def _assert_same_json(got, want, rtol: float, where: str) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (
            f"{where}: keys {sorted(got) if isinstance(got, dict) else got!r}, expected "
            f"{sorted(want)}")
        for k in want:
            _assert_same_json(got[k], want[k], rtol, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (
            f"{where}: {len(got) if isinstance(got, list) else got!r} entries, expected "
            f"{len(want)}")
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same_json(g, w, rtol, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, int | float) and (
            got == want or math.isclose(got, want, rel_tol=rtol, abs_tol=0.0)), (
            f"{where}: {got!r}, expected {want!r} (rtol {rtol:g})")
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r}, expected {want!r}"


def _assert_same_table(got: pd.DataFrame, want: pd.DataFrame, rtol: float, name: str) -> None:
    assert list(got.columns) == list(want.columns), (
        f"{name}: columns {list(got.columns)}, expected {list(want.columns)}")
    assert len(got) == len(want), f"{name}: {len(got)} rows, expected {len(want)}"
    for col in want.columns:
        g, w = got[col], want[col]
        assert g.dtype == w.dtype, f"{name}: column {col!r} is {g.dtype}, expected {w.dtype}"
        if pd.api.types.is_float_dtype(w):
            a, b = g.to_numpy(), w.to_numpy()
            same = (a == b) | (np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=rtol, atol=0)
            rows = np.flatnonzero(~same)
            assert not len(rows), (f"{name}: column {col!r} differs beyond rtol {rtol:g} in "
                                   f"rows {rows[:5].tolist()}: {a[rows[:5]].tolist()}, "
                                   f"expected {b[rows[:5]].tolist()}")
        else:
            rows = np.flatnonzero(~((g == w) | (g.isna() & w.isna())).to_numpy())
            assert not len(rows), (f"{name}: column {col!r} differs in rows "
                                   f"{rows[:5].tolist()}: {g.iloc[rows[:5]].tolist()}, "
                                   f"expected {w.iloc[rows[:5]].tolist()}")


@pytest.mark.parametrize("case", list(CASES))
def test_the_engine_gives_the_expected_outputs(case):
    """The public functions give the stored tables (integers and text exactly, floats to the
    case's rtol); the tables are compared as written, so the column order and types count."""
    spec = CASES[case]
    out = spec.compute()
    assert sorted(out) == sorted(spec.files)
    for name in spec.files:
        text = (EXPECT / name).read_text(encoding="utf-8")
        live = to_text(name, out[name])
        if name.endswith(".json"):
            _assert_same_json(json.loads(live), json.loads(text), spec.rtol, name)
        else:
            _assert_same_table(read_csv_text(live), read_csv_text(text), spec.rtol, name)
