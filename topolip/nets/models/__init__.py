"""Models whose layers TopoLip probes: small ViT and ResNet (torchvision classes) and plain stacks.

:func:`build_model` is the one entry point used by the notebooks and the pipeline; each builder
records ``model.probe_points`` (ordered ``{label: submodule path}``) and ``model.arch``, and each
model class declares its forward pass as ordered ``(submodule path, module)`` pairs
(``forward_units()``), which :func:`topolip.bounds.segments.model_segments` cuts at the probe
points. The package defines the registry and re-exports nothing: the builders are in
:mod:`.resnet`, :mod:`.vit` and :mod:`.plain`, the probes in :mod:`.probes`, the capacity match
in :mod:`.capacity`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from torch import nn

from topolip.nets.models import plain, resnet, vit

__all__ = ["ARCHITECTURES", "build_model", "check_arch"]

ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {
    "vit": vit.vit, "resnet": resnet.resnet, "attention_stack": plain.attention_stack,
    "conv_stack": plain.conv_stack,
}


def check_arch(arch: str) -> Callable[..., nn.Module]:
    """The builder of architecture ``arch``: the one check of an ``arch`` name.

    Parameters
    ----------
    arch : str
        A key of :data:`ARCHITECTURES`.

    Returns
    -------
    callable
        ``ARCHITECTURES[arch]``.

    Raises
    ------
    ValueError
        If ``arch`` is not a key of :data:`ARCHITECTURES` (the known ones are listed).

    Examples
    --------
    >>> check_arch("resnet").__name__
    'resnet'
    """
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ValueError(f"unknown arch {arch!r}; known: {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[arch]


def build_model(arch: str, **params) -> nn.Module:
    """Build the architecture ``arch`` with keyword ``params``.

    Parameters
    ----------
    arch : str
        A key of :data:`ARCHITECTURES` (``"vit"``, ``"resnet"``, ...).
    **params
        Keyword parameters of that architecture's builder (see its docstring).

    Raises
    ------
    ValueError
        If ``arch`` is unknown or a parameter is not one the builder takes (both listed).

    Examples
    --------
    >>> build_model("resnet", width=4).arch
    'resnet'
    >>> build_model("vit", depth=3)
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter(s) ['depth'] for arch 'vit'; known: ['dropout', 'hidden_dim',
    'image_size', 'in_channels', 'mlp_dim', 'num_classes', 'num_heads', 'num_layers', 'patch_size']
    """
    builder = check_arch(arch)
    known = set(inspect.signature(builder).parameters)
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for arch {arch!r}; known: {sorted(known)}"
        )
    return builder(**params)
