r"""Lipschitz bounds of normalisation layers: BatchNorm (eval mode, exact) and LayerNorm (local)."""

from __future__ import annotations

import math

import torch
from torch import nn

from topolip.bounds._checks import UNIT_ROUNDOFF, check_margin, shape_error

__all__ = [
    "batchnorm_scale", "batchnorm_lipschitz", "layernorm_lipschitz", "layernorm_output_radius",
]


def batchnorm_scale(bn: nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d) -> torch.Tensor:
    r"""Per-channel factors ``γ_c / √(σ²_c + eps)`` of an eval-mode BatchNorm, float64 (C,).

    Parameters
    ----------
    bn : torch.nn.BatchNorm1d, BatchNorm2d or BatchNorm3d
        With running statistics (``track_running_stats=True``).

    Returns
    -------
    torch.Tensor of shape (C,), float64
        The slope of the affine map of each channel.

    Raises
    ------
    ValueError
        If the layer keeps no running statistics: it then normalises by batch statistics even
        in eval mode and is no per-sample map.

    Notes
    -----
    In eval mode ``y_c = γ_c (x_c − μ_c)/√(σ²_c + eps) + β_c`` with the running ``μ, σ²``.

    Examples
    --------
    >>> bn = nn.BatchNorm1d(2).eval()
    >>> bn.running_var.fill_(4.0); _ = bn.weight.data.copy_(torch.tensor([1.0, -3.0]))
    tensor([4., 4.])
    >>> batchnorm_scale(bn).round(decimals=4)
    tensor([ 0.5000, -1.5000], dtype=torch.float64)
    """
    if bn.running_var is None:
        raise ValueError(
            f"{type(bn).__name__} has track_running_stats=False: it normalises with batch "
            "statistics, which is no per-sample map; bounds need running statistics"
        )
    var = bn.running_var.detach().to("cpu", torch.float64)
    gamma = (bn.weight.detach().to("cpu", torch.float64) if bn.weight is not None
             else torch.ones_like(var))
    return gamma / torch.sqrt(var + bn.eps)


def batchnorm_lipschitz(bn: nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d) -> float:
    r"""Exact Lipschitz constant ``max_c |γ_c| / √(σ²_c + eps)`` of an eval-mode BatchNorm.

    Parameters
    ----------
    bn : torch.nn.BatchNorm1d, BatchNorm2d or BatchNorm3d
        In eval mode (its running statistics are used).

    Returns
    -------
    float
        The largest channel slope in absolute value (the map is diagonal).

    Raises
    ------
    ValueError
        If the layer keeps no running statistics (see :func:`batchnorm_scale`).

    Notes
    -----
    The eval-mode map is ``x ↦ D x + b`` with ``D`` diagonal, so ``Lip = ‖D‖₂ = max |D_cc|``. The
    bound holds for the layer in eval mode whatever its ``training`` flag.

    Examples
    --------
    >>> bn = nn.BatchNorm2d(3, eps=0.0).eval()
    >>> bn.running_var.copy_(torch.tensor([1.0, 4.0, 0.25]))
    tensor([1.0000, 4.0000, 0.2500])
    >>> round(batchnorm_lipschitz(bn), 12)  # 2 plus a rounding allowance of 16 ulps
    2.0
    """
    value = float(batchnorm_scale(bn).abs().max())
    return value * (1.0 + 16.0 * UNIT_ROUNDOFF)  # rounding allowance of the sqrt and division


def _token_view(ln: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    shape = tuple(ln.normalized_shape)
    if x.ndim < len(shape) + 1 or tuple(x.shape[-len(shape):]) != shape:
        raise shape_error(ln, f"(m, ..., {', '.join(map(str, shape))})", x)
    return x.detach().to("cpu", torch.float64).reshape(-1, math.prod(shape))


def layernorm_lipschitz(ln: nn.LayerNorm, inputs: torch.Tensor, *, margin: float = 0.0) -> float:
    r"""Local Lipschitz bound of a LayerNorm around the observed inputs.

    Parameters
    ----------
    ln : torch.nn.LayerNorm
        The normalisation layer to bound.
    inputs : torch.Tensor of shape (m, ..., *normalized_shape)
        Observed inputs; every trailing block of ``normalized_shape`` is one token.
    margin : float, default=0.0
        Perturbation radius (Euclidean, per sample, activation units). With ``margin = 0`` the
        result is the largest Jacobian norm over the observed tokens; with ``margin = δ`` it
        bounds ``‖f(x̃) − f(x)‖ / ‖x̃ − x‖`` for every observed ``x`` and ``‖x̃ − x‖ ≤ δ``.

    Returns
    -------
    float
        ``max|γ| / √(max(σ_min − δ/√d, 0)² + eps)`` with ``σ_min`` the smallest standard
        deviation of an observed token and ``d`` the token size.

    Raises
    ------
    ValueError
        If the trailing dimensions of ``inputs`` are not ``normalized_shape`` or ``margin < 0``.

    Notes
    -----
    Derived here. With ``c = x − x̄``, ``s = √(‖c‖²/d + eps)`` and ``z = c/s`` the Jacobian is
    ``J = diag(γ) (1/s) (P − z zᵀ/d)`` with ``P = I − 11ᵀ/d``; since ``z ⊥ 1`` and ``‖z‖² < d``,
    ``P − zzᵀ/d`` has eigenvalues in ``[0, 1]``, so ``‖J‖₂ ≤ max|γ|/s``. The token standard
    deviation ``σ(x) = ‖Px‖/√d`` is ``1/√d``-Lipschitz, so within ``δ`` of ``x`` it stays
    ``≥ σ(x) − δ/√d``, and the sup of ``‖J‖`` over that ball (a convex set, so the sup bounds the
    Lipschitz ratio) is the formula. LayerNorm has no useful global constant: ``σ`` can vanish,
    leaving ``max|γ|/√eps``. See also Castin, Ablin and Peyré (2024), section 5.

    References
    ----------
    .. [1] J. L. Ba, J. R. Kiros, G. E. Hinton, "Layer normalization", arXiv:1607.06450.
    .. [2] V. Castin, P. Ablin, G. Peyré, "How smooth is attention?", ICML 2024,
       arXiv:2312.14820.

    Examples
    --------
    >>> ln = nn.LayerNorm(4, eps=0.0)
    >>> x = torch.tensor([[1.0, -1.0, 1.0, -1.0]])              # σ = 1
    >>> b0, b1 = layernorm_lipschitz(ln, x), layernorm_lipschitz(ln, x, margin=1.0)  # σ ≥ 1/2
    >>> round(b0, 12), round(b1, 12), b0 > 1.0                  # a rounding allowance on top
    (1.0, 2.0, True)
    """
    margin = check_margin(margin)
    tokens = _token_view(ln, inputs)
    d = tokens.shape[1]
    sigma_min = float(tokens.std(dim=1, unbiased=False).min())
    sigma_low = max(sigma_min - margin / math.sqrt(d), 0.0)
    gamma_max = (float(ln.weight.detach().abs().max()) if ln.weight is not None else 1.0)
    denom = math.sqrt(sigma_low**2 + ln.eps)
    if denom == 0.0:
        return math.inf
    return gamma_max / denom * (1.0 + (4.0 * d + 16.0) * UNIT_ROUNDOFF)  # rounding allowance


def layernorm_output_radius(ln: nn.LayerNorm) -> float:
    r"""Global bound ``max|γ|·√d + ‖β‖`` on the norm of any LayerNorm output token.

    Parameters
    ----------
    ln : torch.nn.LayerNorm
        The normalisation layer (its ``weight`` γ and ``bias`` β).

    Returns
    -------
    float
        The radius ``R`` of a ball holding every output token, whatever the input.

    Notes
    -----
    ``f(x) = γ ⊙ z + β`` with ``‖z‖² = d·σ²/(σ² + eps) < d``, so ``‖f(x)‖ ≤ max|γ|√d + ‖β‖``. It
    makes the attention bound after a pre-norm global in the attention's input radius.

    Examples
    --------
    >>> layernorm_output_radius(nn.LayerNorm(16))
    4.0
    """
    d = math.prod(tuple(ln.normalized_shape))
    gamma_max = float(ln.weight.detach().abs().max()) if ln.weight is not None else 1.0
    beta = float(ln.bias.detach().double().norm()) if getattr(ln, "bias", None) is not None else 0.0
    return gamma_max * math.sqrt(d) + beta
