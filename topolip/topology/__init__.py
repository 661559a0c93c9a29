"""The topology layer (numpy only): persistence diagrams of point clouds, diagram distances, the
TopoLip metric and its spec.
"""

from __future__ import annotations

from topolip.topology.diagram import (
    FILTRATION,
    Diagram,
    RipsDiagrams,
    check_diagram,
)
from topolip.topology.distances import (
    bottleneck,
    check_ground_metric,
    check_order,
    diagram_distance,
    wasserstein,
)
from topolip.topology.metric import (
    EnvelopeViolation,
    LayerDiagrams,
    layer_diagrams,
    median_pairwise_distance,
    summarize,
    topolip_table,
    topological_displacement,
)
from topolip.topology.points import (
    check_points,
    pairwise_distances,
)
from topolip.topology.rips import (
    BACKENDS,
    PARALLEL_MIN_POINTS,
    check_backend,
    check_degrees,
    default_jobs,
    rips_diagrams,
    rips_diagrams_many,
)
from topolip.topology.spec import (
    PARAMETERS,
    TopoLipSpec,
    check_n_perm,
    check_n_points,
)

__all__ = [
    "BACKENDS",
    "Diagram",
    "EnvelopeViolation",
    "FILTRATION",
    "LayerDiagrams",
    "PARALLEL_MIN_POINTS",
    "PARAMETERS",
    "RipsDiagrams",
    "TopoLipSpec",
    "bottleneck",
    "check_backend",
    "check_degrees",
    "check_diagram",
    "check_ground_metric",
    "check_n_perm",
    "check_n_points",
    "check_order",
    "check_points",
    "default_jobs",
    "diagram_distance",
    "layer_diagrams",
    "median_pairwise_distance",
    "pairwise_distances",
    "rips_diagrams",
    "rips_diagrams_many",
    "summarize",
    "topolip_table",
    "topological_displacement",
    "wasserstein",
]
