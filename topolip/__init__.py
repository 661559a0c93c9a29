"""TopoLip companion: persistence diagrams of layer activations, diagram distances, the TopoLip
metric, Lipschitz bounds, models, data and attacks (arXiv:2410.17628).

The curated API below is what a researcher needs to compute TopoLip on a model of their own::

    from topolip import build_model, collect_activations, perturb, topolip_table, summarize

Each name is defined in one module of a layer (``topolip.topology.rips``,
``topolip.bounds.dispatch``, ...; :data:`API` names it, and that module is the name's import path
inside the package: the layer packages re-export nothing) and loads on first use, so ``import
topolip`` pulls in neither torch nor numpy, and ``topolip.rips_diagrams`` imports the numpy-only
topology modules alone. ``topolip.<layer>``
reaches every layer package and base module (the list is read from the folder).
"""

from __future__ import annotations

import importlib
import pkgutil

__version__ = "0.1.0"

#: The curated API: name -> the module that defines it (the one place it is listed).
API: dict[str, str] = {
    # persistence diagrams, distances, the metric (numpy only)
    "rips_diagrams": "topolip.topology.rips",
    "rips_diagrams_many": "topolip.topology.rips",
    "Diagram": "topolip.topology.diagram",
    "RipsDiagrams": "topolip.topology.diagram",
    "pairwise_distances": "topolip.topology.points",
    "wasserstein": "topolip.topology.distances",
    "bottleneck": "topolip.topology.distances",
    "diagram_distance": "topolip.topology.distances",
    "TopoLipSpec": "topolip.topology.spec",
    "layer_diagrams": "topolip.topology.metric",
    "topological_displacement": "topolip.topology.metric",
    "topolip_table": "topolip.topology.metric",
    "summarize": "topolip.topology.metric",
    # Lipschitz constants
    "lipschitz_bound": "topolip.bounds.dispatch",
    "lipschitz_estimate": "topolip.bounds.estimate",
    "layer_bounds": "topolip.bounds.segments",
    # data, models, training
    "load_dataset": "topolip.nets.data",
    "build_model": "topolip.nets.models",
    "collect_activations": "topolip.nets.models.probes",
    "ModelSpec": "topolip.nets.run_spec",
    "TrainConfig": "topolip.nets.run_spec",
    "fit": "topolip.nets.train",
    "load_trained": "topolip.nets.train",
    # perturbations
    "perturb": "topolip.perturbations.attacks",
    "corrupt": "topolip.perturbations.corruptions",
    "load_ood": "topolip.perturbations.ood_sets",
    # one trained model in, tidy rows out
    "measure_model": "topolip.experiments.model_measurement",
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
