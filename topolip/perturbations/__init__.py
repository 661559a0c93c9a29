"""The perturbations layer (torch): attacks, corruptions and out-of-distribution sets.
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

__all__ = [
    "ATTACKS",
    "CORRUPTIONS",
    "LADDER",
    "MAX_SEVERITY",
    "OOD_SETS",
    "PERTURBATIONS",
    "SEVERITIES",
    "autoattack",
    "check_strength",
    "corrupt",
    "corruption_params",
    "fgsm",
    "load_ood",
    "load_ood_batches",
    "perturb",
    "perturb_at",
    "pgd",
    "random_sign",
    "square",
]
