"""Small modules that give a bound something to apply to: a generic residual block and the ViT
embedding segment (patch projection, class token, position embedding) as one module."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models import VisionTransformer

__all__ = ["Residual", "ViTEmbedding"]


class Residual(nn.Module):
    """``x ↦ x + branch(x)``; its Lipschitz bound is ``1 + Lip(branch)``.

    Parameters
    ----------
    branch : torch.nn.Module
        A map whose output has the shape of its input.

    Examples
    --------
    >>> Residual(nn.Linear(3, 3))(torch.zeros(2, 3)).shape
    torch.Size([2, 3])
    """

    def __init__(self, branch: nn.Module):
        super().__init__()
        self.branch = branch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``x + branch(x)``."""
        return x + self.branch(x)


class ViTEmbedding(nn.Module):
    """The embedding segment of a torchvision ViT: image ``(m, C, H, W)`` to tokens.

    Shares (does not copy) ``conv_proj``, ``class_token``, ``encoder.pos_embedding`` and
    ``encoder.dropout`` of ``vit``; its output is what the ``embed`` probe (``encoder.dropout``)
    records, of shape ``(m, n_patches + 1, hidden_dim)``, class token first.

    Parameters
    ----------
    vit : torchvision.models.VisionTransformer

    Notes
    -----
    The map is ``x ↦ dropout(cat(c, P(conv_proj(x))) + E)`` with ``P`` a permutation of
    coordinates, ``c`` and ``E`` constants: an affine map whose Lipschitz constant is that of
    ``conv_proj`` on the image (dropout is the identity in eval mode).

    Examples
    --------
    >>> from topolip.models import build_model
    >>> vit = build_model("vit", num_layers=1, hidden_dim=8, mlp_dim=8, num_heads=2)
    >>> ViTEmbedding(vit)(torch.zeros(2, 1, 28, 28)).shape
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
