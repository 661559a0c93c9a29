"""One spec, one batch (issue 20): the spec is built once and travels with its diagrams; one
rule picks a model's images; ``n_perm`` reaches every diagram of a measurement."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from topolip.experiments.model_measurement import measure_model, model_images, seed_batch
from topolip.nets.models import build_model
from topolip.nets.models.probes import collect_activations
from topolip.topology.distances import diagram_distance
from topolip.topology.metric import LayerDiagrams, layer_diagrams, topolip_table
from topolip.topology.spec import PARAMETERS, TopoLipSpec, check_n_points

PROFILE = {"degrees": [0, 1], "p": 1, "q": math.inf, "n_perm": None,
           "persistence_backend": "ripser", "n_points": 100, "seeds": [0, 1]}


# --- the spec ----------------------------------------------------------------------------------

def test_spec_from_params_is_the_spec_of_the_fields():
    spec = TopoLipSpec.from_params(PROFILE)
    assert spec == TopoLipSpec(degrees=(0, 1), p=1.0, q=math.inf, backend="ripser", n_perm=None)
    assert TopoLipSpec.from_params({**PROFILE, "n_perm": 30}).n_perm == 30
    assert TopoLipSpec.from_params({}) == TopoLipSpec()
    assert set(PARAMETERS) == {"degrees", "p", "q", "n_perm", "persistence_backend"}
    with pytest.raises(AttributeError):
        spec.n_perm = 5  # frozen: what made a diagram cannot change under it


@pytest.mark.parametrize(("name", "value", "message"), [
    ("p", 0.5, r"parameter 'p': p: expected the order p >= 1"),
    ("q", 3, r"parameter 'q': q: expected the ground metric"),
    ("degrees", [], r"parameter 'degrees': degrees"),
    ("n_perm", 1, r"parameter 'n_perm': n_perm: expected None or an int >= 2, got 1"),
    ("n_perm", True, r"parameter 'n_perm': n_perm: expected None or an int >= 2"),
    ("persistence_backend", "ripser.py", r"parameter 'persistence_backend': backend"),
])
def test_spec_from_params_names_the_bad_parameter(name, value, message):
    with pytest.raises(ValueError, match=message):
        TopoLipSpec.from_params({**PROFILE, name: value})


def test_spec_validates_its_fields_and_labels_the_subsample():
    with pytest.raises(ValueError, match="n_perm: expected None or an int >= 2"):
        TopoLipSpec(n_perm=1)
    assert TopoLipSpec(n_perm=np.int64(7)).n_perm == 7
    assert TopoLipSpec().label == "W_{p=1, q=inf}, degrees H0+H1"
    assert TopoLipSpec(n_perm=7).label.endswith("greedy subsample of 7 points")


def test_check_n_points_is_the_one_range_check():
    assert check_n_points(2, 2) == 2 and check_n_points(np.int64(5), 10, floor=True) == 5
    for bad in (1, 11, 2.0, True):
        with pytest.raises(ValueError, match="n_points must be an int"):
            check_n_points(bad, 10)
    with pytest.raises(ValueError, match=r"need 2 \* n_points <= the 10 images"):
        check_n_points(6, 10, floor=True)


# --- diagrams carry their spec -----------------------------------------------------------------

@pytest.fixture
def clouds():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 4))
    clean = {"input": x, "double": 2 * x}
    pert = {k: v + 0.01 * rng.normal(size=v.shape) for k, v in clean.items()}
    return clean, pert


def test_layer_diagrams_record_their_spec(clouds):
    clean, _ = clouds
    spec = TopoLipSpec(degrees=(0,), n_perm=10)
    dgms = layer_diagrams(clean, spec)
    assert isinstance(dgms, LayerDiagrams) and dgms.spec == spec
    assert list(dgms) == ["input", "double"]
    assert all(d.degrees == (0,) and d.subsampled for d in dgms.values())
    assert "n_perm=10" in repr(dgms)


def test_table_refuses_diagrams_of_another_spec(clouds):
    clean, pert = clouds
    spec = TopoLipSpec(n_perm=10)
    full = layer_diagrams(clean)  # made without the subsample
    with pytest.raises(ValueError, match=r"clean_diagrams were made with TopoLipSpec\(.*"
                                         r"n_perm=None\), not with TopoLipSpec\(.*n_perm=10\)"):
        topolip_table(clean, pert, spec, clean_diagrams=full)
    with pytest.raises(ValueError, match="clean_diagrams record no spec"):
        topolip_table(clean, pert, spec, clean_diagrams=dict(layer_diagrams(clean, spec)))
    ours = topolip_table(clean, pert, spec, clean_diagrams=layer_diagrams(clean, spec))
    assert ours.equals(topolip_table(clean, pert, spec))
    assert (ours["r_cover"] > 0).all()  # both clouds subsampled


# --- one rule for a model's images -------------------------------------------------------------

def test_model_images_is_the_former_rule():
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(40, 1, 4, 4, generator=g), torch.arange(40) % 10
    b = model_images(x, y, 3, n_points=8, n_robust=20, floor=True)
    ref_x, ref_y = seed_batch(x, y, 20, 3)
    assert torch.equal(b.x, ref_x) and torch.equal(b.y, ref_y)
    assert torch.equal(b.cloud, ref_x[:8])
    assert torch.equal(b.x_floor, seed_batch(x, y, 8, 3, offset=8)[0])
    assert len(model_images(x, y, 3, n_points=8).x) == 8  # n_robust below n_points
    assert model_images(x, y, 3, n_robust=5).x_floor is None  # no cloud: robustness
    with pytest.raises(ValueError, match=r"2 \* n_points <= the 40 images"):
        model_images(x, y, 3, n_points=21, floor=True)
    with pytest.raises(ValueError, match="floor=True needs n_points"):
        model_images(x, y, 3, n_robust=5, floor=True)


# --- n_perm reaches every diagram of measure_model -------------------------------------------

def test_measure_model_subsamples_the_floor_and_the_table_with_the_spec():
    """With ``n_perm`` set, the noise floor compares two subsampled diagrams (not a subsampled
    one with a full one) and the table's displacements are those of the subsampled diagrams."""
    torch.manual_seed(0)
    model = build_model("conv_stack", num_layers=2, channels=2)
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(12, 1, 28, 28, generator=g), torch.arange(12) % 10
    x_floor = torch.rand(12, 1, 28, 28, generator=g)
    spec = TopoLipSpec(n_perm=6)
    m = measure_model(model, x, y, {"gaussian_noise": 2}, spec, n_points=12, x_floor=x_floor,
                      baseline_measures=False, n_jobs=1)
    t = m.layers
    clean, floor = collect_activations(model, x), collect_activations(model, x_floor)

    def floor_with(s):
        a, b = layer_diagrams(clean, s, n_jobs=1), layer_diagrams(floor, s, n_jobs=1)
        return np.array([diagram_distance(a[k], b[k], p=s.p, q=s.q, degrees=s.degrees)
                         for k in clean])

    np.testing.assert_allclose(t["noise_floor"], floor_with(spec), rtol=1e-9)
    assert not np.allclose(t["noise_floor"], floor_with(TopoLipSpec()), rtol=1e-6), \
        "the test must tell a subsampled floor from a full one"
    assert (t["r_cover"] > 0).all()  # the table's diagrams were subsampled too
    full = measure_model(model, x, y, {"gaussian_noise": 2}, TopoLipSpec(), n_points=12,
                         x_floor=x_floor, baseline_measures=False, n_jobs=1).layers
    assert (full["r_cover"] == 0).all()
    np.testing.assert_allclose(full["noise_floor"], floor_with(TopoLipSpec()), rtol=1e-9)
