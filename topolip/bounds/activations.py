r"""Lipschitz constants of elementwise activations: ``sup_t |φ'(t)|``.

An elementwise map ``x ↦ (φ(x_1), …, φ(x_d))`` has Jacobian ``diag(φ'(x_i))``, so its Lipschitz
constant in the Euclidean norm of the flattened sample is ``sup |φ'|`` whatever the shape.
"""

from __future__ import annotations

import math

import scipy.optimize
from torch import nn

__all__ = ["GELU_LIPSCHITZ", "GELU_TANH_LIPSCHITZ", "SILU_LIPSCHITZ", "activation_lipschitz"]

#: ``max |GELU'| = Φ(√2) + √2 φ(√2) = (1 + erf(1))/2 + 1/(e√π)``, reached at ``t = √2``.
GELU_LIPSCHITZ: float = 0.5 * (1.0 + math.erf(1.0)) + 1.0 / (math.e * math.sqrt(math.pi))


def _max_abs_derivative(deriv, bracket=(0.0, 4.0)) -> float:
    """Maximise ``deriv`` on ``bracket`` numerically (bounded Brent), for smooth 1-hump curves."""
    res = scipy.optimize.minimize_scalar(lambda t: -deriv(t), bounds=bracket, method="bounded",
                                         options={"xatol": 1e-12})
    return float(-res.fun)


def _gelu_tanh_deriv(t: float) -> float:
    c = math.sqrt(2.0 / math.pi)
    u = c * (t + 0.044715 * t**3)
    th = math.tanh(u)
    return 0.5 * (1.0 + th) + 0.5 * t * (1.0 - th * th) * c * (1.0 + 3 * 0.044715 * t * t)


def _silu_deriv(t: float) -> float:
    s = 1.0 / (1.0 + math.exp(-t))
    return s * (1.0 + t * (1.0 - s))


#: ``max |d/dt GELU_tanh|`` of the tanh approximation (numerical maximisation, ≈ 1.1290).
GELU_TANH_LIPSCHITZ: float = _max_abs_derivative(_gelu_tanh_deriv) * (1.0 + 1e-9)
#: ``max |SiLU'|`` (numerical maximisation, ≈ 1.0998).
SILU_LIPSCHITZ: float = _max_abs_derivative(_silu_deriv, (0.0, 6.0)) * (1.0 + 1e-9)


def activation_lipschitz(module: nn.Module) -> float:
    r"""Lipschitz constant ``sup_t |φ'(t)|`` of an elementwise activation module.

    Parameters
    ----------
    module : torch.nn.Module
        ``ReLU``, ``ReLU6``, ``LeakyReLU``, ``ELU``, ``GELU`` (exact or ``approximate="tanh"``),
        ``SiLU``, ``Tanh``, ``Sigmoid``, ``Hardtanh``, ``Softplus``; also ``Identity``,
        ``Dropout*`` (identity in eval mode), ``Flatten`` and ``Unflatten`` (isometries).

    Returns
    -------
    float
        The constant, independent of the input shape.

    Raises
    ------
    TypeError
        If ``module`` is not one of the types above (the message lists them).

    Notes
    -----
    ``GELU(t) = tΦ(t)``: ``GELU' = Φ(t) + tφ(t)``, ``GELU'' = φ(t)(2 − t²)``, so ``GELU'`` peaks at
    ``t = √2`` with ``Φ(√2) + √2φ(√2) = (1 + erf 1)/2 + 1/(e√π) ≈ 1.1289`` and dips to
    ``1 − 1.1289`` at ``−√2`` (derived here). ``LeakyReLU``: ``max(1, |α|)``; ``ELU``:
    ``max(1, α)``; ``Sigmoid``: ``1/4``; ``Tanh``, ``Hardtanh``, ``Softplus``, ``ReLU``: 1.

    References
    ----------
    .. [1] D. Hendrycks, K. Gimpel, "Gaussian error linear units (GELUs)", arXiv:1606.08415.

    Examples
    --------
    >>> activation_lipschitz(nn.ReLU()), round(activation_lipschitz(nn.GELU()), 6)
    (1.0, 1.128904)
    >>> activation_lipschitz(nn.Softmax(dim=-1))
    Traceback (most recent call last):
    ...
    TypeError: no elementwise Lipschitz constant for Softmax; supported: ...
    """
    if isinstance(module, (nn.ReLU, nn.ReLU6, nn.Tanh, nn.Hardtanh, nn.Softplus, nn.Identity,
                           nn.Flatten, nn.Unflatten, nn.Dropout, nn.Dropout1d, nn.Dropout2d,
                           nn.Dropout3d, nn.AlphaDropout)):
        return 1.0
    if isinstance(module, nn.GELU):
        return GELU_TANH_LIPSCHITZ if module.approximate == "tanh" else GELU_LIPSCHITZ
    if isinstance(module, nn.LeakyReLU):
        return max(1.0, abs(float(module.negative_slope)))
    if isinstance(module, nn.ELU):
        return max(1.0, float(module.alpha))
    if isinstance(module, nn.SiLU):
        return SILU_LIPSCHITZ
    if isinstance(module, nn.Sigmoid):
        return 0.25
    raise TypeError(
        f"no elementwise Lipschitz constant for {type(module).__name__}; supported: "
        f"{', '.join(t.__name__ for t in ELEMENTWISE_TYPES)}"
    )


ELEMENTWISE_TYPES = (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Tanh,
                     nn.Sigmoid, nn.Hardtanh, nn.Softplus, nn.Identity, nn.Flatten, nn.Unflatten,
                     nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)

