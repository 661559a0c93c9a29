"""The TopoLip engine of issue 13: one distance matrix per cloud, the same numbers as before.

The reference is the former path, kept verbatim in ``benchmarks/bench_topolip.py``
(``old_rips_diagrams``: ``pdist`` inside every call); the new path must give the same diagrams
(bit for bit here) and :func:`topolip.experiments.measure_model` the same tables.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import pdist, squareform

import topolip.experiments as ex
import topolip.metric as mt
from topolip import baselines
from topolip.data import load_mnist
from topolip.diagrams import default_jobs, pairwise_distances, rips_diagrams, rips_diagrams_many
from topolip.experiments import measure_model
from topolip.metric import median_pairwise_distance
from topolip.models import collect_activations, forward_probes
from topolip.spec import TopoLipSpec
from topolip.train import ModelSpec, TrainConfig, fit

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_topolip.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_topolip", _BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_topolip"] = module
    spec.loader.exec_module(module)
    return module


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


def test_rips_diagrams_equal_the_former_path(bench):
    for x in _clouds(1):
        old, new = bench.old_rips_diagrams(x), rips_diagrams(x)
        for k in (0, 1):
            np.testing.assert_allclose(new[k].finite, old[k].finite, rtol=1e-12, atol=0)
            np.testing.assert_array_equal(new[k].essential, old[k].essential)
        # H1: the exact float64 values of pdist, bit for bit
        np.testing.assert_array_equal(new[1].finite, old[1].finite)


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


@pytest.fixture(scope="module")
def small_trained():
    data = load_mnist(n_train=300, n_test=60, seed=0)
    torch.manual_seed(0)
    result = fit(ModelSpec("conv_stack", {"num_layers": 2, "channels": 4}), data,
                 TrainConfig(epochs=2, batch_size=32, lr=3e-3), device="cpu", progress=False)
    return result.model, data


def test_measure_model_tables_equal_the_former_path(small_trained, bench, monkeypatch):
    """Before/after: the former path (pdist everywhere, the baselines on point clouds)."""
    model, data = small_trained
    x, y = data.x_test[:30], data.y_test[:30]
    kwargs = dict(n_points=30, x_floor=data.x_test[30:60], seed=0,
                  estimate_samples=2, estimate_n_iter=2)
    perturbations = {"fgsm": 0.05, "gaussian_noise": 2}
    new = measure_model(model, x, y, perturbations, TopoLipSpec(), **kwargs)

    def old_rips(clouds, degrees=(0, 1), n_perm=None, *, distances=None,  # noqa: ARG001
                 n_jobs=None, backend="ripser"):  # noqa: ARG001
        return [bench.old_rips_diagrams(points, degrees) for points in clouds]

    def old_pairwise(points, name="points"):  # noqa: ARG001
        return squareform(pdist(np.asarray(points, dtype=np.float64)))

    monkeypatch.setattr(mt, "rips_diagrams_many", old_rips)
    for module in (mt, ex):
        monkeypatch.setattr(module, "pairwise_distances", old_pairwise)
    ratio, rtd = baselines.displacement_ratio, baselines.rtd_lite
    monkeypatch.setattr(baselines, "displacement_ratio", lambda c, p, reduce, scales:  # noqa: ARG005
                        ratio(c, p, reduce=reduce))
    monkeypatch.setattr(baselines, "rtd_lite", lambda a, b, scale, name, distances:  # noqa: ARG005
                        rtd(a, b, scale=scale, name=name))
    old = measure_model(model, x, y, perturbations, TopoLipSpec(), **kwargs)
    for name in ("layers", "summary"):
        pd.testing.assert_frame_equal(getattr(new, name), getattr(old, name), rtol=1e-9)
    assert list(new.summary["perturbation"]) == ["fgsm", "gaussian_noise"]
    assert len(new.layers) == 2 * 4 and new.summary["rtd_lite_ratio"].notna().all()


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


def test_forward_probes_is_collect_activations_and_the_logits_in_one_pass(small_trained):
    model, data = small_trained
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
