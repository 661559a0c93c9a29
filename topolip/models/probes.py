"""Activations at a model's probe points, captured with forward hooks.

Every model the project builds carries ``model.probe_points``, an ordered mapping
``{label: submodule path}``; the input itself is the implicit first probe point ``"input"``.
Hooks clone what they capture, so no later in-place operation can change it, and activations are
flattened per sample: the point cloud ``H_ℓ(X) ⊂ R^{d_ℓ}`` of the method page (book/method.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from ..tensors import check_images, eval_mode

__all__ = ["probe_labels", "collect_activations"]


def probe_labels(model: nn.Module) -> list[str]:
    """Ordered probe labels of ``model``, starting with ``"input"``.

    Raises
    ------
    ValueError
        If the model carries no ``probe_points`` (it was not built by :mod:`topolip.models`) or
        a path names no submodule.

    Examples
    --------
    >>> from topolip.models import build_model
    >>> probe_labels(build_model("resnet", width=4))
    ['input', 'stem', 'block1', 'block2', 'block3', 'block4', 'pool']
    """
    points = _probe_points(model)
    return ["input", *points]


def _probe_points(model: nn.Module) -> Mapping[str, str]:
    points = getattr(model, "probe_points", None)
    if not isinstance(points, Mapping) or not points:
        raise ValueError(
            f"{type(model).__name__} has no probe_points mapping; build models with "
            "topolip.models.build_model or set model.probe_points = {label: submodule path}"
        )
    names = dict(model.named_modules())
    for label, path in points.items():
        if path not in names:
            raise ValueError(f"probe {label!r} names submodule {path!r}, which the model lacks")
    return points


@torch.no_grad()
def collect_activations(
    model: nn.Module,
    x: torch.Tensor,
    *,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> dict[str, np.ndarray]:
    """Flattened activations of ``x`` at every probe point of ``model``, in eval mode.

    Parameters
    ----------
    model : torch.nn.Module
        A model with ``probe_points`` (see :func:`probe_labels`).
    x : torch.Tensor of shape (m, C, H, W)
        Input images, pixels in [0, 1].
    batch_size : int, default=256
        Samples per forward pass (memory only; the result does not depend on it).
    device : torch.device or str, optional
        Where to run the forward passes; default the model's device.

    Returns
    -------
    dict of str to ndarray of shape (m, d_ℓ), float64
        ``{label: activations}`` in probe order, ``"input"`` first; row ``i`` is sample ``i``.

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty 4-D tensor, or holds NaN/inf, or an activation is not
        finite (the message names the probe).

    Notes
    -----
    The model is put in eval mode for the passes (BatchNorm uses running statistics, dropout is
    off) and restored to its previous mode afterwards.

    Examples
    --------
    >>> from topolip.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> acts = collect_activations(build_model("vit", num_layers=1, hidden_dim=8, mlp_dim=8,
    ...                                        num_heads=2), torch.rand(5, 1, 28, 28))
    >>> {k: v.shape for k, v in acts.items()}
    {'input': (5, 784), 'embed': (5, 136), 'block1': (5, 136), 'final_norm': (5, 136)}
    """
    points = _probe_points(model)
    check_images(x, unit_range=False)
    if device is None:
        device = next(model.parameters()).device
    modules = dict(model.named_modules())
    captured: dict[str, list[torch.Tensor]] = {label: [] for label in points}

    def make_hook(label: str):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            captured[label].append(out.detach().flatten(1).to("cpu", torch.float64, copy=True))
        return hook

    handles = [modules[path].register_forward_hook(make_hook(label))
               for label, path in points.items()]
    try:
        with eval_mode(model):
            for start in range(0, x.shape[0], batch_size):
                model(x[start:start + batch_size].to(device))
    finally:
        for h in handles:
            h.remove()
    acts = {"input": x.detach().flatten(1).to("cpu", torch.float64).numpy()}
    for label in points:
        a = torch.cat(captured[label]).numpy()
        if not np.isfinite(a).all():
            raise ValueError(f"activations at probe {label!r} hold NaN or inf")
        acts[label] = a
    return acts
