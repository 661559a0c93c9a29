"""Plain attention-only and convolution-only stacks: no residual connections, no normalization.

The earlier version of the paper (*"Feature Learning in Attention Mechanisms Is More Compact and
Stable Than in Convolution"*, arXiv:2410.17628v1) compared stacks of bare attention layers with
stacks of bare convolution layers. Its layer definitions are not available to us; these two
builders are the companion's formalization (the book's introduction (book/intro.md)):

- :func:`attention_stack`: patch embedding (a ``patch_size`` convolution with stride
  ``patch_size``) plus a learned position embedding, then ``num_layers`` layers
  ``x ↦ σ(MHA(x, x, x))`` (multi-head dot-product self-attention followed by a pointwise
  nonlinearity ``σ``, GELU by default), the mean over tokens and a linear head. No MLP block, no
  skip connection, no LayerNorm, no class token.
- :func:`conv_stack`: ``num_layers`` layers ``x ↦ σ(conv(x))`` (``kernel_size`` convolution with
  "same" padding, ReLU by default), stride 2 in layers 2, 4 and 6 (three halvings at most, so a
  28×28 image ends at 4×4 and deep stacks stay cheap on a CPU), global average pooling and a
  linear head.

Each layer is one submodule, ``layers.layer{i}`` (``i`` from 1), so the probe labels
``layer1`` .. ``layer{num_layers}`` name stable paths; no operation is in place, so tensors a
forward hook captured are never rewritten.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["attention_stack", "conv_stack"]

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}


def _check_positive_ints(builder: str, **values: int) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{builder}: {name} must be a positive integer, got {value!r}")


def _activation(builder: str, activation: str) -> nn.Module:
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"{builder}: activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}"
        )
    return _ACTIVATIONS[activation]()


class PatchEmbedding(nn.Module):
    """Patches to tokens: ``(N, C, H, W) -> (N, T, D)`` with ``T = (H/p)·(W/p)``, plus positions."""

    def __init__(self, in_channels: int, hidden_dim: int, patch_size: int, num_tokens: int):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.pos_embedding = nn.Parameter(torch.empty(1, num_tokens, hidden_dim))
        # LeCun normal patch projection (as vit.py); unit-variance positions (not the ViT's 0.02),
        # so tokens differ at initialisation and the first attention is not uniform.
        fan_in = in_channels * patch_size * patch_size
        nn.init.normal_(self.proj.weight, std=math.sqrt(1.0 / fan_in))
        nn.init.zeros_(self.proj.bias)
        nn.init.normal_(self.pos_embedding, std=1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)  # (N, D, H/p, W/p)
        x = x.flatten(2).transpose(1, 2)  # (N, T, D), tokens in row-major patch order
        return x + self.pos_embedding

    def lipschitz_parts(self) -> list[nn.Module]:
        """``proj``: the rest (a permutation, a constant shift) is an isometry."""
        return [self.proj]


class AttentionLayer(nn.Module):
    """``x ↦ σ(MHA(x, x, x))`` on tokens ``(N, T, D) -> (N, T, D)``: no skip, no norm, no MLP."""

    def __init__(self, hidden_dim: int, num_heads: int, activation: str):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden_dim, num_heads, batch_first=True)
        self.act = _activation("attention_stack", activation)
        # LeCun normal query/key/value maps, He normal output map (gain 2 for the nonlinearity
        # that follows), zero biases: the token scale then survives a few layers without norms.
        nn.init.normal_(self.attn.in_proj_weight, std=math.sqrt(1.0 / hidden_dim))
        nn.init.normal_(self.attn.out_proj.weight, std=math.sqrt(2.0 / hidden_dim))
        nn.init.zeros_(self.attn.in_proj_bias)
        nn.init.zeros_(self.attn.out_proj.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.attn(x, x, x, need_weights=False)
        return self.act(out)

    def lipschitz_parts(self) -> list[nn.Module]:
        """Self-attention, then the activation."""
        return [self.attn, self.act]


class TokenMean(nn.Module):
    """Mean over tokens, ``(N, T, D) -> (N, D)``."""

    lipschitz_kind = "token_mean"  # bounded by topolip.bounds as a mean over axis 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


class PlainStack(nn.Module):
    """``head ∘ flatten ∘ pool ∘ layers ∘ embed``, the layers run in order without skips."""

    def __init__(self, embed: nn.Module, layers: Sequence[nn.Module], pool: nn.Module,
                 head: nn.Module):
        super().__init__()
        self.embed = embed
        self.layers = nn.Sequential()
        for i, layer in enumerate(layers, start=1):
            self.layers.add_module(f"layer{i}", layer)
        self.pool = pool
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        x = self.layers(x)
        x = self.pool(x)
        return self.head(x.flatten(1))

    def forward_units(self) -> list[tuple[str, nn.Module]]:
        """The forward pass as ordered ``(submodule path, module)`` pairs, up to ``pool``."""
        return ([("embed", self.embed)]
                + [(f"layers.{name}", m) for name, m in self.layers.named_children()]
                + [("pool", self.pool)])


def attention_stack(
    *,
    image_size: int = 28,
    in_channels: int = 1,
    patch_size: int = 7,
    num_layers: int = 4,
    num_heads: int = 4,
    hidden_dim: int = 64,
    num_classes: int = 10,
    activation: str = "gelu",
) -> PlainStack:
    r"""Build an attention-only stack for ``(N, in_channels, image_size, image_size)`` images.

    .. math::
        h_0 = \mathrm{embed}(x), \quad h_\ell = \sigma(\mathrm{MHA}_\ell(h_{\ell-1})), \quad
        \mathrm{logits} = W \,\tfrac{1}{T}\textstyle\sum_t h_L[t] + b

    Parameters
    ----------
    image_size : int, default=28
        Side of the square input image, in pixels; must be divisible by ``patch_size``.
    in_channels : int, default=1
        Channels of the input (1 for MNIST, 3 for CIFAR-10).
    patch_size : int, default=7
        Side of the square patches; the layers see ``T = (image_size / patch_size)**2`` tokens.
    num_layers : int, default=4
        Number of attention layers.
    num_heads : int, default=4
        Heads of each ``torch.nn.MultiheadAttention``; must divide ``hidden_dim``.
    hidden_dim : int, default=64
        Token width ``D``.
    num_classes : int, default=10
        Number of output logits.
    activation : {"gelu", "relu"}, default="gelu"
        Pointwise nonlinearity ``σ`` after each attention layer (GELU, the Transformer's; its
        Lipschitz constant is about 1.13, ReLU's is 1).

    Returns
    -------
    PlainStack
        With ``probe_points`` (``embed``: the tokens plus positions, ``(N, T, D)``; ``layer1`` ..
        ``layer{num_layers}``: ``(N, T, D)``; ``pool``: ``(N, D)``; the input is the implicit
        first probe point) and ``arch == "attention_stack"``.

    Raises
    ------
    ValueError
        If a size is not a positive integer, ``image_size`` is not divisible by ``patch_size``,
        ``hidden_dim`` is not divisible by ``num_heads``, or ``activation`` is unknown.

    Notes
    -----
    Without skip connections, pure self-attention loses rank doubly exponentially with depth
    (Dong et al. 2021): every token tends to the same vector. With PyTorch's default
    initialisation (Xavier attention maps, a ViT's position embedding of s.d. 0.02) the tokens are
    so small that the first attention is uniform and all tokens equal their mean after one layer;
    the default 4-layer stack then reached 28 % MNIST test accuracy after 5 epochs (2,000 digits,
    Adam 1e-3, seed 0) against 81 % with the initialisation used here: position embedding
    N(0, 1), patch projection and query/key/value maps LeCun normal (s.d. ``1/√fan_in``),
    output map He normal (s.d. ``√(2/D)``), zero biases. Deep stacks still collapse and train
    poorly; that is part of what the comparison measures. Dot-product self-attention has no
    global Lipschitz constant (Kim et al. 2021).

    References
    ----------
    .. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention and
       Convolution Models Using a Novel Metric", arXiv:2410.17628.
    .. [2] Y. Dong, J.-B. Cordonnier, A. Loukas, "Attention is not all you need: pure attention
       loses rank doubly exponentially with depth", ICML 2021, arXiv:2103.03404.
    .. [3] H. Kim, G. Papamakarios, A. Mnih, "The Lipschitz Constant of Self-Attention",
       ICML 2021, arXiv:2006.04710.

    Examples
    --------
    >>> model = attention_stack(num_layers=2, hidden_dim=16)
    >>> model(torch.zeros(3, 1, 28, 28)).shape
    torch.Size([3, 10])
    >>> model.probe_points
    {'embed': 'embed', 'layer1': 'layers.layer1', 'layer2': 'layers.layer2', 'pool': 'pool'}
    """
    _check_positive_ints("attention_stack", image_size=image_size, in_channels=in_channels,
                         patch_size=patch_size, num_layers=num_layers, num_heads=num_heads,
                         hidden_dim=hidden_dim, num_classes=num_classes)
    if image_size % patch_size:
        raise ValueError(
            f"attention_stack: image_size={image_size} is not divisible by "
            f"patch_size={patch_size}; choose a patch size that tiles the image"
        )
    if hidden_dim % num_heads:
        raise ValueError(
            f"attention_stack: hidden_dim={hidden_dim} is not divisible by num_heads={num_heads}"
        )
    _activation("attention_stack", activation)
    num_tokens = (image_size // patch_size) ** 2
    model = PlainStack(
        embed=PatchEmbedding(in_channels, hidden_dim, patch_size, num_tokens),
        layers=[AttentionLayer(hidden_dim, num_heads, activation) for _ in range(num_layers)],
        pool=TokenMean(),
        head=nn.Linear(hidden_dim, num_classes),
    )
    model.probe_points = _probe_points(num_layers, embed=True)
    model.arch = "attention_stack"
    return model


def conv_stack(
    *,
    in_channels: int = 1,
    num_layers: int = 4,
    channels: int = 32,
    kernel_size: int = 3,
    num_classes: int = 10,
    activation: str = "relu",
    strides: Sequence[int] | None = None,
) -> PlainStack:
    r"""Build a convolution-only stack for ``(N, in_channels, H, W)`` images in [0, 1].

    .. math::
        h_0 = x, \quad h_\ell = \sigma(K_\ell * h_{\ell-1} + b_\ell), \quad
        \mathrm{logits} = W \,\mathrm{avgpool}(h_L) + b

    Parameters
    ----------
    in_channels : int, default=1
        Channels of the input (1 for MNIST, 3 for CIFAR-10).
    num_layers : int, default=4
        Number of convolution layers.
    channels : int, default=32
        Output channels of every layer (a constant width).
    kernel_size : int, default=3
        Odd side of the square kernels; padding ``kernel_size // 2`` ("same" at stride 1).
    num_classes : int, default=10
        Number of output logits.
    activation : {"relu", "gelu"}, default="relu"
        Pointwise nonlinearity ``σ`` after each convolution (ReLU, the CNN's).
    strides : sequence of int, optional
        Stride of each layer, ``num_layers`` entries in {1, 2}. Default: 2 in layers 2, 4 and 6,
        1 elsewhere (28×28 → 28, 14, 14, 7 for 4 layers; never below 4×4 for 28×28 inputs).

    Returns
    -------
    PlainStack
        With ``probe_points`` (``layer1`` .. ``layer{num_layers}``: ``(N, channels, H_ℓ, W_ℓ)``;
        ``pool``: ``(N, channels, 1, 1)``; the input is the implicit first probe point) and
        ``arch == "conv_stack"``.

    Raises
    ------
    ValueError
        If a size is not a positive integer, ``kernel_size`` is even, ``activation`` is unknown
        or ``strides`` has the wrong length or entries.

    Notes
    -----
    Weights use He (Kaiming) normal initialisation with fan-in, so activations keep their scale
    through a deep stack without normalization; biases start at zero.

    References
    ----------
    .. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention and
       Convolution Models Using a Novel Metric", arXiv:2410.17628.
    .. [2] K. He, X. Zhang, S. Ren, J. Sun, "Delving Deep into Rectifiers", ICCV 2015,
       arXiv:1502.01852.

    Examples
    --------
    >>> model = conv_stack(num_layers=3, channels=8)
    >>> model(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 10])
    >>> list(model.probe_points)
    ['layer1', 'layer2', 'layer3', 'pool']
    """
    _check_positive_ints("conv_stack", in_channels=in_channels, num_layers=num_layers,
                         channels=channels, kernel_size=kernel_size, num_classes=num_classes)
    if kernel_size % 2 == 0:
        raise ValueError(
            f"conv_stack: kernel_size must be odd for 'same' padding, got {kernel_size}"
        )
    _activation("conv_stack", activation)
    if strides is None:
        strides = [2 if i in (2, 4, 6) else 1 for i in range(1, num_layers + 1)]
    strides = list(strides)
    if len(strides) != num_layers or any(s not in (1, 2) for s in strides):
        raise ValueError(
            f"conv_stack: strides must be {num_layers} entries in {{1, 2}} (one per layer), "
            f"got {strides}"
        )
    layers = []
    for i in range(num_layers):
        conv = nn.Conv2d(in_channels if i == 0 else channels, channels, kernel_size,
                         stride=strides[i], padding=kernel_size // 2)
        nn.init.kaiming_normal_(conv.weight, mode="fan_in", nonlinearity="relu")
        nn.init.zeros_(conv.bias)
        layers.append(nn.Sequential(conv, _activation("conv_stack", activation)))
    model = PlainStack(embed=nn.Identity(), layers=layers, pool=nn.AdaptiveAvgPool2d(1),
                       head=nn.Linear(channels, num_classes))
    model.probe_points = _probe_points(num_layers, embed=False)
    model.arch = "conv_stack"
    return model


def _probe_points(num_layers: int, *, embed: bool) -> dict[str, str]:
    points = {"embed": "embed"} if embed else {}
    points.update({f"layer{i}": f"layers.layer{i}" for i in range(1, num_layers + 1)})
    points["pool"] = "pool"
    return points
