"""The perturbations layer (torch): attacks, minimal adversarial radii, corruptions and
out-of-distribution sets.
"""

from __future__ import annotations

from topolip.perturbations.attacks import (
    ATTACKS,
    LADDER,
    PERTURBATIONS,
    autoattack,
    check_strength,
    fgsm,
    perturb,
    perturb_at,
    pgd,
    random_sign,
    square,
)
from topolip.perturbations.corruptions import (
    CORRUPTIONS,
    MAX_SEVERITY,
    SEVERITIES,
    corrupt,
    corruption_params,
)
from topolip.perturbations.ood_sets import (
    OOD_SETS,
    load_ood,
    load_ood_batches,
)
from topolip.perturbations.radius import (
    RADIUS_ATTACKS,
    RadiusResult,
    eps_grid_from_radii,
    fab_radius,
    minimal_radius,
    radius_agreement,
    robust_accuracy_from_radii,
)

__all__ = [
    "ATTACKS",
    "CORRUPTIONS",
    "LADDER",
    "MAX_SEVERITY",
    "OOD_SETS",
    "PERTURBATIONS",
    "RADIUS_ATTACKS",
    "RadiusResult",
    "SEVERITIES",
    "autoattack",
    "check_strength",
    "corrupt",
    "corruption_params",
    "eps_grid_from_radii",
    "fab_radius",
    "fgsm",
    "load_ood",
    "load_ood_batches",
    "minimal_radius",
    "perturb",
    "perturb_at",
    "pgd",
    "radius_agreement",
    "random_sign",
    "robust_accuracy_from_radii",
    "square",
]
