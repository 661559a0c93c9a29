"""Capacity: parameters and FLOPs per image, and the matching of the compared architectures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from topolip.evidence.claims import FAMILY_PAIRS
from topolip.nets.models import build_model
from topolip.nets.models.capacity import (
    MATCH_TOLERANCE,
    capacity_table,
    count_parameters,
    flops_per_image,
)
from topolip.pipeline.params import load_profile

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"mnist": (1, 28, 28), "cifar10": (3, 32, 32)}


def test_flops_of_a_convolution_and_a_linear_layer_by_hand():
    conv = nn.Conv2d(2, 3, kernel_size=3, padding=1, bias=False)
    # 2 FLOPs per multiply-add: out pixels (4x4) x out channels 3 x in channels 2 x kernel 9
    assert flops_per_image(conv, (2, 4, 4)) == 2 * 16 * 3 * 2 * 9
    model = nn.Sequential(nn.Flatten(), nn.Linear(32, 5), nn.ReLU(), nn.Linear(5, 2))
    assert flops_per_image(model, (2, 4, 4)) == 2 * (32 * 5 + 5 * 2)
    assert count_parameters(model) == 32 * 5 + 5 + 5 * 2 + 2
    model.train()
    flops_per_image(model, (2, 4, 4))
    assert model.training  # the mode is restored


def test_flops_refuses_a_bad_shape_by_name():
    with pytest.raises(ValueError, match="image_shape"):
        flops_per_image(nn.Linear(2, 2), (2, 0, 3))
    with pytest.raises(ValueError, match="image_shape"):
        flops_per_image(nn.Linear(2, 2), (4,))


def test_capacity_table_flags_an_unmatched_pair():
    m = pd.DataFrame({"arch": ["vit", "resnet", "attention_stack", "conv_stack"],
                      "parameters": [100, 116, 100, 80], "flops": [10, 20, 30, 40]})
    t = capacity_table(m, FAMILY_PAIRS).set_index("attention")
    assert t.loc["vit", "matched"] and not t.loc["attention_stack", "matched"]
    assert t.loc["vit", "parameter_ratio"] == pytest.approx(100 / 116, abs=1e-4)
    assert t.loc["attention_stack", "flop_ratio"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="flops"):
        capacity_table(m.drop(columns="flops"), FAMILY_PAIRS)
    with pytest.raises(ValueError, match="tolerance"):
        capacity_table(m, FAMILY_PAIRS, tolerance=1.5)


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_the_profiles_compare_architectures_matched_in_parameters(profile):
    """Acceptance of issue 18: every compared pair within 15% in weights, in both profiles."""
    p = load_profile(profile, root=ROOT)
    c, h, _ = SHAPES[p["dataset"]]
    rows = []
    for arch in p["archs"]:
        extra = {"image_size": h} if arch in ("vit", "attention_stack") else {}
        model = build_model(arch, in_channels=c, num_classes=10, **extra, **p[arch])
        rows.append({"arch": arch, "parameters": count_parameters(model), "flops": 1})
    table = capacity_table(pd.DataFrame(rows), FAMILY_PAIRS)
    assert len(table) == 2 and table["matched"].all(), table.to_dict("records")
    assert ((table["parameter_ratio"] - 1).abs() <= MATCH_TOLERANCE).all()
    assert len(p["seeds"]) >= (5 if profile == "quick" else 8)


def test_flops_of_the_quick_models_are_positive_and_deterministic():
    torch.manual_seed(0)
    model = build_model("vit", image_size=28, in_channels=1, num_classes=10, patch_size=7,
                        num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32)
    a, b = flops_per_image(model, (1, 28, 28)), flops_per_image(model, (1, 28, 28))
    assert a == b > 0
