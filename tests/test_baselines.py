"""Baselines of the measure study on cases with known answers: a pure scaling map, an identity
layer, a rotation, a permutation of the points (the study's statistics:
tests/test_measures.py)."""

import numpy as np
import pytest
import torch

from topolip.experiments.baselines import (
    cka_distance,
    displacement_ratio,
    lipschitz_estimate_product,
    logit_margin,
    paired_displacement,
    rtd_lite,
    spectral_norm_product,
)
from topolip.topology.metric import topolip_table

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 5))
Y = X + 0.05 * RNG.normal(size=X.shape)
Q, _ = np.linalg.qr(RNG.normal(size=(5, 5)))


def test_identity_scaling_and_rotation_layers():
    for name, f in (("identity", lambda a: a), ("scaling", lambda a: 7.0 * a),
                    ("rotation", lambda a: a @ Q)):
        clean, pert = {"input": X, name: f(X)}, {"input": Y, name: f(Y)}
        assert displacement_ratio(clean, pert) == pytest.approx(1.0), name
        assert displacement_ratio(clean, pert, reduce="mean") == pytest.approx(1.0), name
        # a scale-free, paired measure sees no change either
        assert rtd_lite(f(X), f(Y)) == pytest.approx(rtd_lite(X, Y), rel=1e-9), name
        assert cka_distance(f(X), f(Y)) == pytest.approx(cka_distance(X, Y), abs=1e-12), name
        # and TopoLip agrees: a scale-free ratio of 1
        t = topolip_table(clean, pert)
        assert t.loc[1, "topolip_scale_free"] == pytest.approx(1.0), name


def test_hand_computed_rtd_lite_and_displacement():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    # MST(x) weights 1 and 2; doubling the cloud: R(2x, x) bars (1, 2), (2, 4); R(x, 2x) empty
    assert rtd_lite(x, 2 * x, scale=1.0) == pytest.approx(1.5)
    assert rtd_lite(x, x, scale=1.0) == 0.0
    a = np.array([[0.0, 0.0], [3.0, 4.0]])
    assert paired_displacement(a, a + [[0.0, 1.0], [0.0, 0.0]]) == pytest.approx(0.2)
    # linear CKA of orthogonal 1-D features: 0 similarity
    u = np.array([[1.0], [-1.0], [1.0], [-1.0]])
    v = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    assert cka_distance(u, v) == pytest.approx(1.0)


def test_pairing_matters_for_rtd_but_not_for_topolip():
    perm = RNG.permutation(len(X))
    clean, shuffled = {"input": X, "out": X}, {"input": Y, "out": X[perm]}
    t = topolip_table(clean, shuffled, paired=False)
    assert t.loc[1, "delta"] == 0.0          # the same cloud, in another order
    assert rtd_lite(X, X[perm]) > 0.1        # paired: the points moved


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="paired clouds 'out' must have the same shape"):
        displacement_ratio({"input": X, "out": X}, {"input": Y, "out": X[:3]})
    with pytest.raises(ValueError, match="reduce must be 'max' or 'mean'"):
        paired_displacement(X, Y, reduce="median")
    with pytest.raises(ValueError, match="no variance"):
        cka_distance(np.ones((4, 2)), X[:4, :2])
    with pytest.raises(ValueError, match="NaN"):
        rtd_lite(np.full((3, 2), np.nan), X[:3, :2])


def test_model_baselines():
    lin = torch.nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[3.0, 0, 0], [0, 4.0, 0]]))
    assert spectral_norm_product(torch.nn.Sequential(torch.nn.Flatten(), lin)) == pytest.approx(
        np.log10(4.0))
    model = torch.nn.Sequential(torch.nn.Flatten(), lin)
    x = torch.tensor([[[[1.0, 0.0, 0.0]]], [[[0.0, 1.0, 0.0]]]])
    # logits (3, 0) and (0, 4): margins 3 (class 0) and -4 (class 0 for the second)
    assert logit_margin(model, x, torch.tensor([0, 0])) == pytest.approx(-0.5)
    from topolip.nets.models import build_model

    torch.manual_seed(0)
    conv = build_model("conv_stack", num_layers=1, channels=2)
    value = lipschitz_estimate_product(conv, torch.rand(2, 1, 28, 28), n_iter=5)
    assert np.isfinite(value)
