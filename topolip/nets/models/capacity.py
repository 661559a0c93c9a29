"""Capacity of a model: its parameters and the floating-point operations of one forward pass,
and the check that the architectures a comparison pairs are matched in size.

A comparison of attention with convolution means little when one side has twice the weights
of the other: :func:`capacity_table` says, per compared pair, how far apart they are, and the
training notebook fails when a pair lies outside the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from topolip.schema import require_columns
from topolip.tensors import eval_mode

__all__ = ["MATCH_TOLERANCE", "capacity_table", "count_parameters", "flops_per_image"]

#: Largest relative difference in parameters of two architectures compared with each other.
MATCH_TOLERANCE = 0.15


def count_parameters(model: nn.Module) -> int:
    """The number of weights (every parameter's elements, trainable or not).

    Examples
    --------
    >>> count_parameters(nn.Linear(3, 2))
    8
    """
    return int(sum(p.numel() for p in model.parameters()))


def flops_per_image(model: nn.Module, image_shape: Sequence[int]) -> int:
    """Floating-point operations of one forward pass on one image.

    Counted by PyTorch's own :class:`torch.utils.flop_counter.FlopCounterMode` on a batch of
    one zero image in eval mode: matrix products, convolutions and attention, two operations
    per multiply-add; element-wise operations (activations, normalization, softmax) are not
    counted, as is usual for FLOP tables.

    Parameters
    ----------
    model : torch.nn.Module
        A model from images ``(N, C, H, W)`` to logits.
    image_shape : sequence of int
        ``(C, H, W)`` of one image.

    Returns
    -------
    int
        FLOPs per image.

    Raises
    ------
    ValueError
        If ``image_shape`` is not three positive ints.

    Examples
    --------
    >>> flops_per_image(nn.Sequential(nn.Flatten(), nn.Linear(4, 3)), (1, 2, 2))
    24
    """
    shape = tuple(image_shape)
    if len(shape) != 3 or not all(isinstance(s, int) and s > 0 for s in shape):
        raise ValueError(f"image_shape must be (C, H, W) of positive ints, got {image_shape!r}")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    with eval_mode(model), torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.zeros((1, *shape), device=device))
    return int(counter.get_total_flops())


def capacity_table(models: pd.DataFrame, pairs: Sequence[tuple[str, str]], *,
                   tolerance: float = MATCH_TOLERANCE) -> pd.DataFrame:
    """Parameters and FLOPs of each compared pair of architectures, and whether they match.

    Parameters
    ----------
    models : pandas.DataFrame
        One row per trained model with ``arch``, ``parameters`` and ``flops`` (FLOPs per
        image), e.g. ``tables/models.csv``; an architecture's models share their size.
    pairs : sequence of (str, str)
        The (attention, convolution) pairs compared, e.g.
        :data:`topolip.evidence.claims.FAMILY_PAIRS`; a pair with an architecture missing from
        ``models`` is skipped.
    tolerance : float, default=0.15
        Largest allowed ``|parameters_a / parameters_b - 1|``.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``attention``, ``convolution``, ``parameters_attention``,
        ``parameters_convolution``, ``parameter_ratio`` (attention over convolution),
        ``flops_attention``, ``flops_convolution``, ``flop_ratio``, ``matched`` (bool).

    Raises
    ------
    ValueError
        If a column is missing or ``tolerance`` is not in [0, 1).

    Examples
    --------
    >>> m = pd.DataFrame({"arch": ["vit", "resnet"], "parameters": [110, 100],
    ...                   "flops": [1000, 4000]})
    >>> t = capacity_table(m, [("vit", "resnet")])
    >>> t[["parameter_ratio", "flop_ratio", "matched"]].values.tolist()
    [[1.1, 0.25, True]]
    """
    require_columns(models, ("arch", "parameters", "flops"), "models")
    if not (isinstance(tolerance, int | float) and 0 <= tolerance < 1):
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    size = models.groupby("arch")[["parameters", "flops"]].first()
    rows = []
    for att, conv in pairs:
        if att not in size.index or conv not in size.index:
            continue
        pa, pc = float(size.loc[att, "parameters"]), float(size.loc[conv, "parameters"])
        fa, fc = float(size.loc[att, "flops"]), float(size.loc[conv, "flops"])
        ratio = pa / pc
        rows.append({"attention": att, "convolution": conv, "parameters_attention": int(pa),
                     "parameters_convolution": int(pc), "parameter_ratio": round(ratio, 4),
                     "flops_attention": int(fa), "flops_convolution": int(fc),
                     "flop_ratio": round(fa / fc, 4) if fc > 0 else math.nan,
                     "matched": bool(abs(ratio - 1) <= tolerance)})
    return pd.DataFrame(rows, columns=["attention", "convolution", "parameters_attention",
                                       "parameters_convolution", "parameter_ratio",
                                       "flops_attention", "flops_convolution", "flop_ratio",
                                       "matched"])
