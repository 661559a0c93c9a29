r"""``lipschitz_bound(module, inputs)``: the bound of any supported module on observed inputs.

Each supported module type has a handler ``(module, x, margin) -> float``; composite modules
(``Sequential``, residual blocks, ViT encoder blocks) compose the handlers of their parts,
computing each part's observed inputs by a forward pass and carrying the perturbation margin
through (a part after a map of bound ``L`` sees perturbations ``L`` times larger). A module of
a type bounds does not know (a model's own layer) declares its structure instead
(``lipschitz_parts()`` or ``lipschitz_kind``); no model class is imported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck
from torchvision.models.vision_transformer import EncoderBlock

from topolip.bounds._checks import (
    as_batch,
    check_finite_state,
    check_margin,
    module_device_dtype,
    shape_error,
    spectral_norm,
)
from topolip.bounds.activations import ELEMENTWISE_TYPES, activation_lipschitz
from topolip.bounds.attention import L2SelfAttention, l2_attention_lipschitz, mha_lipschitz
from topolip.bounds.blocks import Residual
from topolip.bounds.conv import conv2d_lipschitz
from topolip.bounds.estimate import as_function
from topolip.bounds.norms import (
    batchnorm_lipschitz,
    batchnorm_scale,
    layernorm_lipschitz,
    layernorm_output_radius,
)
from topolip.bounds.pooling import avgpool_lipschitz, maxpool_lipschitz
from topolip.tensors import eval_mode

__all__ = ["DECLARED_KINDS", "lipschitz_bound", "supported_types"]

Handler = Callable[[nn.Module, torch.Tensor, float], float]
_HANDLERS: dict[type, Handler] = {}


def _register(*types: type):
    def deco(fn: Handler) -> Handler:
        for t in types:
            _HANDLERS[t] = fn
        return fn
    return deco


def supported_types() -> list[str]:
    """Names of the module types :func:`lipschitz_bound` supports, sorted.

    Examples
    --------
    >>> {"Linear", "Conv2d", "EncoderBlock", "BasicBlock"} <= set(supported_types())
    True
    """
    return sorted(t.__name__ for t in _HANDLERS)


def _handler(module: nn.Module) -> Handler:
    for cls in type(module).__mro__:
        if cls in _HANDLERS:
            if type(module).forward is not cls.forward:  # a subclass with its own forward
                break
            return _HANDLERS[cls]
    if callable(getattr(module, "lipschitz_parts", None)):
        return _declared_parts
    kind = getattr(module, "lipschitz_kind", None)
    if isinstance(kind, str) and kind in DECLARED_KINDS:
        return DECLARED_KINDS[kind]
    raise TypeError(
        f"no Lipschitz bound for module type {type(module).__name__} "
        f"({type(module).__module__}); supported: {', '.join(supported_types())}"
    )


def _bound(module: nn.Module, x: torch.Tensor, margin: float) -> float:
    return float(_handler(module)(module, x, margin))


def _forward(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return as_function(module)(x)


# --------------------------------------------------------------------------- leaves


@_register(nn.Linear)
def _linear(module: nn.Linear, x: torch.Tensor, _margin: float) -> float:
    if x.shape[-1] != module.in_features:
        raise shape_error(module, f"(m, ..., {module.in_features})", x)
    return spectral_norm(module.weight)


@_register(nn.Conv2d)
def _conv(module: nn.Conv2d, x: torch.Tensor, _margin: float, out_scale=None) -> float:
    if x.ndim != 4 or x.shape[1] != module.in_channels:
        raise shape_error(module, f"(m, {module.in_channels}, H, W)", x)
    return conv2d_lipschitz(module, tuple(x.shape[-2:]), out_scale=out_scale)


@_register(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batchnorm(module, x: torch.Tensor, _margin: float) -> float:
    if x.ndim < 2 or x.shape[1] != module.num_features:
        raise shape_error(module, f"(m, {module.num_features}, ...)", x)
    return batchnorm_lipschitz(module)


@_register(nn.LayerNorm)
def _layernorm(module: nn.LayerNorm, x: torch.Tensor, margin: float) -> float:
    return layernorm_lipschitz(module, x, margin=margin)


@_register(*ELEMENTWISE_TYPES)
def _elementwise(module, _x: torch.Tensor, _margin: float) -> float:
    return activation_lipschitz(module)


@_register(nn.AvgPool2d, nn.AdaptiveAvgPool2d)
def _avgpool(module, x: torch.Tensor, _margin: float) -> float:
    if x.ndim != 4:
        raise shape_error(module, "(m, C, H, W)", x)
    return avgpool_lipschitz(module, tuple(x.shape[-2:]))


@_register(nn.MaxPool2d)
def _maxpool(module, _x: torch.Tensor, _margin: float) -> float:
    return maxpool_lipschitz(module)


def _token_radius(x: torch.Tensor) -> float:
    return float(x.detach().double().norm(dim=-1).max())


@_register(nn.MultiheadAttention)
def _mha(module: nn.MultiheadAttention, x: torch.Tensor, margin: float) -> float:
    if x.ndim != 3 or x.shape[-1] != module.embed_dim:
        raise shape_error(module, f"(m, n, {module.embed_dim}) (batch first)", x)
    return mha_lipschitz(module, _token_radius(x) + margin, x.shape[1])


@_register(L2SelfAttention)
def _l2att(module: L2SelfAttention, x: torch.Tensor, _margin: float) -> float:
    if x.ndim != 3 or x.shape[-1] != module.embed_dim:
        raise shape_error(module, f"(m, n, {module.embed_dim})", x)
    return l2_attention_lipschitz(module, x.shape[1])


# --------------------------------------------------------------------------- composites


def _affine_bn(layer: nn.Module, bn: nn.Module, x: torch.Tensor) -> float:
    """Bound of ``bn ∘ layer``, the BatchNorm folded into the weights (tighter than a product)."""
    scale = batchnorm_scale(bn)
    if isinstance(layer, nn.Conv2d):
        return _conv(layer, x, 0.0, out_scale=scale)
    if x.shape[-1] != layer.in_features:
        raise shape_error(layer, f"(m, {layer.in_features})", x)
    return spectral_norm(scale[:, None] * layer.weight.detach().double().cpu())


def _foldable(a: nn.Module, b: nn.Module | None) -> bool:
    return ((type(a) is nn.Conv2d and type(b) is nn.BatchNorm2d)
            or (type(a) is nn.Linear and type(b) is nn.BatchNorm1d)) and b.running_var is not None


def _chain(modules: list[nn.Module], x: torch.Tensor, margin: float) -> tuple[float, torch.Tensor]:
    """Product of the bounds of ``modules`` applied in order; returns (bound, output)."""
    total, i = 1.0, 0
    while i < len(modules):
        a = modules[i]
        b = modules[i + 1] if i + 1 < len(modules) else None
        if _foldable(a, b):
            lip = _affine_bn(a, b, x)
            x = _forward(b, _forward(a, x))
            i += 2
        else:
            lip = _bound(a, x, margin)
            x = _forward(a, x)
            i += 1
        total *= lip
        margin *= lip
    return total, x


@_register(nn.Sequential)
def _sequential(module: nn.Sequential, x: torch.Tensor, margin: float) -> float:
    return _chain(list(module), x, margin)[0]


@_register(Residual)
def _residual(module: Residual, x: torch.Tensor, margin: float) -> float:
    return 1.0 + _bound(module.branch, x, margin)


@_register(BasicBlock)
def _basic_block(module: BasicBlock, x: torch.Tensor, margin: float) -> float:
    main, _ = _chain([module.conv1, module.bn1, module.relu, module.conv2, module.bn2], x, margin)
    short = 1.0 if module.downsample is None else _bound(module.downsample, x, margin)
    return main + short  # the final ReLU is 1-Lipschitz


@_register(Bottleneck)
def _bottleneck(module: Bottleneck, x: torch.Tensor, margin: float) -> float:
    main, _ = _chain([module.conv1, module.bn1, module.relu, module.conv2, module.bn2,
                      module.relu, module.conv3, module.bn3], x, margin)
    short = 1.0 if module.downsample is None else _bound(module.downsample, x, margin)
    return main + short


@_register(EncoderBlock)
def _encoder_block(module: EncoderBlock, x: torch.Tensor, margin: float) -> float:
    if x.ndim != 3:
        raise shape_error(module, "(m, n, hidden_dim)", x)
    # x' = x + att(ln_1(x)); out = x' + mlp(ln_2(x'))  (dropout: identity in eval mode)
    l_ln1 = _bound(module.ln_1, x, margin)
    z = _forward(module.ln_1, x)
    radius = min(_token_radius(z) + l_ln1 * margin, layernorm_output_radius(module.ln_1))
    l_att = mha_lipschitz(module.self_attention, radius, x.shape[1])
    l_first = 1.0 + l_att * l_ln1
    x1 = x + _forward(module.self_attention, z)
    m1 = margin * l_first
    l_ln2 = _bound(module.ln_2, x1, m1)
    l_mlp = _bound(module.mlp, _forward(module.ln_2, x1), m1 * l_ln2)
    return l_first * (1.0 + l_mlp * l_ln2)


# --------------------------------------------------------------------------- declared modules
# A module that bounds cannot know (a model's own layer) declares what it is made of; no model
# class is imported here.


def _declared_parts(module: nn.Module, x: torch.Tensor, margin: float) -> float:
    """``module.lipschitz_parts()``: the map is their composition up to isometries and constant
    shifts (a permutation of coordinates, an added constant), so its bound is their chain's."""
    return _chain(list(module.lipschitz_parts()), x, margin)[0]


def _token_mean(module: nn.Module, x: torch.Tensor, _margin: float) -> float:
    # ‖(1/T) Σ_t x_t‖ ≤ ‖X‖_F / √T, equality for equal tokens
    if x.ndim != 3:
        raise shape_error(module, "(m, T, D)", x)
    return 1.0 / math.sqrt(x.shape[1])


#: Generic maps a module may declare itself to be with a class attribute ``lipschitz_kind``.
DECLARED_KINDS: dict[str, Handler] = {
    "token_mean": _token_mean,  # mean over the token axis, (m, T, D) -> (m, D)
}


# --------------------------------------------------------------------------- entry point


def lipschitz_bound(module: nn.Module, inputs, *, margin: float = 0.0) -> float:
    r"""Upper bound on the Lipschitz constant of ``module`` around the observed ``inputs``.

    Parameters
    ----------
    module : torch.nn.Module
        One of :func:`supported_types`: ``Linear``, ``Conv2d``, ``BatchNorm*`` (eval mode),
        ``LayerNorm``, elementwise activations (``ReLU``, ``GELU``, ...), ``Dropout``,
        ``Identity``, ``Flatten``, average/max pooling, ``MultiheadAttention`` (self-attention,
        batch-first inputs), :class:`L2SelfAttention`, ``Sequential`` (including torchvision's
        ``MLP``/``MLPBlock``), :class:`Residual`, torchvision ``BasicBlock``/``Bottleneck`` and
        ``EncoderBlock``; and any module that declares its structure: a method
        ``lipschitz_parts()`` returning the modules it composes, in order, up to isometries and
        constant shifts (e.g. :class:`topolip.nets.models.vit.ViTEmbedding`), or a class attribute
        ``lipschitz_kind`` naming one of :data:`DECLARED_KINDS` (``"token_mean"``). Evaluated
        in eval mode (the module's modes are restored afterwards).
    inputs : torch.Tensor or ndarray of shape (m, ...)
        A batch of the module's inputs; the local bounds (LayerNorm, dot-product attention)
        use their statistics (smallest token deviation, largest token norm ``R``, token count
        ``n``), the convolution and pooling bounds their spatial size.
    margin : float, default=0.0
        Perturbation radius ``δ`` (Euclidean, per sample, activation units). The bound holds for
        every pair ``(x, x̃)`` with ``x`` an observed input and ``‖x̃ − x‖ ≤ δ``. With ``δ = 0``
        the local bounds become the sup of the Jacobian norm at the observed points (the
        attention bound still covers the whole ball of token radius ``R``).

    Returns
    -------
    float
        An upper bound on ``‖f(x̃) − f(x)‖ / ‖x̃ − x‖`` in the Euclidean norm of the flattened
        sample (``f`` the per-sample map).

    Raises
    ------
    TypeError
        If ``module`` (or a part of it) is of an unsupported type; the message names the type
        and lists the supported ones. Also if ``inputs`` is not a tensor or array.
    ValueError
        If ``inputs`` is empty, holds NaN/inf, or has the wrong shape for the module, or if
        ``margin`` is negative; BatchNorm without running statistics; a weight or buffer that
        holds NaN/inf (the message names the layer, e.g. ``'0.weight'`` of a Sequential).

    Notes
    -----
    Rounding: every computed (not exact) factor carries its own allowance (spectral norms
    ``1e-10`` relative, LayerNorm and BatchNorm ``(4d + 16) u`` with ``u = 2⁻⁵³``), so
    ``lipschitz_estimate ≤ lipschitz_bound`` holds in floating point even where both are equal
    in exact arithmetic (LayerNorm on constant tokens); exact constants (ReLU 1) stay exact.

    Composition: ``Lip(g ∘ f) ≤ Lip(g) Lip(f)``; ``Lip(x + g(x)) ≤ 1 + Lip(g)``; a sum of
    branches ``≤`` the sum of their bounds (ResNet blocks: ``Lip(main) + Lip(shortcut)``, the
    final ReLU being 1-Lipschitz); a BatchNorm right after a convolution or linear map is folded
    into its weights first. ViT encoder block (pre-norm, derived here):
    ``(1 + Lip(att)·Lip(ln_1)) · (1 + Lip(mlp)·Lip(ln_2))``, where the attention's token radius
    is ``min(observed + Lip(ln_1)δ, max|γ|√d + ‖β‖)`` (the second is a global bound on any
    LayerNorm output). The per-type formulas and their sources are in :mod:`.conv`,
    :mod:`.norms`, :mod:`.activations`, :mod:`.attention` and :mod:`.pooling`.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios, A. Mnih, arXiv:2006.04710.
    .. [2] V. Castin, P. Ablin, G. Peyré, arXiv:2312.14820.
    .. [3] H. Sedghi, V. Gupta, P. M. Long, arXiv:1805.10408.
    .. [4] B. Delattre et al., arXiv:2305.16173.

    Examples
    --------
    >>> lin = nn.Linear(2, 2, bias=False)
    >>> _ = lin.weight.data.copy_(torch.tensor([[3.0, 0.0], [0.0, -5.0]]))
    >>> round(lipschitz_bound(nn.Sequential(lin, nn.ReLU()), torch.randn(4, 2)), 6)
    5.0
    >>> lipschitz_bound(nn.Softmax(dim=1), torch.randn(4, 2))
    Traceback (most recent call last):
    ...
    TypeError: no Lipschitz bound for module type Softmax (torch.nn.modules.activation); ...
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    margin = check_margin(margin)
    _handler(module)  # fail on an unsupported type before any work
    check_finite_state(module)
    x = as_batch(inputs)
    device, dtype = module_device_dtype(module)
    x = x.to(device, dtype)
    with eval_mode(module):
        value = _bound(module, x, margin)
    if math.isnan(value):
        raise ValueError(f"the bound of {type(module).__name__} is NaN; check its weights")
    return value
