"""Private helpers shared by the bound modules: input validation and unit conventions."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

# Unit roundoff of IEEE float64; the certified bounds add explicit allowances in multiples of it.
UNIT_ROUNDOFF = float(np.finfo(np.float64).eps) / 2.0
# Relative allowance added to norms computed by a backward-stable dense SVD / eigensolver.
SVD_SAFETY = 1e-10


def as_batch(inputs, name: str = "inputs", *, min_ndim: int = 2) -> torch.Tensor:
    """Return ``inputs`` as a finite floating tensor of shape (m, ...) with m >= 1.

    Raises
    ------
    TypeError
        If ``inputs`` is neither a tensor nor an array.
    ValueError
        If it is empty, has fewer than ``min_ndim`` dimensions, or holds NaN/inf.
    """
    if isinstance(inputs, np.ndarray):
        inputs = torch.from_numpy(np.ascontiguousarray(inputs))
    if not isinstance(inputs, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor or numpy array, got {type(inputs).__name__}"
        )
    if inputs.ndim < min_ndim:
        raise ValueError(
            f"{name} must be a batch of shape (m, ...) with at least {min_ndim} dimensions, "
            f"got shape {tuple(inputs.shape)}; add the batch axis with x[None]"
        )
    if inputs.shape[0] == 0 or inputs.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(inputs.shape)}); pass at least one sample")
    if not inputs.is_floating_point():
        inputs = inputs.to(torch.get_default_dtype())
    if not torch.isfinite(inputs).all():
        raise ValueError(f"{name} holds NaN or inf; bounds need finite inputs")
    return inputs


def check_margin(margin: float) -> float:
    """Validate the perturbation margin (a finite number >= 0).

    Raises
    ------
    ValueError
        Naming ``margin``, when it is not a number (``"a"``), not finite, or negative.
    """
    try:
        margin = float(margin)
    except (TypeError, ValueError):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}") from None
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0, got {margin}")
    return margin


def module_device_dtype(module: nn.Module) -> tuple[torch.device, torch.dtype]:
    """Device and dtype of the module's first parameter or buffer (CPU float32 if none)."""
    for t in (*module.parameters(), *module.buffers()):
        if t.is_floating_point():
            return t.device, t.dtype
    return torch.device("cpu"), torch.get_default_dtype()


def spectral_norm(matrix) -> float:
    """Largest singular value of a 2-D array or tensor, in float64, with a 1e-10 allowance."""
    w = torch.as_tensor(matrix).detach().to("cpu", torch.float64)
    if w.ndim != 2:
        raise ValueError(f"expected a matrix, got shape {tuple(w.shape)}")
    if w.numel() == 0:
        return 0.0
    if not torch.isfinite(w).all():
        raise ValueError(
            f"matrix of shape {tuple(w.shape)} holds {int((~torch.isfinite(w)).sum())} NaN/inf "
            f"value(s); a spectral norm needs finite weights"
        )
    return float(torch.linalg.matrix_norm(w, ord=2)) * (1.0 + SVD_SAFETY)


def shape_error(module: nn.Module, expected: str, x: torch.Tensor) -> ValueError:
    """A ValueError naming the module, the expected input shape and the one received."""
    return ValueError(
        f"{type(module).__name__} expects inputs of shape {expected}, got {tuple(x.shape)}"
    )


def check_finite_state(module: nn.Module) -> None:
    """Refuse NaN/inf weights or buffers, naming the layer (no solver error from deep inside)."""
    for kind, named in (("parameter", module.named_parameters()),
                        ("buffer", module.named_buffers())):
        for name, t in named:
            if t.is_floating_point() and not torch.isfinite(t.detach()).all():
                layer, _, attr = name.rpartition(".")
                sub = module.get_submodule(layer) if layer else module
                bad = int((~torch.isfinite(t.detach())).sum())
                raise ValueError(
                    f"layer {layer or '<root>'!r} ({type(sub).__name__}): {kind} {attr!r} holds "
                    f"{bad} NaN/inf value(s) of {t.numel()}; a Lipschitz bound needs finite "
                    f"weights (a diverged training run?)"
                )
