r"""Bounds applied to the models the project builds: one segment per probe point.

A model built by :func:`topolip.nets.models.build_model` carries ``probe_points``; the map from one
probe point's activation to the next one's is a *segment* ``f_ℓ``, so that
``h_ℓ = f_ℓ ∘ … ∘ f_1`` (book/method.md). :func:`model_segments` cuts a model into these
segments (as modules sharing the model's weights) and :func:`layer_bounds` gives, per segment,
the bound from the actual weights and the observed inputs, the local estimate, their chained
product and, for paired perturbations, the certified chain ``ε_ℓ ≤ Lip(f_ℓ) ε_{ℓ−1}``.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import pandas as pd
import torch
from torch import nn

from topolip.bounds._checks import as_batch, module_device_dtype
from topolip.bounds.dispatch import lipschitz_bound
from topolip.bounds.estimate import lipschitz_estimate
from topolip.tensors import eval_mode

__all__ = ["model_segments", "layer_bounds", "BoundViolation"]


class BoundViolation(RuntimeError):
    """An estimate exceeded its bound, or a measured displacement its certified chain: a bug."""


def _units(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The model's own declaration of its forward pass: ordered (submodule path, module)."""
    declare = getattr(model, "forward_units", None)
    if not callable(declare):
        raise ValueError(
            f"no segment decomposition for {type(model).__name__}: it declares no "
            "forward_units() (the models built by topolip.nets.models.build_model do: ViT, ResNet "
            "and the plain stacks)"
        )
    return list(declare())


def model_segments(model: nn.Module) -> OrderedDict[str, nn.Module]:
    """The segment ``f_ℓ`` between each probe point and the previous one, in probe order.

    Parameters
    ----------
    model : torch.nn.Module
        Built by :func:`topolip.nets.models.build_model` (``"vit"``, ``"resnet"``, and the plain
        stacks ``"attention_stack"``/``"conv_stack"``): any model with ``probe_points`` and a
        method ``forward_units()`` returning its forward pass as ordered ``(submodule path,
        module)`` pairs, every probe path among them.

    Returns
    -------
    OrderedDict of str to torch.nn.Module
        ``{label: segment}`` for every probe label after ``"input"``; a segment is the module
        itself when one module lies between the probes, else an ``nn.Sequential`` of the modules
        in forward order (sharing the model's weights). Chaining them reproduces the probes'
        activations. The ViT embedding segment is a :class:`topolip.nets.models.vit.ViTEmbedding`.

    Raises
    ------
    ValueError
        If the model has no probe points, declares no ``forward_units()``, or a probe path is
        not on its forward path.

    Examples
    --------
    >>> from topolip.nets.models import build_model
    >>> segs = model_segments(build_model("resnet", width=4))
    >>> {k: type(v).__name__ for k, v in segs.items()}
    {'stem': 'Sequential', 'block1': 'BasicBlock', 'block2': 'BasicBlock', 'block3': 'BasicBlock',
     'block4': 'BasicBlock', 'pool': 'AdaptiveAvgPool2d'}
    """
    points = getattr(model, "probe_points", None)
    if not points:
        raise ValueError(f"{type(model).__name__} has no probe_points; build it with "
                         "topolip.nets.models.build_model")
    units = _units(model)
    paths = [p for p, _ in units]
    segments: OrderedDict[str, nn.Module] = OrderedDict()
    start = 0
    for label, path in points.items():
        if path not in paths[start:]:
            raise ValueError(f"probe {label!r} ({path!r}) is not on the forward path after "
                             f"{paths[start - 1] if start else 'the input'!r}")
        stop = paths.index(path, start) + 1
        mods = [m for _, m in units[start:stop]]
        segments[label] = mods[0] if len(mods) == 1 else nn.Sequential(*mods)
        start = stop
    return segments


def _segment_name(seg: nn.Module) -> str:
    """Module types of a segment, nested ``Sequential`` flattened, identities dropped."""
    if type(seg) is nn.Sequential:
        names = [_segment_name(m) for m in seg if not isinstance(m, (nn.Identity, nn.Dropout))]
        return "+".join(names)
    return type(seg).__name__


def _forward(seg: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out = seg(x)
    return out[0] if isinstance(out, tuple) else out


def _max_dist(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).flatten(1).norm(dim=1).max())


def layer_bounds(
    model: nn.Module,
    x,
    x_tilde=None,
    *,
    estimate: bool = True,
    estimate_samples: int = 16,
    n_iter: int = 30,
    seed: int = 0,
    check: bool = True,
) -> pd.DataFrame:
    r"""Per probe point: the Lipschitz bound of its segment, the local estimate, the chain.

    Parameters
    ----------
    model : torch.nn.Module
        Built by :func:`topolip.nets.models.build_model`; evaluated in eval mode (restored after).
    x : torch.Tensor of shape (m, C, H, W)
        Clean images, pixels in [0, 1]; their activations are each segment's observed inputs.
    x_tilde : torch.Tensor of shape (m, C, H, W), optional
        The paired perturbed images (row ``i`` perturbs row ``i``). Then each segment's bound is
        taken with margin ``ε_{ℓ−1}`` (the measured displacement at its input), which makes
        ``ε_ℓ ≤ Lip(f_ℓ) ε_{ℓ−1}`` a certified inequality, checked on every layer.
    estimate : bool, default=True
        Compute the local estimate (:func:`lipschitz_estimate`) of each segment.
    estimate_samples : int, default=16
        The estimate uses the first ``estimate_samples`` inputs.
    n_iter : int, default=30
        Power iterations of the estimate.
    seed : int, default=0
        Seed of the estimate's start vectors.
    check : bool, default=True
        Raise :class:`BoundViolation` if an estimate exceeds its bound or (with ``x_tilde``) a
        measured ``ε_ℓ`` exceeds ``Lip(f_ℓ) ε_{ℓ−1}`` (beyond float32 rounding).

    Returns
    -------
    pandas.DataFrame
        One row per probe point, ``"input"`` first (its per-segment columns NaN), columns:
        ``layer``, ``depth``, ``segment`` (module types), ``n_tokens`` (for token inputs, else
        NaN), ``input_radius`` (largest token norm, or sample norm, of the segment's inputs),
        ``bound`` (``Lip(f_ℓ)``), ``estimate``, ``ratio`` (bound/estimate), ``chained_bound``
        (``Π_{j≤ℓ} Lip(f_j)``, 1 at the input); with ``x_tilde`` also ``margin``, ``eps``
        (``ε_ℓ``), ``eps_bound_step`` (``Lip(f_ℓ) ε_{ℓ−1}``), ``eps_bound_chain``
        (``chained_bound · ε_0``) and ``envelope_chain`` (``2 · eps_bound_chain``, a bound on
        the bottleneck displacement ``W_{∞,∞}`` that holds *given the measured margins*: the
        local bounds of LayerNorm and attention are taken on the observed inputs widened by the
        measured ``ε_{ℓ−1}``, so the chain is not an a-priori certificate for every input).
        No column bounds TopoLip itself: ``2 Lip(f_ℓ)`` limits ``W_{∞,∞,ℓ} / ε_{ℓ−1}``, not
        ``Δ_ℓ / Δ_{ℓ−1}`` (book/method.md).

    Raises
    ------
    ValueError
        On unsupported models, non-finite or mismatched inputs.
    TypeError
        If a segment holds a module type :func:`lipschitz_bound` does not support.
    BoundViolation
        See ``check``.

    Notes
    -----
    Stability of persistence (Cohen-Steiner, Edelsbrunner and Harer 2007) under a perturbation
    of the distance matrix by at most ``2ε_ℓ`` gives ``W_{∞,∞} ≤ 2ε_ℓ ≤ 2 Π_j Lip(f_j) ε_0``
    (book/method.md, certified envelope).

    References
    ----------
    .. [1] D. Cohen-Steiner, H. Edelsbrunner, J. Harer, "Stability of persistence diagrams",
       Discrete Comput. Geom. 37 (2007).
    .. [2] F. Chazal, V. de Silva, S. Oudot, "Persistence stability for geometric complexes",
       arXiv:1207.3885.

    Examples
    --------
    >>> from topolip.nets.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> model = build_model("resnet", width=2)
    >>> x = torch.rand(3, 1, 28, 28)
    >>> t = layer_bounds(model, x, x + 0.01 * torch.randn_like(x), n_iter=5)
    >>> list(t["layer"]), bool((t["eps"] <= t["eps_bound_chain"] + 1e-6).all())
    (['input', 'stem', 'block1', 'block2', 'block3', 'block4', 'pool'], True)
    """
    segments = model_segments(model)
    x = as_batch(x, "x")
    device, dtype = module_device_dtype(model)
    h = x.to(device, dtype)
    paired = x_tilde is not None
    if paired:
        ht = as_batch(x_tilde, "x_tilde").to(device, dtype)
        if ht.shape != h.shape:
            raise ValueError(f"x_tilde must have the shape of x {tuple(h.shape)}, got "
                             f"{tuple(ht.shape)}")
    rows: list[dict] = []
    with eval_mode(model):
        chained = 1.0
        first = {"layer": "input", "depth": 0, "segment": "", "n_tokens": math.nan,
                 "input_radius": math.nan, "bound": math.nan, "estimate": math.nan,
                 "ratio": math.nan, "chained_bound": 1.0}
        if paired:
            eps = _max_dist(h, ht)
            eps0 = eps
            first.update(margin=math.nan, eps=eps, eps_bound_step=math.nan, eps_bound_chain=eps,
                         envelope_chain=2 * eps)
        rows.append(first)
        for depth, (label, seg) in enumerate(segments.items(), start=1):
            margin = eps if paired else 0.0
            bound = lipschitz_bound(seg, h, margin=margin)
            est = (lipschitz_estimate(seg, h, max_samples=estimate_samples, n_iter=n_iter,
                                      seed=seed) if estimate else math.nan)
            tokens = h.ndim == 3
            radius = float((h.double().norm(dim=-1) if tokens else h.double().flatten(1)
                            .norm(dim=1)).max())
            chained *= bound
            row = {"layer": label, "depth": depth, "segment": _segment_name(seg),
                   "n_tokens": h.shape[1] if tokens else math.nan, "input_radius": radius,
                   "bound": bound, "estimate": est,
                   "ratio": bound / est if est > 0 else math.nan,
                   "chained_bound": chained}
            h_next = _forward(seg, h)
            if check and estimate and est > bound * (1 + 1e-6) + 1e-9:
                raise BoundViolation(f"layer {label!r}: local estimate {est:.6g} exceeds the "
                                     f"bound {bound:.6g} of {_segment_name(seg)}; a bug")
            if paired:
                ht_next = _forward(seg, ht)
                eps_new = _max_dist(h_next, ht_next)
                step = bound * eps
                slack = 1e-5 * max(1.0, float(h_next.abs().max()), float(ht_next.abs().max()))
                if check and eps_new > step * (1 + 1e-6) + slack:
                    raise BoundViolation(
                        f"layer {label!r}: displacement eps={eps_new:.6g} exceeds "
                        f"Lip·eps_prev = {bound:.6g}·{eps:.6g} = {step:.6g}; a bug")
                row.update(margin=margin, eps=eps_new, eps_bound_step=step,
                           eps_bound_chain=chained * eps0, envelope_chain=2 * chained * eps0)
                eps, ht = eps_new, ht_next
            rows.append(row)
            h = h_next
    table = pd.DataFrame(rows)
    table["n_tokens"] = table["n_tokens"].astype(float)
    return table
