"""TopoLip companion: persistence diagrams of layer activations, diagram distances, the TopoLip
metric, Lipschitz bounds, models, data and attacks (arXiv:2410.17628).

The curated API below is what a researcher needs to compute TopoLip on a model of their own::

    from topolip import build_model, collect_activations, perturb, topolip_table, summarize

Each name is defined in one layer package (``topolip.topology``, ``topolip.bounds``,
``topolip.nets``, ``topolip.perturbations``, ``topolip.experiments``; :data:`API` says which) and
loads on first use, so ``import topolip`` pulls in neither torch nor numpy, and
``topolip.rips_diagrams`` imports the numpy-only topology layer alone. ``topolip.<layer>``
reaches every layer package and base module (the list is read from the folder).
"""

from __future__ import annotations

import importlib
import pkgutil

__version__ = "0.1.0"

#: The curated API: name -> the package that defines it (the one place it is listed).
API: dict[str, str] = {
    # persistence diagrams, distances, the metric (numpy only)
    "rips_diagrams": "topolip.topology",
    "rips_diagrams_many": "topolip.topology",
    "Diagram": "topolip.topology",
    "RipsDiagrams": "topolip.topology",
    "pairwise_distances": "topolip.topology",
    "wasserstein": "topolip.topology",
    "bottleneck": "topolip.topology",
    "diagram_distance": "topolip.topology",
    "TopoLipSpec": "topolip.topology",
    "layer_diagrams": "topolip.topology",
    "topological_displacement": "topolip.topology",
    "topolip_table": "topolip.topology",
    "summarize": "topolip.topology",
    # Lipschitz constants
    "lipschitz_bound": "topolip.bounds",
    "lipschitz_estimate": "topolip.bounds",
    "layer_bounds": "topolip.bounds",
    # data, models, training
    "load_dataset": "topolip.nets",
    "build_model": "topolip.nets",
    "collect_activations": "topolip.nets",
    "ModelSpec": "topolip.nets",
    "TrainConfig": "topolip.nets",
    "fit": "topolip.nets",
    "load_trained": "topolip.nets",
    # perturbations
    "perturb": "topolip.perturbations",
    "corrupt": "topolip.perturbations",
    "load_ood": "topolip.perturbations",
    # one trained model in, tidy rows out
    "measure_model": "topolip.experiments",
}

#: The layer packages and base modules, found on disk (names starting with ``_`` are private).
_SUBMODULES = tuple(sorted(info.name for info in pkgutil.iter_modules(__path__)
                           if not info.name.startswith("_")))
__all__ = ["__version__", *API, *_SUBMODULES]


def __getattr__(name: str):
    if name in API:
        value = getattr(importlib.import_module(API[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API, *_SUBMODULES})
