"""TopoLip companion: persistence diagrams of layer activations, diagram distances, the TopoLip
metric, Lipschitz bounds, models, data and attacks (arXiv:2410.17628).

Submodules load on first use, so ``import topolip.distances`` pulls in neither torch nor the
models: the diagram and distance code stays numpy-only. ``topolip.<name>`` reaches every public
submodule (every module and package of this folder whose name does not start with ``_``); the
list is read from the folder, not kept by hand.
"""

from __future__ import annotations

import importlib
import pkgutil

__version__ = "0.1.0"

#: The public submodules, found on disk (names starting with ``_`` are private).
_SUBMODULES = tuple(sorted(info.name for info in pkgutil.iter_modules(__path__)
                           if not info.name.startswith("_")))
__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})
