"""Plain attention-only and convolution-only stacks: shapes, probes, hooks, no norm/skip."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from topolip.nets.models.plain import attention_stack, conv_stack
from topolip.nets.models.probes import collect_activations, probe_labels

NORM_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm2d,
              nn.LocalResponseNorm)


@pytest.fixture
def images():
    return torch.rand(6, 1, 28, 28, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, hidden_dim=16, num_heads=2),
                                dict(patch_size=4, activation="relu")])
def test_attention_stack_forward_and_probes(images, kw):
    model = attention_stack(**kw)
    assert model(images).shape == (6, 10)
    n = kw.get("num_layers", 4)
    assert model.arch == "attention_stack"
    assert probe_labels(model) == ["input", "embed", *[f"layer{i}" for i in range(1, n + 1)],
                                   "pool"]
    acts = collect_activations(model, images)
    tokens = (28 // kw.get("patch_size", 7)) ** 2
    d = kw.get("hidden_dim", 64)
    assert acts["embed"].shape == (6, tokens * d)
    assert acts[f"layer{n}"].shape == (6, tokens * d)
    assert acts["pool"].shape == (6, d)


def test_attention_stack_rgb_and_classes():
    model = attention_stack(image_size=32, in_channels=3, patch_size=8, num_classes=7)
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 7)


@pytest.mark.parametrize("kw,spatial", [
    (dict(), [28, 14, 14, 7]),
    (dict(num_layers=7, channels=8), [28, 14, 14, 7, 7, 4, 4]),
    (dict(num_layers=2, kernel_size=5, strides=[2, 2]), [14, 7]),
])
def test_conv_stack_forward_and_probes(images, kw, spatial):
    model = conv_stack(**kw)
    assert model(images).shape == (6, 10)
    assert model.arch == "conv_stack"
    n = len(spatial)
    assert probe_labels(model) == ["input", *[f"layer{i}" for i in range(1, n + 1)], "pool"]
    acts = collect_activations(model, images)
    c = kw.get("channels", 32)
    for i, side in enumerate(spatial, start=1):
        assert acts[f"layer{i}"].shape == (6, c * side * side)
    assert acts["pool"].shape == (6, c)


@pytest.mark.parametrize("build", [
    lambda: attention_stack(num_layers=3, hidden_dim=16, num_heads=2),
    lambda: conv_stack(num_layers=3, channels=8),
])
def test_hooks_equal_sliced_forward(images, build):
    torch.manual_seed(1)
    model = build()
    model.train()  # collect_activations switches to eval and back
    acts = collect_activations(model, images)
    assert model.training
    model.eval()
    with torch.no_grad():
        h = model.embed(images)
        if "embed" in acts:
            torch.testing.assert_close(torch.from_numpy(acts["embed"]).float(), h.flatten(1))
        for i, layer in enumerate(model.layers, start=1):
            h = layer(h)  # each layer sees only the previous layer's output: no skip
            torch.testing.assert_close(torch.from_numpy(acts[f"layer{i}"]).float(), h.flatten(1),
                                       rtol=1e-5, atol=1e-6)
        pooled = model.pool(h)
        torch.testing.assert_close(torch.from_numpy(acts["pool"]).float(), pooled.flatten(1))
        torch.testing.assert_close(model.head(pooled.flatten(1)), model(images))


@pytest.mark.parametrize("build", [attention_stack, conv_stack])
def test_no_normalization_no_residual_no_inplace(build):
    model = build()
    assert not [m for m in model.modules() if isinstance(m, NORM_TYPES)]
    names = {type(m).__name__ for m in model.modules()}
    assert not {n for n in names if "Norm" in n or "Block" in n or "Residual" in n}
    assert all(not getattr(m, "inplace", False) for m in model.modules())
    # Each layer is one nonlinearity after one linear map (attention or convolution).
    for layer in model.layers:
        kinds = [type(m).__name__ for m in layer.modules() if not list(m.children())]
        assert kinds in (["NonDynamicallyQuantizableLinear", "GELU"], ["Conv2d", "ReLU"])


def test_attention_stack_tokens_not_collapsed_at_init(images):
    # The initialisation keeps tokens apart after the first layer (PyTorch's default does not).
    torch.manual_seed(0)
    model = attention_stack().eval()
    with torch.no_grad():
        h = model.layers.layer1(model.embed(images))
    assert (h - h.mean(dim=1, keepdim=True)).std() > 0.05


@pytest.mark.parametrize("call,match", [
    (lambda: attention_stack(image_size=28, patch_size=5), "not divisible by patch_size"),
    (lambda: attention_stack(hidden_dim=10, num_heads=4), "not divisible by num_heads"),
    (lambda: attention_stack(num_layers=0), "num_layers must be a positive integer"),
    (lambda: attention_stack(activation="tanh"), "activation must be one of"),
    (lambda: conv_stack(kernel_size=4), "kernel_size must be odd"),
    (lambda: conv_stack(num_layers=2, strides=[1]), "strides must be 2 entries"),
    (lambda: conv_stack(channels=2.5), "channels must be a positive integer"),
])
def test_bad_parameters_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("build", [attention_stack, conv_stack])
def test_cuda_activations_match_cpu(images, build, monkeypatch):
    # TF32 (cuDNN's default for convolutions) rounds to ~1e-3; compare in full float32.
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    torch.manual_seed(0)
    model = build()
    cpu = collect_activations(model, images)
    gpu = collect_activations(model.cuda(), images)  # inputs moved to the model's device
    for label in cpu:
        np.testing.assert_allclose(gpu[label], cpu[label], rtol=1e-3, atol=1e-4)
