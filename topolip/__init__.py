"""TopoLip companion: persistence diagrams of layer activations, diagram distances, the TopoLip
metric, Lipschitz bounds, models, data and attacks (arXiv:2410.17628).

Submodules load on first use, so ``import topolip.distances`` pulls in neither torch nor the
models: the diagram and distance code stays numpy-only.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = (
    "attacks", "bounds", "claims", "corruptions", "data", "diagrams", "distances", "experiments",
    "figures", "io", "metric", "models", "ood", "pipeline", "robustness", "sweeps", "tensors",
    "train", "cli",
)
__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
