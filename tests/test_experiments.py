"""topolip.experiments.model_measurement: bounds against measurement (the per-model measurement's
other tests are in test_model_measurement.py and tests/expect)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from topolip.evidence.bound_tables import bounds_vs_measured
from topolip.experiments.model_measurement import (
    measure_bounds,
    measure_model,
    seed_batch,
)
from topolip.schema import LOCAL
from topolip.topology.spec import TopoLipSpec

# --- bounds against measurement ---------------------------------------------------------------


def test_measure_bounds_recreates_the_topolip_perturbations(tiny_resnet, mnist_600):
    x, y = seed_batch(mnist_600.x_test, mnist_600.y_test, 24, seed=0)
    kinds = {"fgsm": 0.1, "gaussian_noise": 2}
    bounds = measure_bounds(tiny_resnet, x, y, kinds, n_points=12, seed=0, pgd_steps=2,
                            estimate_samples=3, estimate_n_iter=5)
    n_layers = 1 + len(tiny_resnet.probe_points)
    assert bounds["perturbation"].tolist() == ([LOCAL] * n_layers + ["fgsm"] * n_layers
                                               + ["gaussian_noise"] * n_layers)
    assert bounds.columns[0] == "perturbation"
    local = bounds[bounds["perturbation"] == LOCAL].iloc[1:]
    assert (local["estimate"] <= local["bound"] * (1 + 1e-6)).all()
    chains = bounds[bounds["perturbation"] != LOCAL]
    assert (chains["eps"] <= chains["eps_bound_chain"] * (1 + 1e-6) + 1e-5).all()
    # the same perturbed clouds as the TopoLip measurement of the same batch and seed
    topo = measure_model(tiny_resnet, x, y, kinds, TopoLipSpec(degrees=(0,)), n_points=12,
                         seed=0, pgd_steps=2, baseline_measures=False).layers
    topo.insert(0, "arch", "resnet")
    topo.insert(1, "seed", 0)
    joined = bounds_vs_measured(bounds.assign(arch="resnet", seed=0), topo)
    assert len(joined) == 2 * n_layers
    assert (joined["ratio"].iloc[1:].dropna() <= joined["two_lip"].iloc[1:].dropna()).all()
    with pytest.raises(ValueError, match="unknown kinds"):
        measure_bounds(tiny_resnet, x, y, {"fog": 1}, n_points=12)
    with pytest.raises(ValueError, match="n_points must be an int between 2 and the 24 images"):
        measure_bounds(tiny_resnet, x, y, kinds, n_points=30)


