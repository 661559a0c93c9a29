"""A small module that gives a bound something to apply to: a generic residual block.

(The ViT embedding segment, formerly here, is :class:`topolip.nets.models.vit.ViTEmbedding`: how a
model embeds its input is the model's to declare.)
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Residual"]


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
