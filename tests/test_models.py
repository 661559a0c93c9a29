"""Models: shapes, probe labels, and hooks that capture exactly what a sliced forward computes."""

import pytest
import torch
from torch import nn

from topolip.nets.models import build_model
from topolip.nets.models.probes import collect_activations, probe_labels


@pytest.fixture(scope="module")
def x():
    return torch.rand(6, 1, 28, 28, generator=torch.Generator().manual_seed(0))


def test_vit_hooks_match_sliced_forward(x):
    torch.manual_seed(0)
    model = build_model("vit", num_layers=2, hidden_dim=16, mlp_dim=32, num_heads=2).eval()
    acts = collect_activations(model, x)
    with torch.no_grad():
        tokens = model._process_input(x)  # (N, 16, 16): patches as tokens
        tokens = torch.cat([model.class_token.expand(len(x), -1, -1), tokens], dim=1)
        h = tokens + model.encoder.pos_embedding  # (N, 17, 16)
        expected = {"embed": h}
        for i, block in enumerate(model.encoder.layers):
            h = block(h)
            expected[f"block{i + 1}"] = h
        expected["final_norm"] = model.encoder.ln(h)
    assert list(acts) == ["input", "embed", "block1", "block2", "final_norm"]
    for label, t in expected.items():
        assert acts[label].shape == (6, 17 * 16)
        assert torch.allclose(torch.from_numpy(acts[label]).float(), t.flatten(1), atol=1e-6)


def test_resnet_hooks_match_sliced_forward_and_survive_relu(x):
    torch.manual_seed(0)
    model = build_model("resnet", width=4, blocks=(2, 1, 1, 1)).eval()
    acts = collect_activations(model, x)
    with torch.no_grad():
        h = model.relu(model.bn1(model.conv1(x)))
        expected = {"stem": h}
        k = 0
        for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
            for block in stage:
                h = block(h)
                k += 1
                expected[f"block{k}"] = h
        expected["pool"] = model.avgpool(h)
    assert probe_labels(model) == ["input", "stem", *[f"block{i}" for i in range(1, 6)], "pool"]
    for label, t in expected.items():
        assert torch.allclose(torch.from_numpy(acts[label]).float(), t.flatten(1), atol=1e-6)
    # the stem output precedes a ReLU in block1: nothing in-place may rewrite it
    assert (acts["stem"] >= 0).all()
    assert not any(getattr(m, "inplace", False) for m in model.modules())


def test_collect_restores_train_mode_and_batches_agree(x):
    model = build_model("resnet", width=4).train()
    a = collect_activations(model, x, batch_size=2)
    b = collect_activations(model, x, batch_size=6)
    assert model.training
    for label in a:
        assert abs(a[label] - b[label]).max() < 1e-5


def test_bad_inputs_raise_clear_errors(x):
    model = build_model("resnet", width=4)
    with pytest.raises(ValueError, match="unknown arch 'vgg'"):
        build_model("vgg")
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['depth'\]"):
        build_model("vit", depth=2)
    with pytest.raises(ValueError, match="not divisible by patch_size"):
        build_model("vit", patch_size=5)
    with pytest.raises(ValueError, match="NaN or inf pixels"):
        collect_activations(model, torch.full((2, 1, 28, 28), float("nan")))
    with pytest.raises(ValueError, match=r"non-empty floating \(N, C, H, W\)"):
        collect_activations(model, torch.zeros(1, 28, 28))
    with pytest.raises(ValueError, match="no probe_points"):
        collect_activations(nn.Linear(2, 2), x)


def _legacy_resnet(*, in_channels=1, width=16, blocks=(1, 1, 1, 1), stem_kernel=3,
                   num_classes=10):
    """The former construction (up to the probe points): build torchvision's ImageNet ResNet,
    then replace its stem and stages with torchvision's private ``_make_layer``. The oracle of
    :func:`test_resnet_is_unchanged_by_the_rebuild`; nothing else uses it."""
    from torchvision.models.resnet import BasicBlock, ResNet

    model = ResNet(BasicBlock, list(blocks), num_classes=num_classes)
    model.inplanes = width
    model.conv1 = nn.Conv2d(in_channels, width, kernel_size=stem_kernel, stride=1,
                            padding=stem_kernel // 2, bias=False)
    model.bn1 = nn.BatchNorm2d(width)
    model.maxpool = nn.Identity()
    model.layer1 = model._make_layer(BasicBlock, width, blocks[0])
    model.layer2 = model._make_layer(BasicBlock, 2 * width, blocks[1], stride=2)
    model.layer3 = model._make_layer(BasicBlock, 4 * width, blocks[2], stride=2)
    model.layer4 = model._make_layer(BasicBlock, 8 * width, blocks[3], stride=2)
    model.fc = nn.Linear(8 * width, num_classes)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.ReLU):
            m.inplace = False
    return model


@pytest.mark.parametrize("params", [
    {}, {"width": 4, "blocks": (2, 1, 1, 2), "stem_kernel": 5},
    {"in_channels": 3, "width": 8, "num_classes": 7},
])
def test_resnet_is_unchanged_by_the_rebuild(params):
    """Same seed, same state_dict (keys, shapes, values), same logits, same RNG state after."""
    torch.manual_seed(123)
    old = _legacy_resnet(**params).eval()
    after_old = torch.random.get_rng_state()
    torch.manual_seed(123)
    new = build_model("resnet", **params).eval()
    assert torch.equal(torch.random.get_rng_state(), after_old)
    a, b = old.state_dict(), new.state_dict()
    assert list(a) == list(b)
    for key in a:
        assert torch.equal(a[key], b[key]), key
    g = torch.Generator().manual_seed(1)
    x = torch.rand(3, params.get("in_channels", 1), 28, 28, generator=g)
    with torch.no_grad():
        assert torch.equal(old(x), new(x))
    assert [n for n, _ in old.named_modules()] == [n for n, _ in new.named_modules()]
