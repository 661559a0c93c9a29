"""The small torch helpers every model-facing module shares: image and input checks, eval mode.

:func:`check_images` is the one rule for a batch of images (non-empty, floating, ``(N, C, H, W)``,
finite, pixels in ``[0, 1]``) with one message style; :func:`eval_mode` runs a block with a
model in eval mode and gives every submodule its own train/eval flag back afterwards.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["Logits", "check_classifier_inputs", "check_count", "check_images", "eval_mode",
           "model_device"]


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


class Logits(nn.Module):
    """What an attack differentiates: images in [0, 1] ``(N, C, H, W)`` to logits ``(N, K)``
    (a model's first output when it returns a tuple, as the attention models do)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        return out[0] if isinstance(out, tuple | list) else out


def model_device(model: nn.Module) -> torch.device:
    """The device of ``model``'s first parameter (where an attack on it runs).

    Raises
    ------
    ValueError
        If the model has no parameters.
    """
    try:
        return next(model.parameters()).device
    except StopIteration:
        raise ValueError("the model has no parameters; attacks need a differentiable classifier "
                         "with parameters (their device is where the attack runs)") from None


def check_classifier_inputs(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Validate a classifier, its images and labels; return its number of logits ``K``.

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images to logits ``(N, K)`` (or a tuple whose first item they are).
    x : torch.Tensor of shape (N, C, H, W)
        Images, pixels in [0, 1] (:func:`check_images`).
    y : torch.Tensor of shape (N,), integer
        Labels in ``0 .. K-1``.

    Raises
    ------
    ValueError
        If the model is not a module or has no parameters, the images are invalid, the labels
        are not a 1-D integer tensor of matching length or out of range, or the model cannot
        take the images or does not return ``(N, K)`` logits.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_images(x)
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.is_floating_point() \
            or y.dtype == torch.bool:
        got = (f"{y.dtype} tensor of shape {tuple(y.shape)}" if isinstance(y, torch.Tensor)
               else type(y).__name__)
        raise ValueError(f"y must be a 1-D integer tensor of labels, got {got}")
    if len(y) != len(x):
        raise ValueError(f"x has {len(x)} images but y has {len(y)} labels")
    device = model_device(model)
    dtype = next(model.parameters()).dtype
    with eval_mode(model), torch.no_grad():
        try:
            logits = Logits(model)(x[:1].to(device, dtype))
        except RuntimeError as err:
            raise ValueError(
                f"the model cannot take images of shape {tuple(x.shape[1:])} (C, H, W): {err}"
            ) from err
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"the model must return logits of shape (N, K), got {shape}")
    k = logits.shape[1]
    if int(y.min()) < 0 or int(y.max()) >= k:
        raise ValueError(f"labels must be in 0..{k - 1} (the model has {k} logits), got "
                         f"labels in {int(y.min())}..{int(y.max())}")
    return k


def check_count(value, name: str) -> int:
    """``value`` as an int, if it is a positive integer (a step, restart or image count).

    Raises
    ------
    ValueError
        Naming ``name``, if ``value`` is a bool, not an integer, or below 1.

    Examples
    --------
    >>> check_count(3, "steps")
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
