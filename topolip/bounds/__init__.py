"""Lipschitz bounds for every probed layer, and their empirical check (book/method.md).

Public entry points:

- :func:`lipschitz_bound` ``(module, inputs) -> float``: a certified upper bound on the
  Lipschitz constant of a supported module (Euclidean norm of the flattened sample), global where
  one exists, local around the observed ``inputs`` where it does not (LayerNorm, dot-product
  attention);
- :func:`lipschitz_estimate` ``(module, inputs) -> float``: the empirical local constant, a
  lower bound (power iteration on ``JᵀJ`` with ``torch.func``);
- :func:`layer_bounds` ``(model, x[, x_tilde]) -> DataFrame``: both, per probe point of a model
  built by :func:`topolip.nets.models.build_model`, with the chained product and the certified
  displacement chain ``ε_ℓ ≤ Lip(f_ℓ) ε_{ℓ−1}``.

The formulas, derivations and sources are in the docstrings of the per-concept modules
(:mod:`.conv`, :mod:`.norms`, :mod:`.activations`, :mod:`.attention`, :mod:`.pooling`) and in
the theory notebook ``notebooks/00_theory.py``.
"""

from topolip.bounds.activations import (
    GELU_LIPSCHITZ,
    GELU_TANH_LIPSCHITZ,
    SILU_LIPSCHITZ,
    activation_lipschitz,
)
from topolip.bounds.attention import (
    L2SelfAttention,
    dot_product_attention_lipschitz,
    l2_attention_lipschitz,
    mha_lipschitz,
    mha_weights,
)
from topolip.bounds.blocks import Residual
from topolip.bounds.conv import (
    ConvNormBounds,
    conv2d_cheap_bound,
    conv2d_lipschitz,
    conv2d_norm_bounds,
)
from topolip.bounds.dispatch import DECLARED_KINDS, lipschitz_bound, supported_types
from topolip.bounds.estimate import as_function, lipschitz_estimate
from topolip.bounds.norms import (
    batchnorm_lipschitz,
    batchnorm_scale,
    layernorm_lipschitz,
    layernorm_output_radius,
)
from topolip.bounds.pooling import avgpool_lipschitz, maxpool_lipschitz
from topolip.bounds.segments import BoundViolation, layer_bounds, model_segments
from topolip.bounds.theory import attention_scaling, bound_check, conv_scaling, random_layers

__all__ = [
    "BoundViolation",
    "ConvNormBounds",
    "DECLARED_KINDS",
    "GELU_LIPSCHITZ",
    "GELU_TANH_LIPSCHITZ",
    "L2SelfAttention",
    "Residual",
    "SILU_LIPSCHITZ",
    "activation_lipschitz",
    "as_function",
    "attention_scaling",
    "avgpool_lipschitz",
    "batchnorm_lipschitz",
    "batchnorm_scale",
    "bound_check",
    "conv2d_cheap_bound",
    "conv2d_lipschitz",
    "conv2d_norm_bounds",
    "conv_scaling",
    "dot_product_attention_lipschitz",
    "l2_attention_lipschitz",
    "layer_bounds",
    "layernorm_lipschitz",
    "layernorm_output_radius",
    "lipschitz_bound",
    "lipschitz_estimate",
    "maxpool_lipschitz",
    "mha_lipschitz",
    "mha_weights",
    "model_segments",
    "random_layers",
    "supported_types",
]
