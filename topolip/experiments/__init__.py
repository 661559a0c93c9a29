"""The experiments layer (torch): one trained model in, tidy rows out (TopoLip, robustness, OOD,
baselines, sweeps).
"""

from __future__ import annotations

from topolip.experiments.baselines import (
    cka_distance,
    displacement_ratio,
    lipschitz_estimate_product,
    logit_margin,
    margin_from_logits,
    paired_displacement,
    rtd_lite,
    spectral_norm_product,
)
from topolip.experiments.literature import (
    attention_growth_table,
    castin_table,
    castin_worst_case,
    confidence_table,
    head_attention,
    local_lipschitz,
)
from topolip.experiments.literature_topology import (
    adv_share_rows,
    betti_at_scale,
    betti_table,
    h0_lifetimes,
    knn_scale,
    mlp,
    ood_lifetime_rows,
    total_persistence,
    train_mlp,
)
from topolip.experiments.measure import (
    ModelImages,
    ModelMeasurement,
    measure_bounds,
    measure_bounds_trained,
    measure_model,
    measure_trained,
    model_images,
    model_summaries,
    seed_batch,
)
from topolip.experiments.ood import (
    measure_ood,
    measure_ood_trained,
    ood_auroc_resamples,
    ood_behaviour,
)
from topolip.experiments.radii import (
    RADIUS_METHODS,
    radii_trained,
    radius_check,
    radius_summary,
    robust_curve,
)
from topolip.experiments.robustness import (
    attack_ladder,
    max_softmax,
    robustness_curves,
    robustness_trained,
    softmax_predictions,
)
from topolip.experiments.sweeps import (
    SweepPoint,
    run_sweeps,
    sweep_points,
)

__all__ = [
    "RADIUS_METHODS",
    "ModelImages",
    "ModelMeasurement",
    "SweepPoint",
    "adv_share_rows",
    "attack_ladder",
    "attention_growth_table",
    "betti_at_scale",
    "betti_table",
    "castin_table",
    "castin_worst_case",
    "cka_distance",
    "confidence_table",
    "displacement_ratio",
    "h0_lifetimes",
    "head_attention",
    "knn_scale",
    "lipschitz_estimate_product",
    "local_lipschitz",
    "logit_margin",
    "margin_from_logits",
    "max_softmax",
    "measure_bounds",
    "measure_bounds_trained",
    "measure_model",
    "measure_ood",
    "measure_ood_trained",
    "measure_trained",
    "mlp",
    "model_images",
    "model_summaries",
    "ood_auroc_resamples",
    "ood_behaviour",
    "ood_lifetime_rows",
    "paired_displacement",
    "radii_trained",
    "radius_check",
    "radius_summary",
    "robust_curve",
    "robustness_curves",
    "robustness_trained",
    "rtd_lite",
    "run_sweeps",
    "seed_batch",
    "softmax_predictions",
    "spectral_norm_product",
    "sweep_points",
    "total_persistence",
    "train_mlp",
]
