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

from topolip.tensors import check_images, eval_mode

__all__ = ["collect_activations", "forward_probes", "probe_labels"]


def probe_labels(model: nn.Module) -> list[str]:
    """Ordered probe labels of ``model``, starting with ``"input"``.

    Raises
    ------
    ValueError
        If the model carries no ``probe_points`` (it was not built by :mod:`topolip.nets.models`) or
        a path names no submodule.

    Examples
    --------
    >>> from topolip.nets.models import build_model
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
            "topolip.nets.models.build_model or set model.probe_points = {label: submodule path}"
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
    >>> from topolip.nets.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> acts = collect_activations(build_model("vit", num_layers=1, hidden_dim=8, mlp_dim=8,
    ...                                        num_heads=2), torch.rand(5, 1, 28, 28))
    >>> {k: v.shape for k, v in acts.items()}
    {'input': (5, 784), 'embed': (5, 136), 'block1': (5, 136), 'final_norm': (5, 136)}
    """
    return forward_probes(model, x, batch_size=batch_size, device=device)[0]


@torch.no_grad()
def forward_probes(
    model: nn.Module,
    x: torch.Tensor,
    *,
    n_probe: int | None = None,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One forward pass over ``x``: the logits of every image, activations of the first ones.

    What :func:`collect_activations` and a separate evaluation would compute with two passes
    over the same images: the activations are those of :func:`collect_activations` on
    ``x[:n_probe]``, the logits those of ``model(x)`` in eval mode.

    Parameters
    ----------
    model : torch.nn.Module
        A model with ``probe_points`` (see :func:`probe_labels`).
    x : torch.Tensor of shape (m, C, H, W)
        Input images, pixels in [0, 1].
    n_probe : int, optional
        Images whose activations are kept, ``1 <= n_probe <= m`` (default all ``m``).
    batch_size : int, default=256
        Samples per forward pass (memory only; the result does not depend on it).
    device : torch.device or str, optional
        Where to run the forward passes; default the model's device.

    Returns
    -------
    (dict of str to ndarray of shape (n_probe, d_ℓ), ndarray of shape (m, K))
        The activations (float64, ``"input"`` first) and the logits (float32).

    Raises
    ------
    ValueError
        As :func:`collect_activations`, and for ``n_probe`` out of range.
    """
    points = _probe_points(model)
    check_images(x, unit_range=False)
    m = x.shape[0]
    n_probe = m if n_probe is None else n_probe
    if isinstance(n_probe, bool) or not isinstance(n_probe, int) or not 1 <= n_probe <= m:
        raise ValueError(f"n_probe must be an int in [1, {m}], got {n_probe!r}")
    if device is None:
        device = next(model.parameters()).device
    modules = dict(model.named_modules())
    captured: dict[str, list[torch.Tensor]] = {label: [] for label in points}
    keep = [0]  # rows of the current batch whose activations are kept

    def make_hook(label: str):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            if keep[0]:
                captured[label].append(
                    out[:keep[0]].detach().flatten(1).to("cpu", torch.float64, copy=True))
        return hook

    handles = [modules[path].register_forward_hook(make_hook(label))
               for label, path in points.items()]
    logits = []
    # The probed images are batched exactly as collect_activations(x[:n_probe]) batches them
    # (same activations, bit for bit), the others after them.
    starts = [*range(0, n_probe, batch_size), *range(n_probe, m, batch_size)]
    ends = [min(s + batch_size, n_probe if s < n_probe else m) for s in starts]
    try:
        with eval_mode(model):
            for start, end in zip(starts, ends, strict=True):
                keep[0] = end - start if start < n_probe else 0
                logits.append(model(x[start:end].to(device)).float().cpu())
    finally:
        for h in handles:
            h.remove()
    acts = {"input": x[:n_probe].detach().flatten(1).to("cpu", torch.float64).numpy()}
    for label in points:
        a = torch.cat(captured[label]).numpy()
        if not np.isfinite(a).all():
            raise ValueError(f"activations at probe {label!r} hold NaN or inf")
        acts[label] = a
    return acts, torch.cat(logits).numpy()
