"""Lipschitz constants of 2-D pooling layers on a given input size."""

from __future__ import annotations

import math

import torch
from torch import nn

from topolip.bounds._checks import spectral_norm

__all__ = ["avgpool_lipschitz", "maxpool_lipschitz"]


def avgpool_lipschitz(pool: nn.Module, input_size: tuple[int, int]) -> float:
    r"""Exact Lipschitz constant of ``AvgPool2d``/``AdaptiveAvgPool2d`` on ``(H, W)`` inputs.

    Parameters
    ----------
    pool : torch.nn.AvgPool2d or torch.nn.AdaptiveAvgPool2d
        The pooling layer (kernel, stride, padding, or the adaptive output size).
    input_size : tuple of int
        ``(H, W)`` in pixels.

    Returns
    -------
    float
        ``‖M‖₂`` with ``M`` the (linear) pooling matrix of one channel; ``1/√(HW)`` for global
        average pooling.

    Raises
    ------
    TypeError
        If ``pool`` is not an average pooling layer.

    Notes
    -----
    Average pooling acts on each channel by the same matrix ``M``, so the map is
    ``I_C ⊗ M`` and its norm is ``‖M‖₂``; ``M`` is built by pooling the ``HW`` unit images (at
    most 4096 pixels; above that the Schur bound ``√(‖M‖₁‖M‖_∞)`` is used). Global pooling:
    ``|mean(x)| ≤ ‖x‖/√(HW)`` by Cauchy–Schwarz, with equality for constant ``x``.

    Examples
    --------
    >>> avgpool_lipschitz(nn.AdaptiveAvgPool2d(1), (4, 4))
    0.25
    >>> round(avgpool_lipschitz(nn.AvgPool2d(2), (4, 4)), 6)            # disjoint 2×2 windows
    0.5
    """
    if not isinstance(pool, (nn.AvgPool2d, nn.AdaptiveAvgPool2d)):
        raise TypeError(f"expected AvgPool2d or AdaptiveAvgPool2d, got {type(pool).__name__}")
    h, w = (int(s) for s in input_size)
    if isinstance(pool, nn.AdaptiveAvgPool2d) and pool.output_size in (1, (1, 1)):
        return 1.0 / math.sqrt(h * w)
    with torch.no_grad():
        if h * w <= 4096:
            basis = torch.eye(h * w, dtype=torch.float64).reshape(h * w, 1, h, w)
            mat = pool(basis).reshape(h * w, -1)
            return spectral_norm(mat)
        ones = torch.ones(1, 1, h, w, dtype=torch.float64)
        row_sum = float(pool(ones).max())  # max_v Σ_u M_vu
        # column sums: Σ_v M_vu = <pool(e_u), 1> = adjoint applied to ones, via autograd
        x = torch.zeros(1, 1, h, w, dtype=torch.float64, requires_grad=True)
    with torch.enable_grad():
        (col,) = torch.autograd.grad(pool(x).sum(), x)
    return math.sqrt(row_sum * float(col.max()))


def maxpool_lipschitz(pool: nn.MaxPool2d) -> float:
    r"""Lipschitz bound ``√m`` of ``MaxPool2d``, ``m`` the most windows sharing a pixel.

    Parameters
    ----------
    pool : torch.nn.MaxPool2d
        The pooling layer (kernel, stride, padding, dilation).

    Returns
    -------
    float
        ``√(m_h m_w)`` with ``m = min(k, ⌊d(k−1)/s⌋ + 1)`` per axis.

    Raises
    ------
    TypeError
        If ``pool`` is not a ``MaxPool2d``.

    Notes
    -----
    ``|max a − max b| ≤ max|a − b| ≤ ‖a − b‖₂`` on each window; summing squares over windows
    counts each pixel at most ``m`` times. Pixel ``u`` lies in window ``v`` iff
    ``u = sv − p + da`` for a tap ``a < k``: at most ``k`` windows, and the ``v`` span at most
    ``⌊d(k−1)/s⌋ + 1`` values. Exact (1) for non-overlapping windows.

    Examples
    --------
    >>> maxpool_lipschitz(nn.MaxPool2d(2)), maxpool_lipschitz(nn.MaxPool2d(3, stride=1))
    (1.0, 3.0)
    """
    if not isinstance(pool, nn.MaxPool2d):
        raise TypeError(f"expected MaxPool2d, got {type(pool).__name__}")
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    k, s, d = pair(pool.kernel_size), pair(pool.stride or pool.kernel_size), pair(pool.dilation)
    m = 1
    for ki, si, di in zip(k, s, d, strict=True):
        m *= min(ki, (di * (ki - 1)) // si + 1)
    return math.sqrt(m)
