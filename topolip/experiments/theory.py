"""The experiments of the theory chapter: every bound against its estimate on random layers, and
how the attention and convolution bounds scale (``notebooks/00_theory.py``).

Each function returns a tidy DataFrame and raises :class:`~.segments.BoundViolation` if an
estimate (a lower bound of the local Lipschitz constant) exceeds its bound: a bug.

Random state. The random modules are initialised by PyTorch from its global generator (seed it
with :func:`torch.manual_seed`); the random inputs and BatchNorm statistics are drawn from the
``generator`` passed. Calling the functions in the same order with generators in the same state
gives the same tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn
from torchvision.models.resnet import BasicBlock
from torchvision.models.vision_transformer import EncoderBlock, MLPBlock

from topolip.bounds.attention import L2SelfAttention, mha_lipschitz
from topolip.bounds.conv import conv2d_norm_bounds
from topolip.bounds.dispatch import lipschitz_bound
from topolip.bounds.estimate import lipschitz_estimate
from topolip.bounds.segments import BoundViolation

__all__ = ["attention_scaling", "bound_check", "conv_scaling", "random_layers"]

#: Relative slack allowed between an estimate and its bound (float32 rounding of the estimate).
RTOL = 1e-6


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def random_layers(*, token_dim: int, heads: int, channels: int, image_size: int,
                  n_tokens: int, samples: int, generator: torch.Generator
                  ) -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """One random layer of every kind the book bounds, each with random inputs.

    Parameters
    ----------
    token_dim : int
        Width ``D`` of the token layers (linear, LayerNorm, attention, encoder blocks); a
        multiple of ``heads``.
    heads : int
        Attention heads.
    channels : int
        Channels ``C`` of the convolutions, BatchNorm and pooling layers.
    image_size : int
        Side of their ``(C, image_size, image_size)`` inputs, pixels.
    n_tokens : int
        Sequence length of the token inputs.
    samples : int
        Inputs per layer.
    generator : torch.Generator
        Draws the inputs and the BatchNorm running statistics and scales (the modules'
        weights come from PyTorch's global generator, in the order of the returned mapping).

    Returns
    -------
    dict of str to (torch.nn.Module, torch.Tensor)
        ``{name: (module, inputs)}`` in a fixed order, modules in eval mode's sense ready
        (dropout 0); inputs of shape ``(samples, token_dim)``, ``(samples, n_tokens,
        token_dim)`` or ``(samples, C, image_size, image_size)``. GELU's inputs sit at its
        steepest point ``√2``, the ViT patch convolution's in ``[0, 1]``.

    Raises
    ------
    ValueError
        If a size is not a positive integer or ``token_dim`` is not a multiple of ``heads``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> layers = random_layers(token_dim=8, heads=2, channels=2, image_size=4, n_tokens=3,
    ...                        samples=2, generator=torch.Generator().manual_seed(0))
    >>> len(layers), tuple(layers["LayerNorm"][1].shape)
    (17, (2, 3, 8))
    """
    d, h = _positive_int(token_dim, "token_dim"), _positive_int(heads, "heads")
    c, s = _positive_int(channels, "channels"), _positive_int(image_size, "image_size")
    n, m = _positive_int(n_tokens, "n_tokens"), _positive_int(samples, "samples")
    if d % h:
        raise ValueError(f"token_dim must be a multiple of heads; got token_dim={d}, heads={h}")
    gen = generator

    def tokens():
        return torch.randn(m, n, d, generator=gen)

    def images(ch=c):
        return torch.randn(m, ch, s, s, generator=gen)

    layers = {
        "Linear": (nn.Linear(d, 2 * d), torch.randn(m, d, generator=gen)),
        "Conv2d 3×3": (nn.Conv2d(c, c, 3, padding=1), images()),
        "Conv2d 3×3 stride 2": (nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), images()),
        "Conv2d 1×1": (nn.Conv2d(c, 2 * c, 1), images()),
        "Conv2d patch (ViT)": (nn.Conv2d(1, d, 4, stride=4),
                               torch.rand(m, 1, s, s, generator=gen)),
        "BatchNorm2d": (nn.BatchNorm2d(c), images()),
        "LayerNorm": (nn.LayerNorm(d), tokens()),
        "ReLU": (nn.ReLU(), torch.randn(m, d, generator=gen)),
        "GELU": (nn.GELU(), math.sqrt(2) + 0.1 * torch.randn(m, d, generator=gen)),
        "AdaptiveAvgPool2d": (nn.AdaptiveAvgPool2d(1), images()),
        "MaxPool2d 3×3": (nn.MaxPool2d(3, stride=1, padding=1), images()),
        "MLPBlock": (MLPBlock(d, 2 * d, 0.0), tokens()),
        "Conv+BN+ReLU": (nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c),
                                       nn.ReLU()), images()),
        "BasicBlock": (BasicBlock(c, c), images()),
        "MultiheadAttention": (nn.MultiheadAttention(d, h, batch_first=True), tokens()),
        "L2SelfAttention": (L2SelfAttention(d, h), tokens()),
        "EncoderBlock": (EncoderBlock(h, d, 2 * d, 0.0, 0.0), tokens()),
    }
    for module, _ in layers.values():  # BatchNorm running statistics and affine maps at random
        for mod in module.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.normal_(generator=gen)
                mod.running_var.uniform_(0.2, 3.0, generator=gen)
                mod.weight.data.normal_(generator=gen)
    return layers


def _check(table: pd.DataFrame, bound: str, what: str) -> pd.DataFrame:
    est = table["estimate"]
    bad = est.notna() & (est > table[bound] * (1 + RTOL))
    if bad.any():
        raise BoundViolation(f"{what}: the estimate exceeds the bound (a bug) in rows "
                             f"{table.index[bad].tolist()}:\n{table[bad]}")
    return table


def bound_check(layers: Mapping[str, tuple[nn.Module, torch.Tensor]], *, n_iter: int = 20,
                seed: int = 0) -> pd.DataFrame:
    """Every layer's bound against its estimate at its inputs.

    Parameters
    ----------
    layers : mapping of str to (torch.nn.Module, torch.Tensor)
        ``{name: (module, inputs)}``, e.g. :func:`random_layers`; modules supported by
        :func:`~.dispatch.lipschitz_bound`.
    n_iter : int, default=20
        Power iterations of :func:`~.estimate.lipschitz_estimate`.
    seed : int, default=0
        Seed of the estimate's start vectors.

    Returns
    -------
    pandas.DataFrame
        One row per layer, in order: ``layer``, ``bound`` (:func:`lipschitz_bound` at the
        inputs, margin 0), ``estimate`` (the largest Jacobian norm at the inputs, a lower
        bound) and ``bound / estimate`` (1 = tight).

    Raises
    ------
    BoundViolation
        If an estimate exceeds its bound by more than a relative ``1e-6``.
    ValueError
        If ``layers`` is empty.

    Examples
    --------
    >>> t = bound_check({"ReLU": (nn.ReLU(), torch.randn(2, 3))}, n_iter=3)
    >>> t[["layer", "bound"]].to_dict("records")
    [{'layer': 'ReLU', 'bound': 1.0}]
    """
    if not layers:
        raise ValueError("layers must hold at least one (module, inputs) pair; got none")
    rows = []
    for name, (module, x) in layers.items():
        bound = lipschitz_bound(module, x)
        est = lipschitz_estimate(module, x, n_iter=n_iter, seed=seed)
        rows.append({"layer": name, "bound": bound, "estimate": est,
                     "bound / estimate": bound / est})
    return _check(pd.DataFrame(rows), "bound", "bound_check")


def _on_sphere(shape: tuple[int, ...], radius: float, generator: torch.Generator) -> torch.Tensor:
    x = torch.randn(*shape, generator=generator)
    return radius * x / x.norm(dim=-1, keepdim=True)


def attention_scaling(*, width: int, heads: int, n_grid: Sequence[int],
                      radius_grid: Sequence[float], width_grid: Sequence[int], samples: int,
                      generator: torch.Generator, n_iter: int = 20, seed: int = 0,
                      max_estimate_tokens: int = 64,
                      width_lengths: Sequence[int] = (4, 16)) -> pd.DataFrame:
    r"""The local bound of random multi-head attention and its estimate, swept.

    One random ``nn.MultiheadAttention(width, heads)`` is bounded
    (:func:`~.attention.mha_lipschitz`) on sequences of ``n`` tokens of norm at most ``R`` for
    every ``(R, n)`` of the grids, and estimated at ``samples`` random sequences whose tokens all
    have norm exactly ``R``; then one random layer per width of ``width_grid`` at ``R = 1``
    and ``n`` in ``width_lengths``.

    Parameters
    ----------
    width : int
        Token dimension ``D`` of the length and radius sweeps.
    heads : int
        Heads of every layer (divides ``width`` and every ``width_grid`` entry).
    n_grid : sequence of int
        Sequence lengths ``n`` (tokens).
    radius_grid : sequence of float
        Token radii ``R`` (activation units).
    width_grid : sequence of int
        Widths ``D`` of the width sweep.
    samples : int
        Random sequences per estimate.
    generator : torch.Generator
        Draws the random sequences (the layers' weights come from PyTorch's global generator).
    n_iter : int, default=20
        Power iterations of the estimate.
    seed : int, default=0
        Seed of the estimate's start vectors.
    max_estimate_tokens : int, default=64
        The estimate of the length sweep is computed up to this ``n`` (NaN beyond: it costs
        ``O(n²)`` per Jacobian product).
    width_lengths : sequence of int, default=(4, 16)
        Sequence lengths of the width sweep.

    Returns
    -------
    pandas.DataFrame
        Columns ``n``, ``R``, ``width``, ``bound``, ``estimate`` (NaN where not computed): first
        ``len(radius_grid) * len(n_grid)`` rows (R-major) at ``width``, then
        ``len(width_grid) * len(width_lengths)`` rows at ``R = 1``.

    Raises
    ------
    BoundViolation
        If an estimate exceeds its bound.
    ValueError
        For a width that ``heads`` does not divide (from PyTorch), or empty grids.

    Notes
    -----
    The bound grows like ``√n`` for moderate ``n`` and saturates for ``n ≫ e^Δ``,
    ``Δ = 2R(‖A‖R + ‖a‖)`` (see :func:`~.attention.dot_product_attention_lipschitz`); Castin
    et al. (2024) prove the ``√n`` growth is unavoidable in the worst case.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios and A. Mnih, "The Lipschitz constant of self-attention",
       ICML 2021, arXiv:2006.04710.
    .. [2] V. Castin, P. Ablin and G. Peyré, "How smooth is attention?", ICML 2024,
       arXiv:2312.14820.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> t = attention_scaling(width=4, heads=2, n_grid=[1, 2], radius_grid=[1.0],
    ...                       width_grid=[4], samples=2, n_iter=3,
    ...                       generator=torch.Generator().manual_seed(0))
    >>> t[["n", "R", "width"]].values.tolist()
    [[1.0, 1.0, 4.0], [2.0, 1.0, 4.0], [4.0, 1.0, 4.0], [16.0, 1.0, 4.0]]
    >>> bool((t["estimate"] <= t["bound"]).all())
    True
    """
    if not (len(n_grid) and len(radius_grid)):
        raise ValueError("n_grid and radius_grid must be non-empty")
    rows = []
    mha = nn.MultiheadAttention(width, heads, batch_first=True)
    for radius in radius_grid:
        for n in n_grid:
            bound = mha_lipschitz(mha, radius, n)
            x = _on_sphere((samples, n, width), radius, generator)
            est = (lipschitz_estimate(mha, x, n_iter=n_iter, seed=seed)
                   if n <= max_estimate_tokens else np.nan)
            rows.append({"n": n, "R": radius, "width": width, "bound": bound, "estimate": est})
    for w in width_grid:
        mha_w = nn.MultiheadAttention(w, heads, batch_first=True)
        for n in width_lengths:
            x = _on_sphere((samples, n, w), 1.0, generator)
            rows.append({"n": n, "R": 1.0, "width": w, "bound": mha_lipschitz(mha_w, 1.0, n),
                         "estimate": lipschitz_estimate(mha_w, x, n_iter=n_iter, seed=seed)})
    return _check(pd.DataFrame(rows), "bound", "attention_scaling")


def conv_scaling(*, channels: int, image_size: int, kernel_grid: Sequence[int],
                 channel_grid: Sequence[int], input_size_grid: Sequence[int],
                 generator: torch.Generator, n_iter: int = 20, seed: int = 0) -> pd.DataFrame:
    """Bounds on random convolutions' operator norms against kernel size, channels, input size.

    Every convolution has stride 1 and "same" zero padding (odd kernels). Three sweeps, in
    order: one ``Conv2d(channels, channels, k)`` per kernel size ``k`` on
    ``image_size``-pixel inputs; one ``Conv2d(ch, ch, 3)`` per channel count; one fixed
    ``Conv2d(channels, channels, 3)`` on every input side of ``input_size_grid``.

    Parameters
    ----------
    channels : int
        Channels of the kernel and input-size sweeps.
    image_size : int
        Input side (pixels) of the kernel and channel sweeps.
    kernel_grid : sequence of int
        Kernel sizes (odd).
    channel_grid : sequence of int
        Channel counts.
    input_size_grid : sequence of int
        Input sides, pixels.
    generator : torch.Generator
        Draws the estimate's two random inputs per row (weights: PyTorch's global generator).
    n_iter : int, default=20
        Power iterations of the estimate.
    seed : int, default=0
        Seed of the estimate's start vectors.

    Returns
    -------
    pandas.DataFrame
        One row per convolution: ``sweep`` ("kernel size", "channels", "input size"),
        ``value``, ``certified`` (Lanczos and Cholesky test), ``method``, ``circular``
        (circular-embedding bound), ``cheap`` (patch counting), ``estimate``
        (:func:`~.conv.conv2d_norm_bounds` fields and :func:`lipschitz_estimate`).

    Raises
    ------
    BoundViolation
        If an estimate exceeds the certified bound, or the certified bound exceeds the
        circular or the cheap one.

    References
    ----------
    .. [1] H. Sedghi, V. Gupta and P. M. Long, "The singular values of convolutional layers",
       ICLR 2019, arXiv:1805.10408.
    .. [2] M. Cisse et al., "Parseval networks", ICML 2017, arXiv:1704.08847.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> t = conv_scaling(channels=2, image_size=4, kernel_grid=[1], channel_grid=[1],
    ...                  input_size_grid=[3], n_iter=3,
    ...                  generator=torch.Generator().manual_seed(0))
    >>> t["sweep"].tolist()
    ['kernel size', 'channels', 'input size']
    >>> bool((t["estimate"] <= t["certified"] * (1 + 1e-6)).all())
    True
    """
    convs = [("kernel size", k, nn.Conv2d(channels, channels, k, padding=k // 2),
              (image_size, image_size)) for k in kernel_grid]
    convs += [("channels", ch, nn.Conv2d(ch, ch, 3, padding=1), (image_size, image_size))
              for ch in channel_grid]
    fixed = nn.Conv2d(channels, channels, 3, padding=1)
    convs += [("input size", size, fixed, (size, size)) for size in input_size_grid]
    rows = []
    for sweep, value, conv, hw in convs:
        nb = conv2d_norm_bounds(conv, hw)
        x = torch.randn(2, conv.in_channels, *hw, generator=generator)
        est = lipschitz_estimate(conv, x, n_iter=n_iter, seed=seed)
        rows.append({"sweep": sweep, "value": value, "certified": nb.upper, "method": nb.method,
                     "circular": nb.circular, "cheap": nb.cheap, "estimate": est})
    table = _check(pd.DataFrame(rows), "certified", "conv_scaling")
    loose = table[["circular", "cheap"]].min(axis=1) * (1 + 1e-9)
    if (table["certified"] > loose).any():
        raise BoundViolation("conv_scaling: the certified bound exceeds the circular or the "
                             f"cheap bound (a bug):\n{table[table['certified'] > loose]}")
    return table
