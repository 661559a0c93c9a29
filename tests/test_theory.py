"""The theory chapter's experiments (topolip.experiments.theory): every bound against its estimate
on random layers, and the attention and convolution sweeps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from topolip.bounds.segments import BoundViolation
from topolip.experiments.theory import attention_scaling, bound_check, conv_scaling, random_layers


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_random_layers_cover_every_kind_with_their_input_shapes():
    torch.manual_seed(0)
    layers = random_layers(token_dim=8, heads=2, channels=3, image_size=6, n_tokens=5,
                           samples=4, generator=gen(0))
    assert len(layers) == 17
    assert tuple(layers["Linear"][1].shape) == (4, 8)
    assert tuple(layers["MultiheadAttention"][1].shape) == (4, 5, 8)
    assert tuple(layers["BasicBlock"][1].shape) == (4, 3, 6, 6)
    patch = layers["Conv2d patch (ViT)"][1]
    assert tuple(patch.shape) == (4, 1, 6, 6) and 0 <= patch.min() and patch.max() <= 1
    # GELU's inputs sit at its steepest point sqrt(2)
    assert abs(layers["GELU"][1].mean().item() - np.sqrt(2)) < 0.1
    # BatchNorm statistics were drawn, not left at PyTorch's 0 / 1
    bn = layers["BatchNorm2d"][0]
    assert bn.running_mean.abs().sum() > 0 and (bn.running_var >= 0.2).all()
    # the same global seed and generator give the same layers and inputs
    torch.manual_seed(0)
    again = random_layers(token_dim=8, heads=2, channels=3, image_size=6, n_tokens=5,
                          samples=4, generator=gen(0))
    assert torch.equal(again["Linear"][0].weight, layers["Linear"][0].weight)
    assert torch.equal(again["EncoderBlock"][1], layers["EncoderBlock"][1])
    with pytest.raises(ValueError, match="token_dim must be a multiple of heads"):
        random_layers(token_dim=6, heads=4, channels=2, image_size=4, n_tokens=2, samples=2,
                      generator=gen(0))
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        random_layers(token_dim=4, heads=2, channels=2, image_size=4, n_tokens=2, samples=0,
                      generator=gen(0))


def test_bound_check_is_exact_on_a_diagonal_linear_map_and_holds_everywhere():
    lin = nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[3.0, 0.0], [0.0, 1.0]]))
    torch.manual_seed(0)
    layers = {"diag(3, 1)": (lin, torch.randn(3, 2, generator=gen(1))),
              "ReLU": (nn.ReLU(), torch.randn(3, 4, generator=gen(2))),
              **random_layers(token_dim=8, heads=2, channels=2, image_size=5, n_tokens=3,
                              samples=2, generator=gen(3))}
    table = bound_check(layers, n_iter=10)
    assert list(table.columns) == ["layer", "bound", "estimate", "bound / estimate"]
    assert list(table["layer"]) == list(layers)
    first = table.iloc[0]
    assert first["bound"] == pytest.approx(3.0) and first["estimate"] == pytest.approx(3.0)
    assert table.loc[table["layer"] == "ReLU", "bound"].item() == 1.0
    assert (table["estimate"] <= table["bound"] * (1 + 1e-6)).all()
    assert (table["bound / estimate"] >= 1 - 1e-6).all()
    with pytest.raises(ValueError, match="at least one"):
        bound_check({})


def test_bound_check_catches_a_wrong_bound(monkeypatch):
    import topolip.experiments.theory as theory

    monkeypatch.setattr(theory, "lipschitz_bound", lambda *_a, **_k: 1e-3)
    with pytest.raises(BoundViolation, match="estimate exceeds the bound"):
        bound_check({"Linear": (nn.Linear(3, 3), torch.randn(2, 3, generator=gen(0)))},
                    n_iter=3)


def test_attention_scaling_rows_grow_with_n_and_stay_above_the_estimate():
    torch.manual_seed(0)
    t = attention_scaling(width=8, heads=2, n_grid=[1, 2, 4, 8], radius_grid=[1.0, 4.0],
                          width_grid=[4, 8], samples=2, generator=gen(0), n_iter=5,
                          max_estimate_tokens=4)
    assert list(t.columns) == ["n", "R", "width", "bound", "estimate"]
    assert len(t) == 2 * 4 + 2 * 2
    sweep = t.iloc[:8]
    assert (sweep["width"] == 8).all() and sweep["R"].tolist() == [1.0] * 4 + [4.0] * 4
    # estimated up to max_estimate_tokens only
    assert sweep.loc[sweep["n"] > 4, "estimate"].isna().all()
    assert sweep.loc[sweep["n"] <= 4, "estimate"].notna().all()
    defined = t.dropna(subset=["estimate"])
    assert (defined["estimate"] <= defined["bound"]).all()
    for _, part in sweep.groupby("R"):  # more tokens, a larger bound
        assert np.all(np.diff(part.sort_values("n")["bound"]) > 0)
    # one token: the softmax path vanishes and the bound does not depend on R; more tokens:
    # a larger radius, a larger bound
    big, small = (sweep[sweep["R"] == r]["bound"].to_numpy() for r in (4.0, 1.0))
    assert big[0] == pytest.approx(small[0], rel=1e-12)
    assert (big[1:] > small[1:]).all()
    widths = t.iloc[8:]
    assert widths[["n", "width"]].values.tolist() == [[4, 4], [16, 4], [4, 8], [16, 8]]
    assert (widths["R"] == 1.0).all()


def test_conv_scaling_is_exact_for_one_by_one_kernels_and_ordered():
    torch.manual_seed(0)
    t = conv_scaling(channels=3, image_size=6, kernel_grid=[1, 3], channel_grid=[2],
                     input_size_grid=[4, 8], generator=gen(0), n_iter=30)
    assert t["sweep"].tolist() == ["kernel size"] * 2 + ["channels"] + ["input size"] * 2
    assert t["value"].tolist() == [1, 3, 2, 4, 8]
    assert (t["estimate"] <= t["certified"] * (1 + 1e-6)).all()
    assert (t["certified"] <= t[["circular", "cheap"]].min(axis=1) * (1 + 1e-9)).all()
    # a 1×1 convolution is the channel matrix at every pixel: all bounds equal its norm
    one = t.iloc[0]
    assert one["cheap"] == pytest.approx(one["circular"], rel=1e-6)
    assert one["certified"] == pytest.approx(one["cheap"], rel=2e-3)
    # the fixed convolution on a larger input has a norm at least as large (a compression)
    sizes = t[t["sweep"] == "input size"]["certified"].to_numpy()
    assert sizes[1] >= sizes[0] * (1 - 1e-3)
    assert isinstance(t, pd.DataFrame)
