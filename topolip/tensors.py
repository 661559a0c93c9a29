"""Two small torch helpers every model-facing module shares: image checks and eval mode.

:func:`check_images` is the one rule for a batch of images (non-empty, floating, ``(N, C, H, W)``,
finite, pixels in ``[0, 1]``) with one message style; :func:`eval_mode` runs a block with a
model in eval mode and gives every submodule its own train/eval flag back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["check_images", "eval_mode"]


def check_images(x: torch.Tensor, name: str = "x", *, unit_range: bool = True) -> None:
    """Raise unless ``x`` is a non-empty, finite, floating ``(N, C, H, W)`` batch of images.

    Parameters
    ----------
    x : torch.Tensor of shape (N, C, H, W)
        Images, pixels in ``[0, 1]`` (``N >= 1``).
    name : str, default="x"
        The argument's name, used in the messages.
    unit_range : bool, default=True
        Also require every pixel in ``[0, 1]``. ``False`` for callers that take perturbed
        images, which may leave the unit cube (activations of ``x + noise``).

    Raises
    ------
    ValueError
        If ``x`` is not a tensor, not 4-D, not floating, empty, holds NaN or inf, or (with
        ``unit_range``) has a pixel outside ``[0, 1]``.

    Examples
    --------
    >>> check_images(torch.rand(2, 1, 4, 4))
    >>> check_images(torch.rand(0, 1, 4, 4))
    Traceback (most recent call last):
    ...
    ValueError: x must be a non-empty floating (N, C, H, W) tensor of images, got torch.float32 tensor of shape (0, 1, 4, 4)
    """  # noqa: E501
    if not isinstance(x, torch.Tensor) or x.ndim != 4 or not x.is_floating_point() \
            or x.shape[0] == 0:
        got = (f"{x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor)
               else type(x).__name__)
        raise ValueError(
            f"{name} must be a non-empty floating (N, C, H, W) tensor of images, got {got}"
        )
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or inf pixels; images must be finite")
    if unit_range:
        lo, hi = float(x.min()), float(x.max())
        if lo < 0 or hi > 1:
            raise ValueError(
                f"{name} has pixels in [{lo:.4g}, {hi:.4g}], outside [0, 1]; scale images to "
                "[0, 1] (e.g. divide uint8 by 255)"
            )


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Run the block with ``model`` in eval mode; restore every submodule's own flag on exit.

    Parameters
    ----------
    model : torch.nn.Module
        The model; its submodules may be in mixed train/eval modes, each is restored as it
        was (``model.train(flag)`` would set them all alike), also when the block raises.

    Yields
    ------
    torch.nn.Module
        ``model`` itself.

    Examples
    --------
    >>> m = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    >>> _ = m[1].eval()
    >>> with eval_mode(m):
    ...     print(m.training, m[1].training)
    False False
    >>> m.training, m[1].training
    (True, False)
    """
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for m, training in modes:
            m.training = training
