"""Minimal adversarial radii of a trained model, and the tables ``04_robustness`` makes of them.

:func:`radii_trained` is the per-model task: on the seed's first ``n_images`` test images
(:func:`topolip.experiments.model_measurement.model_images`, the same images for every architecture
of a seed, and the first of them those of the attack ladder) it finds each image's minimal L∞ radius
by bisection with each white-box rung of the attack ladder, APGD-CE + APGD-T, PGD and FGSM
(:func:`topolip.perturbations.radius.minimal_radius`), and by FAB on the first ``n_check`` images as
the cross-check (:func:`topolip.perturbations.radius.fab_radius`).
:func:`radius_summary`, :func:`radius_check` and :func:`robust_curve` turn the per-image rows
into ``radius_summary.csv``, ``radius_check.csv`` and ``robust_curve.csv``.

Units: radii and ε in pixel units of [0, 1] images.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from torch import nn

from topolip.experiments.model_measurement import model_images
from topolip.perturbations.radius import (
    RADIUS_ATTACKS,
    eps_grid_from_radii,
    fab_radius,
    minimal_radius,
    radius_agreement,
    robust_accuracy_from_radii,
)
from topolip.schema import require_columns

__all__ = ["BISECTED_METHODS", "RADIUS_METHODS", "radii_trained", "radius_check",
           "radius_summary", "robust_curve"]

#: The bisected methods (the attack ladder's rungs, strongest first): the attacks
#: :func:`topolip.perturbations.radius.minimal_radius` bisects with.
BISECTED_METHODS = RADIUS_ATTACKS

#: ``method`` values of ``radii.csv``: the bisected attacks, then the cross-check.
RADIUS_METHODS = (*BISECTED_METHODS, "fab")

_KEYS = ["arch", "seed", "method"]


def radii_trained(model: nn.Module, row: Mapping, *, data, n_images: int, eps_max: float,
                  steps: int = 4, apgd_steps: int = 20, n_target_classes: int = 3,
                  pgd_steps: int = 20, pgd_restarts: int = 2, n_check: int = 50,
                  fab_steps: int = 100,
                  methods: Sequence[str] = BISECTED_METHODS) -> pd.DataFrame:
    """The per-model task of ``04_robustness``: per-image minimal L∞ radii by four methods.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model (``K >= 4`` classes).
    row : mapping
        Its row of ``models.csv`` (``seed`` is read; the attacks are seeded with it).
    data : topolip.nets.data.split.ImageSplit
        The data set (its test images, pixels in [0, 1]).
    n_images : int
        Images per model (the seed's first,
        :func:`topolip.experiments.model_measurement.model_images`).
    eps_max : float
        Largest budget searched, pixel units in (0, 1]; an image not broken there is censored.
    steps : int, default=4
        Bisection steps after the bracket (:func:`topolip.perturbations.radius.minimal_radius`).
    apgd_steps, n_target_classes : int
        The APGD budget (iterations per run, APGD-T's target classes), as the attack ladder.
    pgd_steps, pgd_restarts : int, default=20, 2
        The PGD budget (steps, random starts), the attack ladder's.
    n_check : int, default=50
        Images (the first ones) FAB also runs on, for the cross-check; 0 skips it.
    fab_steps : int, default=100
        FAB iterations.
    methods : sequence of str, default=BISECTED_METHODS
        The bisected attacks to run, a non-empty subset of :data:`BISECTED_METHODS` (the
        accuracy-matched checkpoints, which only the APGD-CE + APGD-T row reads, pass
        ``("autoattack",)``).

    Returns
    -------
    pandas.DataFrame
        One row per image and method (``method`` of :data:`RADIUS_METHODS`; ``fab`` on the
        first ``n_check`` images only): ``image`` (position in the seed's batch), ``label``,
        ``method``, ``radius`` (0 clean-misclassified, +inf censored or not found),
        ``censored``, ``clean_correct``, ``eps_max``, ``attacks`` (attack calls of the
        bisection; NaN for FAB).

    Raises
    ------
    ValueError
        If ``n_check`` exceeds ``n_images`` or is negative, or ``methods`` is empty or names
        an unknown method; as
        :func:`topolip.perturbations.radius.minimal_radius` and
        :func:`topolip.experiments.model_measurement.model_images` otherwise.
    """
    methods = tuple(methods)
    bad = sorted(set(methods) - set(BISECTED_METHODS))
    if bad or not methods:
        raise ValueError(f"methods must be a non-empty subset of {list(BISECTED_METHODS)}, got "
                         f"{list(methods)}")
    if n_check and "autoattack" not in methods:
        raise ValueError("the FAB cross-check (n_check > 0) compares with the autoattack "
                         "radii: keep 'autoattack' in methods or pass n_check=0")
    if not 0 <= int(n_check) <= int(n_images):
        raise ValueError(f"n_check ({n_check}) must be in 0..n_images ({n_images})")
    seed = int(row["seed"])
    images = model_images(data.x_test, data.y_test, seed, n_robust=int(n_images))
    x, y = images.x[:n_images], images.y[:n_images]
    frames = []
    for method in methods:
        r = minimal_radius(model, x, y, eps_max=eps_max, steps=steps, attack=method,
                           apgd_steps=apgd_steps, n_target_classes=n_target_classes,
                           pgd_steps=pgd_steps, pgd_restarts=pgd_restarts, seed=seed)
        frames.append(pd.DataFrame({
            "image": np.arange(len(x)), "label": y.cpu().numpy(), "method": method,
            "radius": r.radius, "censored": r.censored, "clean_correct": r.clean_correct,
            "eps_max": float(eps_max), "attacks": float(r.attacks)}))
    if n_check:
        fab = fab_radius(model, x[:n_check], y[:n_check], eps_max=eps_max, steps=fab_steps,
                         seed=seed)
        correct = frames[0]["clean_correct"].to_numpy()[:n_check]
        frames.append(pd.DataFrame({
            "image": np.arange(n_check), "label": y[:n_check].cpu().numpy(), "method": "fab",
            "radius": fab, "censored": correct & np.isinf(fab), "clean_correct": correct,
            "eps_max": float(eps_max), "attacks": math.nan}))
    return pd.concat(frames, ignore_index=True)


def radius_summary(radii: pd.DataFrame, *, eps: float | None = None) -> pd.DataFrame:
    """Per model and bisected method: the median minimal radius and what it rests on.

    The **median minimal radius** is taken over all the model's images, a clean-misclassified
    one counting as radius 0: it is the budget at which the robust-accuracy curve crosses
    one half (robust accuracy = the share of images whose radius exceeds ε), so it is defined
    whenever the model classifies at least half its images and at most half are censored.

    Parameters
    ----------
    radii : pandas.DataFrame
        Rows of :func:`radii_trained` with ``arch``, ``seed`` in front.
    eps : float, optional
        A budget (the TopoLip ε) at which the robust accuracy from the radii is also reported.

    Returns
    -------
    pandas.DataFrame
        One row per ``arch``, ``seed``, ``method`` (``autoattack``, ``pgd``, ``fgsm``): ``group``
        (``<method>_radius``, the claims' group name), ``n_images``, ``clean_accuracy``,
        ``median_radius`` (NaN when more than half the images are censored or misclassified:
        the median is then not found), ``log_median_radius``, ``n_censored``, ``eps_max``,
        ``robust_accuracy_at_eps`` and ``eps`` (NaN without ``eps``), ``attacks``.

    Raises
    ------
    ValueError
        If a column is missing or a method has no rows.
    """
    require_columns(radii, ["arch", "seed", "method", "radius", "censored", "clean_correct",
                            "eps_max"], "radii")
    rows = []
    bisected = radii[radii["method"].isin(BISECTED_METHODS)]
    if not len(bisected):
        raise ValueError(f"radii holds no bisection rows (method one of "
                         f"{list(BISECTED_METHODS)})")
    for (arch, seed, method), g in bisected.groupby(_KEYS, sort=False):
        r = g["radius"].to_numpy(dtype=float)
        med = float(np.median(r))
        at = (float(robust_accuracy_from_radii(r, [eps])[0]) if eps is not None
              else math.nan)
        rows.append({"arch": arch, "seed": int(seed), "method": method,
                     "group": f"{method}_radius", "n_images": len(r),
                     "clean_accuracy": float(g["clean_correct"].astype(bool).mean()),
                     "median_radius": med, "log_median_radius": math.log(med)
                     if 0 < med < math.inf else math.nan,
                     "n_censored": int(g["censored"].astype(bool).sum()),
                     "eps_max": float(g["eps_max"].iloc[0]),
                     "eps": math.nan if eps is None else float(eps),
                     "robust_accuracy_at_eps": at,
                     "attacks": float(g["attacks"].iloc[0]) if "attacks" in g else math.nan})
    return pd.DataFrame(rows)


def radius_check(radii: pd.DataFrame, *, factor: float = 1.25) -> pd.DataFrame:
    """Per model: how closely the bisection's radii (APGD-CE + APGD-T) agree with FAB's.

    Parameters
    ----------
    radii : pandas.DataFrame
        Rows of :func:`radii_trained` with ``arch``, ``seed`` in front.
    factor : float, default=1.25
        Agreement band (:func:`topolip.perturbations.radius.radius_agreement`).

    Returns
    -------
    pandas.DataFrame
        One row per model with FAB rows: ``arch``, ``seed``, ``n`` (images both broke),
        ``n_only_bisection``, ``n_only_fab``, ``median_ratio`` (bisection / FAB),
        ``share_within``, ``factor``. Empty (those columns) when no model has FAB rows.
    """
    require_columns(radii, ["arch", "seed", "method", "image", "radius"], "radii")
    rows = []
    for (arch, seed), g in radii.groupby(["arch", "seed"], sort=False):
        fab = g[g["method"] == "fab"].set_index("image")["radius"]
        if not len(fab):
            continue
        apgd = g[g["method"] == "autoattack"].set_index("image")["radius"].reindex(fab.index)
        a = radius_agreement(apgd.to_numpy(dtype=float), fab.to_numpy(dtype=float),
                             factor=factor)
        rows.append({"arch": arch, "seed": int(seed), "n": a["n"],
                     "n_only_bisection": a["n_only_radius"], "n_only_fab": a["n_only_reference"],
                     "median_ratio": a["median_ratio"], "share_within": a["share_within"],
                     "factor": a["factor"]})
    cols = ["arch", "seed", "n", "n_only_bisection", "n_only_fab", "median_ratio",
            "share_within", "factor"]
    return pd.DataFrame(rows, columns=cols)


def robust_curve(radii: pd.DataFrame, *, n_points: int = 12,
                 eps_grid: Sequence[float] | None = None) -> pd.DataFrame:
    """Robust accuracy over an ε grid, per model and bisected method, read off the radii.

    The grid (default) is :func:`topolip.perturbations.radius.eps_grid_from_radii` of the
    APGD-CE + APGD-T radii of every model: it starts where every model keeps ≥ 0.9 of its clean
    accuracy and ends where every model has ≤ 0.1 of it left.

    Parameters
    ----------
    radii : pandas.DataFrame
        Rows of :func:`radii_trained` with ``arch``, ``seed`` in front.
    n_points : int, default=12
        Positive budgets of the default grid.
    eps_grid : sequence of float, optional
        The budgets instead (pixel units).

    Returns
    -------
    pandas.DataFrame
        ``arch``, ``seed``, ``method``, ``eps``, ``robust_accuracy``, ``clean_accuracy``; one
        row per model, method and budget (budgets above ``eps_max`` left out for a model with
        censored radii).

    Raises
    ------
    ValueError
        If no model classifies any image correctly; as
        :func:`topolip.perturbations.radius.eps_grid_from_radii` (e.g. a model with more
        than a tenth of its correct images censored: search to a larger ``eps_max``).
    """
    require_columns(radii, ["arch", "seed", "method", "radius", "eps_max"], "radii")
    bisected = radii[radii["method"].isin(BISECTED_METHODS)]
    if eps_grid is None:
        apgd = bisected[bisected["method"] == "autoattack"]
        # a model that classifies none of its images has no curve to span: left out of the
        # choice (its curve is 0 everywhere)
        usable = {k: r for k, g in apgd.groupby(["arch", "seed"], sort=False)
                  if ((r := g["radius"].to_numpy(dtype=float)) > 0).any()}
        if not usable:
            raise ValueError("no model classifies any of its images correctly: no robust "
                             "curve to draw")
        grid = eps_grid_from_radii(usable, n_points=n_points)
    else:
        grid = np.asarray(eps_grid, dtype=float)
    rows = []
    for (arch, seed, method), g in bisected.groupby(_KEYS, sort=False):
        r = g["radius"].to_numpy(dtype=float)
        eps_max = float(g["eps_max"].iloc[0])
        use = grid if not np.isinf(r).any() else grid[grid <= eps_max]
        acc = robust_accuracy_from_radii(r, use, eps_max=eps_max)
        clean = float((r > 0).mean())
        rows += [{"arch": arch, "seed": int(seed), "method": method, "eps": float(e),
                  "robust_accuracy": float(a), "clean_accuracy": clean}
                 for e, a in zip(use, acc, strict=True)]
    return pd.DataFrame(rows)
