"""Lipschitz bounds: exact constants, estimate <= bound on every supported type, the convolution
bound against a dense SVD, errors, and the certified displacement chain / envelope on models."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch
from scipy.special import ndtr
from threadpoolctl import threadpool_limits
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck
from torchvision.models.vision_transformer import EncoderBlock, MLPBlock

from topolip.bounds.activations import GELU_LIPSCHITZ
from topolip.bounds.attention import L2SelfAttention, dot_product_attention_lipschitz, mha_lipschitz
from topolip.bounds.blocks import Residual
from topolip.bounds.conv import conv2d_norm_bounds
from topolip.bounds.dispatch import lipschitz_bound, supported_types
from topolip.bounds.estimate import lipschitz_estimate
from topolip.bounds.segments import BoundViolation, layer_bounds, model_segments
from topolip.nets.models import build_model
from topolip.nets.models.probes import collect_activations
from topolip.nets.models.vit import ViTEmbedding

RTOL = 1e-6  # estimate <= bound * (1 + RTOL): float64 power iteration is exact to ~1e-12


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The layers here are tiny: one intra-op thread is faster, and much faster on a busy machine
    (idle OpenMP workers spin). Restored after the module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):  # numpy/scipy BLAS
        yield
    torch.set_num_threads(before)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def dense_operator_norm(conv: nn.Conv2d, hw: tuple[int, int]) -> float:
    """‖T‖₂ of the convolution on (C, H, W) inputs, from the dense matrix (bias removed)."""
    conv = conv.double()
    c, (h, w) = conv.in_channels, hw
    basis = torch.eye(c * h * w, dtype=torch.float64).reshape(-1, c, h, w)
    with torch.no_grad():
        cols = conv(basis) - conv(torch.zeros(1, c, h, w, dtype=torch.float64))
    return torch.linalg.matrix_norm(cols.reshape(c * h * w, -1), 2).item()


# --------------------------------------------------------------------------- exact constants


def test_linear_is_its_largest_singular_value():
    u, _ = torch.linalg.qr(torch.randn(5, 5, generator=gen(0)))
    v, _ = torch.linalg.qr(torch.randn(3, 3, generator=gen(1)))
    lin = nn.Linear(3, 5)
    lin.weight.data = (u[:, :3] @ torch.diag(torch.tensor([2.5, 1.0, 0.3])) @ v.T).float()
    x = torch.randn(7, 3, generator=gen(2))
    sigma = torch.linalg.matrix_norm(lin.weight.double(), 2).item()
    assert lipschitz_bound(lin, x) == pytest.approx(sigma, rel=1e-8)
    assert lipschitz_estimate(lin, x) == pytest.approx(sigma, rel=1e-8)
    # on token inputs (m, n, d) the per-sample map is block diagonal: same constant
    assert lipschitz_bound(lin, torch.randn(4, 6, 3)) == pytest.approx(sigma, rel=1e-8)


def test_one_by_one_convolution_is_the_channel_matrix():
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 6, kernel_size=1)
    w = conv.weight.detach()[:, :, 0, 0].double()
    sigma = torch.linalg.matrix_norm(w, 2).item()
    x = torch.randn(3, 4, 5, 7, generator=gen(0))
    assert sigma <= lipschitz_bound(conv, x) <= sigma * 1.001
    assert lipschitz_estimate(conv, x, n_iter=300) == pytest.approx(sigma, rel=1e-6)


def test_diagonal_batchnorm_is_its_largest_slope():
    bn = nn.BatchNorm2d(3, eps=0.0)
    bn.running_var.copy_(torch.tensor([4.0, 0.25, 1.0]))
    bn.weight.data.copy_(torch.tensor([1.0, -0.75, 2.0]))
    bn.train()  # the bound is the eval-mode map whatever the flag, and the flag is restored
    x = torch.randn(5, 3, 4, 4, generator=gen(0))
    assert lipschitz_bound(bn, x) == pytest.approx(2.0, rel=1e-12)  # max(1/2, 0.75/0.5, 2/1)
    assert lipschitz_estimate(bn, x) == pytest.approx(2.0, rel=1e-9)
    assert bn.training


def test_activation_constants():
    x = torch.linspace(-6, 6, 121).reshape(11, 11)
    assert lipschitz_bound(nn.ReLU(), x) == 1.0
    # GELU' = Φ(t) + tφ(t) peaks at t = √2
    t = np.linspace(-8, 8, 400_001)
    deriv = ndtr(t) + t * np.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    assert GELU_LIPSCHITZ == pytest.approx(np.abs(deriv).max(), abs=1e-10)
    assert GELU_LIPSCHITZ == pytest.approx(1.1289041, abs=1e-7)
    at_peak = torch.full((1, 3), math.sqrt(2.0))
    assert lipschitz_estimate(nn.GELU(), at_peak) == pytest.approx(GELU_LIPSCHITZ, rel=1e-9)
    assert lipschitz_bound(nn.GELU(approximate="tanh"), x) == pytest.approx(1.1290, abs=2e-4)
    assert lipschitz_bound(nn.Sigmoid(), x) == 0.25
    assert lipschitz_bound(nn.LeakyReLU(-2.0), x) == 2.0


def test_layernorm_local_bound_and_margin():
    ln = nn.LayerNorm(4, eps=0.0)
    x = torch.tensor([[[1.0, -1.0, 1.0, -1.0], [2.0, -2.0, 2.0, -2.0]]])  # σ = 1 and 2
    assert lipschitz_bound(ln, x) == pytest.approx(1.0)
    assert lipschitz_bound(ln, x, margin=1.0) == pytest.approx(2.0)  # σ ≥ 1 − 1/√4
    # pairs within the margin obey the margin bound
    torch.manual_seed(0)
    ln = nn.LayerNorm(8)
    x = torch.randn(64, 5, 8)
    delta = 0.5
    bound = lipschitz_bound(ln, x, margin=delta)
    d = torch.randn_like(x)
    x_t = x + delta * d / d.flatten(1).norm(dim=1)[:, None, None]
    with torch.no_grad():
        ratio = ((ln(x_t) - ln(x)).flatten(1).norm(dim=1) / delta).max().item()
    assert ratio <= bound


def test_pooling_constants():
    x = torch.randn(2, 3, 6, 6, generator=gen(0))
    assert lipschitz_bound(nn.AdaptiveAvgPool2d(1), x) == pytest.approx(1 / 6)
    assert lipschitz_bound(nn.AvgPool2d(2), x) == pytest.approx(0.5)
    assert lipschitz_bound(nn.MaxPool2d(2), x) == 1.0
    assert lipschitz_estimate(nn.AdaptiveAvgPool2d(1), x) == pytest.approx(1 / 6, rel=1e-9)


# --------------------------------------------------------------------------- convolution


CONV_CASES = [
    dict(cin=1, cout=1, k=3, stride=1, padding=1, hw=(7, 7)),
    dict(cin=3, cout=5, k=3, stride=2, padding=1, hw=(9, 8)),
    dict(cin=4, cout=2, k=5, stride=1, padding=2, hw=(6, 6)),
    dict(cin=2, cout=4, k=3, stride=1, padding=2, dilation=2, hw=(6, 7)),
    dict(cin=4, cout=4, k=3, stride=1, padding=1, groups=2, hw=(6, 6)),
    dict(cin=2, cout=3, k=3, stride=1, padding=0, hw=(5, 6)),
    dict(cin=2, cout=3, k=3, stride=1, padding="same", hw=(6, 6)),
    dict(cin=2, cout=3, k=3, stride=1, padding=1, mode="circular", hw=(6, 6)),
    dict(cin=2, cout=3, k=3, stride=1, padding=1, mode="reflect", hw=(6, 6)),
    dict(cin=2, cout=3, k=3, stride=2, padding=1, mode="replicate", hw=(7, 6)),
    dict(cin=1, cout=8, k=7, stride=7, padding=0, hw=(14, 14)),  # ViT patch embedding
    dict(cin=8, cout=8, k=3, stride=1, padding=1, hw=(12, 12)),
]


def _case_id(case):
    return "-".join(f"{k}{v}" for k, v in case.items())


@pytest.mark.parametrize("case", CONV_CASES, ids=_case_id)
def test_conv_bound_against_dense_svd(case):
    torch.manual_seed(zlib.crc32(repr(case).encode()))
    conv = nn.Conv2d(case["cin"], case["cout"], case["k"], stride=case["stride"],
                     padding=case["padding"], dilation=case.get("dilation", 1),
                     groups=case.get("groups", 1), padding_mode=case.get("mode", "zeros"))
    exact = dense_operator_norm(conv, case["hw"])
    b = conv2d_norm_bounds(conv, case["hw"])
    assert exact <= b.upper <= exact * 1.01, (b, exact)          # certified and tight to 1 %
    assert b.cheap >= exact * (1 - 1e-12)
    if case.get("mode", "zeros") == "zeros":
        assert b.circular >= exact * (1 - 1e-12)
    assert b.lower <= exact * (1 + 1e-6)
    assert lipschitz_estimate(conv, torch.randn(1, case["cin"], *case["hw"]), n_iter=60) \
        <= b.upper * (1 + RTOL)


def test_conv_bound_is_certified_when_circular_is_loose():
    # all-ones 3×3 kernel on 7×7: ‖T‖ = (1 + 2cos(π/8))² ≈ 8.11, circular bound 9
    conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
    conv.weight.data.fill_(1.0)
    exact = (1 + 2 * math.cos(math.pi / 8)) ** 2
    b = conv2d_norm_bounds(conv, (7, 7))
    assert b.method == "cholesky" and exact <= b.upper <= exact * 1.001
    assert b.circular == pytest.approx(9.0) and b.cheap == pytest.approx(9.0)


def test_conv_falls_back_to_circular_without_memory():
    torch.manual_seed(0)
    conv = nn.Conv2d(2, 2, 3, padding=1)
    b = conv2d_norm_bounds(conv, (6, 6), max_band_entries=10)
    assert b.method in ("circular", "cheap") and math.isnan(b.cholesky)
    assert b.upper >= dense_operator_norm(conv, (6, 6))


# --------------------------------------------------------------------------- estimate <= bound


def _encoder_block(d=16, heads=4, mlp=32):
    return EncoderBlock(heads, d, mlp, 0.0, 0.0)


def _random_bn(bn):
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.2, 3.0)
    bn.weight.data.normal_()
    return bn


def _cases():
    """(name, module factory, input factory): random layers of every supported kind."""
    img = lambda c, s=8: (lambda g: torch.randn(6, c, s, s, generator=g))  # noqa: E731
    tok = lambda n, d, scale=1.0: (lambda g: scale * torch.randn(6, n, d, generator=g))  # noqa: E731
    vec = lambda d: (lambda g: torch.randn(6, d, generator=g))  # noqa: E731
    down = lambda: nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False),  # noqa: E731
                                 _random_bn(nn.BatchNorm2d(8)))
    return [
        ("linear", lambda: nn.Linear(5, 7), vec(5)),
        ("conv", lambda: nn.Conv2d(3, 4, 3, padding=1), img(3)),
        ("conv-stride2", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), img(3)),
        ("batchnorm1d", lambda: _random_bn(nn.BatchNorm1d(5)), vec(5)),
        ("batchnorm2d", lambda: _random_bn(nn.BatchNorm2d(3)), img(3)),
        ("layernorm", lambda: nn.LayerNorm(6), tok(4, 6)),
        ("relu", nn.ReLU, vec(5)), ("gelu", nn.GELU, vec(5)), ("tanh", nn.Tanh, vec(5)),
        ("silu", nn.SiLU, vec(5)), ("sigmoid", nn.Sigmoid, vec(5)), ("elu", nn.ELU, vec(5)),
        ("avgpool", lambda: nn.AvgPool2d(3, stride=2, padding=1), img(2)),
        ("adaptive-avgpool", lambda: nn.AdaptiveAvgPool2d((3, 2)), img(2)),
        ("maxpool", lambda: nn.MaxPool2d(3, stride=1, padding=1), img(2)),
        ("mha", lambda: nn.MultiheadAttention(8, 2, batch_first=True), tok(5, 8, 2.0)),
        ("mha-seq-first", lambda: nn.MultiheadAttention(8, 4), tok(7, 8, 0.5)),
        ("mha-one-token", lambda: nn.MultiheadAttention(8, 2, batch_first=True), tok(1, 8)),
        ("l2-attention", lambda: L2SelfAttention(8, 2), tok(6, 8, 2.0)),
        ("mlp", lambda: nn.Sequential(nn.Linear(5, 9), nn.GELU(), nn.Linear(9, 4)), vec(5)),
        ("mlp-block", lambda: MLPBlock(8, 16, 0.0), tok(5, 8)),
        ("conv-bn-relu", lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1),
                                               _random_bn(nn.BatchNorm2d(4)), nn.ReLU()), img(2)),
        ("residual", lambda: Residual(nn.Sequential(nn.Linear(5, 5), nn.Tanh())), vec(5)),
        ("basic-block", lambda: _random_block(BasicBlock(4, 4)), img(4)),
        ("basic-block-down", lambda: _random_block(BasicBlock(4, 8, stride=2, downsample=down())),
         img(4)),
        ("bottleneck", lambda: _random_block(Bottleneck(8, 2)), img(8)),
        ("encoder-block", _encoder_block, tok(5, 16, 1.0)),
        ("encoder-block-wide", lambda: _encoder_block(8, 2, 8), tok(9, 8, 3.0)),
    ]


def _random_block(block):
    for m in block.modules():
        if isinstance(m, nn.BatchNorm2d):
            _random_bn(m)
    return block


@pytest.mark.parametrize("name,make,inputs", _cases(), ids=[c[0] for c in _cases()])
@pytest.mark.parametrize("seed", [0, 1])
def test_estimate_never_exceeds_bound(name, make, inputs, seed):
    torch.manual_seed(seed)
    module = make()
    x = inputs(gen(seed + 100))
    bound = lipschitz_bound(module, x)
    est = lipschitz_estimate(module, x, n_iter=20, seed=seed)
    assert 0 < est <= bound * (1 + RTOL), (name, est, bound)


@pytest.mark.parametrize("make,scale", [
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), 2.0),
    (_encoder_block, 1.0),
    (lambda: nn.LayerNorm(8), 1.0),
])
def test_margin_bound_holds_for_pairs(make, scale):
    torch.manual_seed(3)
    module = make().eval()
    d = 8 if not isinstance(module, EncoderBlock) else 16
    x = scale * torch.randn(32, 5, d)
    delta = 0.3
    bound = lipschitz_bound(module, x, margin=delta)
    step = torch.randn_like(x)
    x_t = x + delta * torch.rand(32, 1, 1) * step / step.flatten(1).norm(dim=1)[:, None, None]
    f = (lambda z: module(z, z, z, need_weights=False)[0]) \
        if isinstance(module, nn.MultiheadAttention) else module
    with torch.no_grad():
        num = (f(x_t) - f(x)).flatten(1).norm(dim=1)
    den = (x_t - x).flatten(1).norm(dim=1)
    assert (num <= bound * den * (1 + 1e-4) + 1e-6).all()


def test_l2_attention_bound_is_global():
    torch.manual_seed(0)
    att = L2SelfAttention(8, 2)
    with torch.no_grad():
        att.q_weight.mul_(2.0)
    bound = lipschitz_bound(att, torch.randn(2, 6, 8))
    for scale in (0.1, 1.0, 10.0, 100.0):  # the bound does not depend on where we look
        assert lipschitz_estimate(att, scale * torch.randn(8, 6, 8), n_iter=20) <= bound


@pytest.mark.parametrize("kind", ["mha", "l2"])
def test_gradient_ascent_on_the_jacobian_stays_below_bound(kind):
    """A worst-case search (Adam on ‖J(X)v‖ over X in the token ball and unit v) cannot beat the
    bound: a much stronger check than random points for the attention bounds."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(5)
    n, d, radius = 4, 4, 3.0
    if kind == "mha":
        mha = nn.MultiheadAttention(d, 2, batch_first=True).double()
        f = lambda z: mha(z, z, z, need_weights=False)[0]  # noqa: E731
        bound = mha_lipschitz(mha, radius, n)
    else:
        f = L2SelfAttention(d, 1).double()
        with torch.no_grad():
            f.q_weight.mul_(2.0)
        bound = lipschitz_bound(f, torch.randn(1, n, d))
        radius = None
    x = (torch.randn(8, n, d, dtype=torch.float64) * 2).requires_grad_()
    v = torch.randn(8, n, d, dtype=torch.float64).requires_grad_()
    opt = torch.optim.Adam([x, v], lr=0.05)
    best = 0.0
    with sdpa_kernel(SDPBackend.MATH):
        for _ in range(150):
            xp = x if radius is None else x * torch.clamp(radius / x.norm(dim=-1, keepdim=True),
                                                           max=1.0)
            vn = v / v.flatten(1).norm(dim=1)[:, None, None]
            _, jv = torch.func.jvp(f, (xp,), (vn,))
            val = jv.flatten(1).norm(dim=1)
            best = max(best, val.max().item())
            opt.zero_grad()
            (-val.sum()).backward()
            opt.step()
    assert best <= bound, (best, bound)
    assert best > bound / 50  # the search found a steep point: the check is not vacuous


def test_attention_bound_grows_like_sqrt_n_then_saturates():
    eye = torch.eye(4)
    b = [dot_product_attention_lipschitz(eye, eye, eye, eye, 2, radius=2.0, n_tokens=n)
         for n in (4, 16, 64, 10**6)]
    assert 1.5 < b[1] / b[0] < 2.0 and 1.3 < b[2] / b[1] < 2.0
    assert b[3] < 10 * b[2]  # bounded in n once n ≫ exp(spread)


# --------------------------------------------------------------------------- errors


def test_unsupported_type_is_named():
    with pytest.raises(TypeError, match=r"Softmax .*supported: .*Conv2d"):
        lipschitz_bound(nn.Softmax(dim=-1), torch.randn(2, 3))

    class MyLinear(nn.Linear):  # a subclass with its own forward is not a Linear
        def forward(self, x):
            return super().forward(x) ** 2

    with pytest.raises(TypeError, match="MyLinear"):
        lipschitz_bound(MyLinear(3, 3), torch.randn(2, 3))
    with pytest.raises(TypeError, match="GRU"):
        lipschitz_bound(nn.Sequential(nn.Linear(3, 3), nn.GRU(3, 3)), torch.randn(2, 3))
    assert "EncoderBlock" in supported_types()


def test_bad_inputs():
    lin = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="NaN"):
        lipschitz_bound(lin, torch.tensor([[0.0, math.nan, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        lipschitz_estimate(lin, torch.tensor([[0.0, math.inf, 1.0]]))
    with pytest.raises(ValueError, match=r"Linear expects inputs of shape \(m, \.\.\., 3\)"):
        lipschitz_bound(lin, torch.randn(2, 4))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        lipschitz_bound(lin, torch.randn(3))
    with pytest.raises(ValueError, match="empty"):
        lipschitz_bound(lin, torch.randn(0, 3))
    with pytest.raises(ValueError, match="margin"):
        lipschitz_bound(lin, torch.randn(2, 3), margin=-1.0)
    with pytest.raises(ValueError, match="Conv2d expects"):
        lipschitz_bound(nn.Conv2d(3, 2, 3), torch.randn(2, 1, 5, 5))
    with pytest.raises(ValueError, match="track_running_stats"):
        lipschitz_bound(nn.BatchNorm1d(3, track_running_stats=False), torch.randn(2, 3))
    with pytest.raises(TypeError, match="torch.Tensor or numpy array"):
        lipschitz_bound(lin, [[1.0, 2.0, 3.0]])


# --------------------------------------------------------------------------- models


TINY = {"vit": dict(num_layers=2, hidden_dim=16, mlp_dim=32, num_heads=2),
        "resnet": dict(width=4)}


@pytest.fixture(scope="module")
def images():
    return torch.rand(12, 1, 28, 28, generator=gen(7))


@pytest.mark.parametrize("arch", sorted(TINY))
def test_segments_chain_to_the_probe_activations(arch, images):
    torch.manual_seed(0)
    model = build_model(arch, **TINY[arch]).eval()
    acts = collect_activations(model, images)
    h = images
    with torch.no_grad():
        for label, seg in model_segments(model).items():
            h = seg(h)
            np.testing.assert_allclose(h.flatten(1).double().numpy(), acts[label], atol=1e-5)


@pytest.mark.parametrize("arch", sorted(TINY))
def test_layer_bounds_certify_the_displacement_chain(arch, images):
    from topolip.topology.metric import topolip_table

    torch.manual_seed(1)
    model = build_model(arch, **TINY[arch])
    x_t = images + 0.05 * torch.randn(images.shape, generator=gen(3))
    table = layer_bounds(model, images, x_t, n_iter=10, estimate_samples=4)
    assert list(table["layer"]) == ["input", *model.probe_points]
    body = table.iloc[1:]
    assert (body["estimate"] <= body["bound"] * (1 + RTOL)).all()
    assert (body["eps"] <= body["eps_bound_step"] * (1 + 1e-6) + 1e-5).all()
    assert (table["eps"] <= table["eps_bound_chain"] * (1 + 1e-6) + 1e-5).all()
    assert np.allclose(body["chained_bound"], np.cumprod(body["bound"]))
    # the topological envelope: W_inf,inf <= 2 eps <= 2 Π Lip eps_0 on every layer
    acts = collect_activations(model, images)
    acts_t = collect_activations(model, x_t)
    topo = topolip_table(acts, acts_t)  # raises EnvelopeViolation if W_inf > 2 eps
    np.testing.assert_allclose(topo["eps"], table["eps"], rtol=1e-4, atol=1e-5)
    assert (topo["bottleneck"].to_numpy() <= table["envelope_chain"].to_numpy() + 1e-5).all()


def test_layer_bounds_without_pairs_and_errors(images):
    model = build_model("resnet", width=2)
    t = layer_bounds(model, images[:3], estimate=False)
    assert t["estimate"].iloc[1:].isna().all() and "eps" not in t
    assert t.loc[t["layer"] == "pool", "bound"].item() == pytest.approx(1 / 4)  # 4×4 → 1
    with pytest.raises(ValueError, match="shape of x"):
        layer_bounds(model, images[:3], images[:2])
    with pytest.raises(ValueError, match="no probe_points"):
        layer_bounds(nn.Linear(2, 2), images[:3])


def test_a_wrong_bound_is_caught(monkeypatch, images):
    import topolip.bounds.segments as seg

    monkeypatch.setattr(seg, "lipschitz_bound", lambda *_a, **_k: 1e-3)
    with pytest.raises(BoundViolation, match="exceeds"):
        layer_bounds(build_model("resnet", width=2), images[:3], n_iter=3)


def test_vit_embedding_bound_is_the_patch_projection(images):
    torch.manual_seed(0)
    vit = build_model("vit", **TINY["vit"])
    emb = ViTEmbedding(vit)
    w = vit.conv_proj.weight.detach().reshape(vit.conv_proj.out_channels, -1).double()
    sigma = torch.linalg.matrix_norm(w, 2).item()  # non-overlapping patches: block diagonal
    assert lipschitz_bound(emb, images) == pytest.approx(sigma, rel=1e-6)
    assert lipschitz_estimate(emb, images[:2], n_iter=100) == pytest.approx(sigma, rel=1e-4)


def test_plain_stacks(images):
    from topolip.nets.models import plain

    torch.manual_seed(0)
    for model in (plain.attention_stack(num_layers=2, hidden_dim=8, num_heads=2),
                  plain.conv_stack(num_layers=2, channels=4)):
        x_t = images + 0.05 * torch.randn_like(images)
        t = layer_bounds(model, images, x_t, n_iter=10, estimate_samples=4)
        assert list(t["layer"]) == ["input", *model.probe_points]
        assert (t["estimate"].iloc[1:] <= t["bound"].iloc[1:] * (1 + RTOL)).all()


def test_a_margin_that_is_not_a_number_is_named():
    from topolip.bounds._checks import check_margin

    with pytest.raises(ValueError, match=r"margin must be a finite number >= 0, got 'a'"):
        check_margin("a")
    with pytest.raises(ValueError, match=r"margin must be a finite number >= 0, got -1.0"):
        check_margin(-1)
    assert check_margin("0.5") == 0.5
