"""Small Vision Transformers built from :class:`torchvision.models.VisionTransformer`.

torchvision's class hard-codes 3 input channels in its patch embedding; :func:`vit` swaps in a
patch embedding with ``in_channels`` channels, keeps everything else (pre-norm encoder blocks
``encoder.layers.encoder_layer_{i}``, class token, learned position embedding, final LayerNorm
``encoder.ln``) and records the probe points of the book's introduction (book/intro.md) on the
model.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torchvision.models import VisionTransformer

__all__ = ["SmallViT", "ViTEmbedding", "vit"]


class ViTEmbedding(nn.Module):
    """The embedding segment of a torchvision ViT: image ``(m, C, H, W)`` to tokens.

    Shares (does not copy) ``conv_proj``, ``class_token``, ``encoder.pos_embedding`` and
    ``encoder.dropout`` of ``vit``; its output is what the ``embed`` probe (``encoder.dropout``)
    records, of shape ``(m, n_patches + 1, hidden_dim)``, class token first.

    Parameters
    ----------
    vit : torchvision.models.VisionTransformer
        The model whose embedding this is (its weights are shared, not copied).

    Notes
    -----
    The map is ``x ↦ dropout(cat(c, P(conv_proj(x))) + E)`` with ``P`` a permutation of
    coordinates, ``c`` and ``E`` constants: an affine map whose Lipschitz constant is that of
    ``conv_proj`` on the image (dropout is the identity in eval mode). It declares so with
    :meth:`lipschitz_parts`.

    Examples
    --------
    >>> model = vit(num_layers=1, hidden_dim=8, mlp_dim=8, num_heads=2)
    >>> ViTEmbedding(model)(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 17, 8])
    """

    def __init__(self, vit: VisionTransformer):
        super().__init__()
        if not isinstance(vit, VisionTransformer):
            raise TypeError(f"expected a torchvision VisionTransformer, got {type(vit).__name__}")
        self.conv_proj = vit.conv_proj
        self.class_token = vit.class_token
        self.pos_embedding = vit.encoder.pos_embedding
        self.dropout = vit.encoder.dropout
        self.hidden_dim = vit.hidden_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed images ``(m, C, H, W)`` into tokens ``(m, n_patches + 1, hidden_dim)``."""
        m = x.shape[0]
        y = self.conv_proj(x)                                   # (m, hidden, n_h, n_w)
        y = y.reshape(m, self.hidden_dim, -1).permute(0, 2, 1)  # (m, n_h·n_w, hidden)
        y = torch.cat([self.class_token.expand(m, -1, -1), y], dim=1)
        return self.dropout(y + self.pos_embedding)

    def lipschitz_parts(self) -> list[nn.Module]:
        """The non-isometric part of the map, for
        :func:`topolip.bounds.dispatch.lipschitz_bound`."""
        return [self.conv_proj]


class SmallViT(VisionTransformer):
    """torchvision's VisionTransformer (same forward, same ``state_dict``) that names its own
    forward units for :func:`topolip.bounds.segments.model_segments`; built by :func:`vit`."""

    def forward_units(self) -> list[tuple[str, nn.Module]]:
        """The forward pass as ordered ``(submodule path, module)`` pairs, up to ``encoder.ln``.

        The embedding (patch projection, class token, positions: no submodule of its own) is
        the :class:`ViTEmbedding` unit at path ``encoder.dropout``; then the encoder blocks and
        the final LayerNorm. Every probe point is one of the paths.
        """
        enc = self.encoder
        return ([("encoder.dropout", ViTEmbedding(self))]
                + [(f"encoder.layers.{name}", m) for name, m in enc.layers.named_children()]
                + [("encoder.ln", enc.ln)])


def vit(
    *,
    image_size: int = 28,
    in_channels: int = 1,
    patch_size: int = 7,
    num_layers: int = 4,
    num_heads: int = 4,
    hidden_dim: int = 64,
    mlp_dim: int = 128,
    num_classes: int = 10,
    dropout: float = 0.0,
) -> SmallViT:
    """Build a small ViT for ``(N, in_channels, image_size, image_size)`` images in [0, 1].

    Parameters
    ----------
    image_size : int, default=28
        Side of the square input image, in pixels; must be divisible by ``patch_size``.
    in_channels : int, default=1
        Channels of the input (1 for MNIST, 3 for CIFAR-10).
    patch_size : int, default=7
        Side of the square patches; the encoder sees ``(image_size / patch_size)**2 + 1`` tokens
        (the patches and the class token).
    num_layers, num_heads, hidden_dim, mlp_dim : int
        Depth, attention heads, token width and MLP width of the encoder; ``hidden_dim`` must be
        divisible by ``num_heads``.
    num_classes : int, default=10
        Number of output logits.
    dropout : float, default=0.0
        Dropout rate of the encoder (0 keeps the map deterministic even in train mode).

    Returns
    -------
    SmallViT
        A torchvision ``VisionTransformer`` with attribute ``probe_points``: ordered
        ``{label: submodule path}`` of the probed layers (``embed``, ``block1`` ..
        ``block{num_layers}``, ``final_norm``); the input is the implicit first probe point.

    Raises
    ------
    ValueError
        If ``image_size`` is not divisible by ``patch_size`` or ``hidden_dim`` by ``num_heads``.

    Examples
    --------
    >>> model = vit(num_layers=2, hidden_dim=32, mlp_dim=64)
    >>> model(torch.zeros(3, 1, 28, 28)).shape
    torch.Size([3, 10])
    >>> list(model.probe_points)
    ['embed', 'block1', 'block2', 'final_norm']
    """
    for name, value in dict(image_size=image_size, in_channels=in_channels, patch_size=patch_size,
                            num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
                            mlp_dim=mlp_dim, num_classes=num_classes).items():
        if int(value) != value or value < 1:
            raise ValueError(f"vit: {name} must be a positive integer, got {value!r}")
    if image_size % patch_size:
        raise ValueError(
            f"vit: image_size={image_size} is not divisible by patch_size={patch_size}; "
            "choose a patch size that tiles the image"
        )
    if hidden_dim % num_heads:
        raise ValueError(
            f"vit: hidden_dim={hidden_dim} is not divisible by num_heads={num_heads}"
        )
    model = SmallViT(
        image_size=image_size, patch_size=patch_size, num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, dropout=dropout,
        attention_dropout=dropout, num_classes=num_classes,
    )
    # Patch embedding for `in_channels` channels, initialised as torchvision does (LeCun normal).
    model.conv_proj = nn.Conv2d(in_channels, hidden_dim, kernel_size=patch_size, stride=patch_size)
    fan_in = in_channels * patch_size * patch_size
    nn.init.trunc_normal_(model.conv_proj.weight, std=math.sqrt(1.0 / fan_in))
    nn.init.zeros_(model.conv_proj.bias)
    # Encoder.forward: ln(layers(dropout(x + pos_embedding))); the dropout output is the embedded
    # token sequence (N, n_patches + 1, hidden_dim), class token first.
    probes = {"embed": "encoder.dropout"}
    for i in range(num_layers):
        probes[f"block{i + 1}"] = f"encoder.layers.encoder_layer_{i}"
    probes["final_norm"] = "encoder.ln"
    model.probe_points = probes
    model.arch = "vit"
    return model
