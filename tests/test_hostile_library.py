"""Hostile inputs to the library (issue 11): no silently wrong number, a clear error instead.

Each case names what it guards. Extreme scales of clouds (ripser computes in float32), large
Wasserstein orders, wrong types, bounds without rounding allowance, NaN weights, corrupted
checkpoints, wrong training configurations, and a missing CIFAR-10 root.
"""

import math
import os
import re
import time

import numpy as np
import pytest
import torch
from torch import nn

from topolip.bounds.dispatch import lipschitz_bound
from topolip.bounds.estimate import lipschitz_estimate
from topolip.bounds.norms import batchnorm_lipschitz, layernorm_lipschitz
from topolip.nets.checkpoints import _checksum, remove_stale_temporaries
from topolip.nets.data import load_dataset
from topolip.nets.data.cifar import load_cifar10
from topolip.nets.data.mnist import load_mnist
from topolip.nets.run_spec import ModelSpec, TrainConfig
from topolip.nets.train import fit, load_trained
from topolip.topology.diagram import Diagram, check_diagram
from topolip.topology.distances import bottleneck, diagram_distance, wasserstein
from topolip.topology.metric import median_pairwise_distance, topolip_table
from topolip.topology.points import check_points
from topolip.topology.rips import rips_diagrams
from topolip.topology.spec import TopoLipSpec

SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])

# --------------------------------------------------------------------------- clouds at scale


def test_two_points_at_1e200_give_one_finite_and_one_essential_point():
    res = rips_diagrams([[0.0, 0.0], [3e200, 4e200]])
    np.testing.assert_allclose(res[0].finite, [[0.0, 5e200]], rtol=1e-15)
    assert res[0].essential.tolist() == [0.0]


@pytest.mark.parametrize("scale", [1e-300, 1e-100, 1e-40, 1e-20, 1.0, 1e20, 1e40, 1e100,
                                   1e200, 1e300])
def test_square_diagrams_scale_exactly_with_the_cloud(scale):
    res = rips_diagrams(SQUARE * scale)
    np.testing.assert_allclose(res[0].finite, [[0.0, scale]] * 3, rtol=1e-12)
    assert res[0].essential.tolist() == [0.0]  # exactly one essential class in H0
    np.testing.assert_allclose(res[1].finite, [[scale, math.sqrt(2) * scale]], rtol=1e-12)
    assert len(res[1].essential) == 0


def test_subnormal_float32_cloud_keeps_its_precision():
    cloud = (SQUARE * 1e-40).astype(np.float32)  # subnormal float32 coordinates
    exact = np.asarray(cloud, dtype=np.float64)
    d = float(np.linalg.norm(exact[1] - exact[0]))
    res = rips_diagrams(cloud)
    np.testing.assert_allclose(res[0].finite[:, 1], [d] * 3, rtol=1e-15)
    assert len(res[1].finite) == 1


def test_greedy_subsample_covering_radius_at_1e200():
    t = 2 * np.pi * np.arange(12) / 12
    res = rips_diagrams(1e200 * np.c_[np.cos(t), np.sin(t)], n_perm=6)
    ref = rips_diagrams(np.c_[np.cos(t), np.sin(t)], n_perm=6)
    assert math.isfinite(res.r_cover)
    assert res.r_cover == pytest.approx(1e200 * ref.r_cover, rel=1e-12)


@pytest.mark.parametrize("cloud, match", [
    ([[0.0], [1e-300], [1e300]], "closer than float64 can resolve"),
    ([[0.0], [1e-30], [1e20], [2e20]], "beyond float32's range"),
])
def test_unrepresentable_spreads_are_refused(cloud, match):
    with pytest.raises(ValueError, match=match):
        rips_diagrams(cloud)


def test_largest_float64_coordinates_still_work():
    res = rips_diagrams([[0.0], [1.5e308], [-1.5e308]])
    assert res[0].finite[:, 1].tolist() == [1.5e308, 1.5e308]


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize("bad, match", [
    ([[1 + 1j, 2.0]], "complex"),
    (np.array([[0.0, 1.0]], dtype=np.complex128), "complex"),
    ([[0.0, 1.0 + 0j]], "complex"),
    ([[]], r"got shape \(1, 0\)"),
    (np.zeros((3, 0)), r"got shape \(3, 0\)"),
    ([["0", "1"]], "text"),
    ([[True, True]], "booleans"),
    ([[0.0, 1.0], [0.0]], "cannot read as one array"),
    (None, "shape"),
    ({"a": 1}, "numeric"),
])
def test_check_diagram_refuses_what_it_would_coerce(bad, match):
    with pytest.raises(ValueError, match=match):
        check_diagram(bad)


@pytest.mark.parametrize("empty", [[], np.empty((0,)), np.empty((0, 2)), np.empty((0, 0))])
def test_empty_diagrams_stay_valid(empty):
    assert check_diagram(empty).shape == (0, 2)


@pytest.mark.parametrize("bad, match", [
    (np.array([[0.0, 1.0], [1.0, 0.0]]) * (1 + 1j), "complex"),
    ([["0", "1"], ["1", "0"]], "text"),
    ([[0.0, 1.0], [1.0]], "cannot read as one array"),
])
def test_check_points_refuses_complex_and_text(bad, match):
    with pytest.raises(ValueError, match=match):
        check_points(bad)
    with pytest.raises(ValueError, match=match):
        rips_diagrams(bad)


@pytest.mark.parametrize("degrees", [(0.5, 1.7), (0, 1.0), ("0",), "01", (True,), (-1,), ()])
def test_distance_spec_refuses_non_integer_degrees(degrees):
    with pytest.raises(ValueError, match="degrees"):
        TopoLipSpec(degrees=degrees)


def test_distance_spec_keeps_integer_degrees():
    assert TopoLipSpec(degrees=(np.int64(1), 0)).degrees == (1, 0)
    assert TopoLipSpec(degrees=1).degrees == (1,)


def test_diagram_distances_refuse_complex_diagrams():
    with pytest.raises(ValueError, match="a: expected real numbers"):
        wasserstein([[0, 1 + 2j]], [[0, 1]])
    with pytest.raises(ValueError, match="b: expected real numbers"):
        bottleneck([[0, 1]], [[0, 1j]])
    with pytest.raises(ValueError, match="complex"):
        Diagram(finite=[[0, 1j]], essential=[], degree=0)


# --------------------------------------------------------------------------- large orders p


@pytest.mark.parametrize("p", [3.0, 50.0, 1000.0, 1e6, 1e300])
@pytest.mark.parametrize("method", ["auto", "assignment", "pot", "h0"])
def test_large_wasserstein_orders_do_not_underflow(p, method):
    a, b = [[0, 1], [0, 2]], [[0, 1.5]]
    w = wasserstein(a, b, p=p, method=method)
    # optimum: (0, 2)-(0, 1.5) costs 0.5, (0, 1) to the diagonal 0.5: W_p = 0.5 * 2**(1/p)
    assert w == pytest.approx(0.5 * 2 ** (1 / p), rel=1e-9)
    assert w >= bottleneck(a, b) == 0.5


@pytest.mark.parametrize("p", [100.0, 1000.0, 1e6])
def test_large_orders_with_births_and_essentials(p):
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 1, (15, 2)), axis=1)
    b = np.sort(rng.uniform(0, 1, (11, 2)), axis=1) * 1e-3 + 1000.0
    a = np.vstack([a + 1000.0, [[1000.0, np.inf]]])
    b = np.vstack([b, [[1000.5, np.inf]]])
    w = wasserstein(a, b, p=p)
    w_inf = bottleneck(a, b)
    n = len(a) + len(b)
    assert w_inf <= w * (1 + 1e-9) and w <= w_inf * n ** (1 / p) * (1 + 1e-9)
    assert diagram_distance({0: a}, {0: b}, p=p) == pytest.approx(w, rel=1e-12)


def test_large_order_tiny_and_huge_values():
    assert wasserstein([[0, 1e-300]], [], p=1e6) == pytest.approx(0.5e-300, rel=1e-6)
    # matched: |2e300 - 1e300| = 1e300; both to the diagonal: (0.5e300, 1e300) -> 1e300 too
    assert wasserstein([[0, 1e300]], [[0, 2e300]], p=1e6) == pytest.approx(1e300, rel=1e-6)
    assert wasserstein([[0, 1e300]], [[0, 1.25e300]], p=1e6) == pytest.approx(2.5e299, rel=1e-6)
    assert wasserstein([[0, 1]], [[0, 1]], p=1e6) == 0.0


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("d", [2, 4, 16, 64, 192, 768])
def test_layernorm_bound_on_constant_tokens_is_at_least_the_estimate(d):
    ln = nn.LayerNorm(d)
    x = torch.full((3, 5, d), 2.0)
    assert lipschitz_bound(ln, x) >= lipschitz_estimate(ln, x)
    assert layernorm_lipschitz(ln, x) > 1 / math.sqrt(ln.eps)  # the allowance is there


def test_batchnorm_bound_carries_an_allowance():
    bn = nn.BatchNorm1d(3).eval()
    x = torch.randn(4, 3)
    assert batchnorm_lipschitz(bn) > 1 / math.sqrt(1 + bn.eps)
    assert lipschitz_bound(bn, x) >= lipschitz_estimate(bn, x)


@pytest.mark.parametrize("module, layer", [
    (nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), "'2' (Linear)"),
    (nn.Linear(3, 3), "'<root>' (Linear)"),
    (nn.Sequential(nn.LayerNorm(3)), "'0' (LayerNorm)"),
])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weight_is_named(module, layer, value):
    target = [m for m in module.modules() if isinstance(m, nn.Linear | nn.LayerNorm)][-1]
    with torch.no_grad():
        target.weight[0, ...] = value
    with pytest.raises(ValueError, match=re.escape(f"layer {layer}: parameter 'weight' holds")):
        lipschitz_bound(module, torch.randn(2, 3))
    with pytest.raises(ValueError, match=re.escape(f"layer {layer}")):
        lipschitz_estimate(module, torch.randn(2, 3))


def test_nan_running_variance_buffer_is_named():
    bn = nn.BatchNorm1d(3).eval()
    bn.running_var[1] = float("nan")
    with pytest.raises(ValueError, match="buffer 'running_var'"):
        lipschitz_bound(bn, torch.randn(2, 3))


@pytest.mark.parametrize("bad", [torch.tensor([[float("nan"), 0.0]]), np.zeros((0, 2)),
                                 torch.zeros(3)])
def test_bounds_refuse_bad_inputs(bad):
    with pytest.raises(ValueError):
        lipschitz_bound(nn.Linear(2, 2), bad)


# --------------------------------------------------------------------------- coinciding clouds


def test_coinciding_activations_name_the_layer():
    x = np.ones((5, 3))
    with pytest.raises(ValueError, match="clean activations at 'block2'.*coincide"):
        topolip_table({"block2": x}, {"block2": x + np.arange(5)[:, None]})
    with pytest.raises(ValueError, match="my cloud: all points coincide"):
        median_pairwise_distance(x, "my cloud")


# --------------------------------------------------------------------------- checkpoints

SPEC = ModelSpec("resnet", {"width": 4})
CONFIG = TrainConfig(epochs=2, batch_size=64, lr=3e-3, seed=0)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    data = load_mnist(n_train=128, n_test=32, seed=0)
    path = tmp_path_factory.mktemp("ckpt") / "m.pt"
    fit(SPEC, data, CONFIG, checkpoint=path, device="cpu", progress=False)
    return path, data


def _state(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def _write(state, path, *, reseal=True):
    if reseal:
        state = {**state, "checksum": _checksum(state)}
    torch.save(state, path)


def _first_weight(state):
    return next(k for k, v in state["model"].items() if v.is_floating_point() and v.numel() > 1)


def test_a_flipped_bit_in_a_weight_is_detected(finished, tmp_path):
    state = _state(finished[0])
    key = _first_weight(state)
    raw = state["model"][key].view(torch.int32)
    raw.view(-1)[0] ^= 1 << 3  # one bit of one weight
    path = tmp_path / "flipped.pt"
    _write(state, path, reseal=False)
    with pytest.raises(ValueError, match=r"flipped.pt is not usable: its checksum does not match"):
        load_trained(path)


def test_a_flipped_byte_in_the_file_is_detected(finished, tmp_path):
    blob = bytearray(finished[0].read_bytes())
    for offset in (len(blob) // 2, len(blob) - 200):
        damaged = bytearray(blob)
        damaged[offset] ^= 0xFF
        path = tmp_path / f"byte{offset}.pt"
        path.write_bytes(bytes(damaged))
        with pytest.raises(ValueError, match=f"byte{offset}.pt"):
            load_trained(path)


@pytest.mark.parametrize("case, match", [
    ("nan", "holds NaN/inf values"),
    ("epoch99", "claims epoch 99 of a 2-epoch run"),
    ("epoch0", "claims epoch 0 of a 2-epoch run"),
    ("no_identity", r"lacks the key\(s\) \['identity'\]"),
    ("shape", "weights do not fit the model"),
    ("accuracy", r"test accuracy 1.5 is not in \[0, 1\]"),
    ("history", "history has 1 epochs, not 2"),
    ("config", "run identity is malformed"),
    ("format", "not a topolip checkpoint of format"),
])
def test_tampered_checkpoints_are_refused_with_the_file_named(finished, tmp_path, case, match):
    state = _state(finished[0])
    key = _first_weight(state)
    if case == "nan":
        state["model"] = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
                          for k, v in state["model"].items()}
    elif case == "epoch99":
        state["epoch"] = 99
    elif case == "epoch0":
        state["epoch"] = 0
    elif case == "no_identity":
        del state["identity"]
    elif case == "shape":
        state["model"][key] = torch.zeros(3, 3)
    elif case == "accuracy":
        state["test_accuracy"] = 1.5
    elif case == "history":
        state["history"] = state["history"][:1]
    elif case == "config":
        state["identity"]["config"]["epochs"] = "abc"
    elif case == "format":
        state["format"] = 1
    path = tmp_path / f"{case}.pt"
    _write(state, path)
    with pytest.raises(ValueError, match=match) as err:
        load_trained(path)
    assert f"{case}.pt" in str(err.value)


def test_fit_refuses_a_damaged_checkpoint_naming_it(finished, tmp_path):
    path, data = finished
    state = _state(path)
    state["epoch"] = 99
    bad = tmp_path / "bad.pt"
    _write(state, bad)
    with pytest.raises(ValueError, match="bad.pt is not usable.*delete the file to retrain"):
        fit(SPEC, data, CONFIG, checkpoint=bad, device="cpu", progress=False)


def test_stale_temporaries_are_removed(finished, tmp_path):
    path, data = finished
    ckpt = tmp_path / "m.pt"
    ckpt.write_bytes(path.read_bytes())
    old = tmp_path / ".m.pt.abc123.tmp"
    fresh = tmp_path / ".m.pt.def456.tmp"
    other = tmp_path / ".other.pt.x.tmp"
    for f in (old, fresh, other):
        f.write_bytes(b"half a checkpoint")
    past = time.time() - 3600
    os.utime(old, (past, past))
    os.utime(other, (past, past))
    assert remove_stale_temporaries(ckpt) == [old]
    assert fresh.exists() and other.exists()
    os.utime(fresh, (past, past))
    result = fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False)
    assert not fresh.exists() and other.exists()  # fit cleans its own checkpoint's leftovers
    assert result.resumed_from_epoch == 2


def test_a_good_checkpoint_still_loads(finished):
    result = load_trained(finished[0], device="cpu")
    assert 0.0 <= result.test_accuracy <= 1.0 and len(result.history) == 2


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("kwargs, field", [
    ({"epochs": "abc"}, "epochs"), ({"epochs": 0}, "epochs"), ({"epochs": 2.5}, "epochs"),
    ({"epochs": True}, "epochs"), ({"epochs": float("inf")}, "epochs"),
    ({"batch_size": None}, "batch_size"), ({"batch_size": -3}, "batch_size"),
    ({"lr": "fast"}, "lr"), ({"lr": 0.0}, "lr"), ({"lr": float("nan")}, "lr"),
    ({"weight_decay": -1e-4}, "weight_decay"), ({"weight_decay": "x"}, "weight_decay"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": "0"}, "seed"),
])
def test_train_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"TrainConfig: {field} must be"):
        TrainConfig(**kwargs)


def test_train_config_normalises_integral_floats():
    assert TrainConfig(epochs=3.0, seed=np.int64(2)).epochs == 3
    assert TrainConfig(seed=np.int64(2)).seed == 2


# --------------------------------------------------------------------------- data


@pytest.mark.parametrize("root", [None, "", "   "])
def test_cifar_without_root_says_so(root):
    with pytest.raises(ValueError, match="root"):
        load_cifar10(root, n_train=10, n_test=10)


def test_load_dataset_cifar_without_root_says_so():
    with pytest.raises(ValueError, match="needs root="):
        load_dataset("cifar10", n_train=10, n_test=10)
