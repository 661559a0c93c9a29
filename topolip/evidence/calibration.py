"""Calibration and power of the verdict rules, through the library's own code.

:func:`simulate_tables` writes the chain's tables (``topolip_summary``, ``robustness``,
``ood_topolip_summary``, ``ood_behaviour``, ``ood_resamples``, ``topolip``, and the
``smoothness`` table made from them by :func:`topolip.evidence.claims.smoothness_table`) for four
architectures whose means differ at the architecture level, with models shared across kinds
(each model has its own effect in every kind) and, for the OOD AUROC, one image set shared by
every seed. :func:`calibrate` runs :func:`topolip.evidence.claims.evaluate` on many such books and
returns each claim's family-wise decisive rate: under a null (no architecture difference within
a family pair; no association within architectures) it must be at most ``alpha``; with a real
effect it is the power. :func:`power_table` gives, for the design a run used, the minimum
detectable effect of each primary comparison at 80% power, from the run's own per-seed
differences (noncentral t, :func:`topolip.evidence.stats.minimum_detectable_effect`).

Torch-free (numpy, pandas, scipy). ``tests/test_calibration.py`` asserts the rates; the
verdicts chapter shows the power table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from topolip import roster
from topolip.evidence import claims as _claims
from topolip.evidence import stats
from topolip.schema import require_columns

__all__ = ["ARCHS", "KINDS", "VARIANCE", "calibrate", "power_table", "seeds_for_target",
           "simulate_tables"]

#: The four architectures of the chain (:func:`topolip.roster.arch_names`).
ARCHS: tuple[str, ...] = roster.arch_names()

#: The perturbation kinds of a simulated ``topolip_summary.csv``: the white-box attacks of the
#: ladder below APGD (FGSM, PGD, at the TopoLip ε) and every corruption, in roster order: the
#: kinds the quick and paper profiles measure TopoLip under (``topolip_strengths``; checked by
#: ``tests/test_calibration.py``).
KINDS: tuple[str, ...] = (*roster.LADDER[:roster.LADDER.index(roster.BUDGET_KIND) + 1],
                          *roster.kind_names("corruption"))

#: Default variance components (standard deviations). TopoLip on the log scale: a model effect
#: shared by every kind (``log_topolip_model``) and a model × kind one; model-level sd ≈ 0.14,
#: the coefficient of variation measured on the quick book of 133e96f (issue 18). Accuracy
#: drops likewise; AUROC with an image-set effect per architecture shared by every seed
#: (``auroc_image``). ``*_seed``: an effect of the seed shared by every architecture of it (its
#: test images), independent between TopoLip and the drop, so the within-architecture τ of the
#: architectures move together under the null: a clustered null that only a relabelling of
#: whole seeds respects. ``flag_rate``: the share of FGSM, PGD and elastic models whose input
#: displacement lies within the noise floor.
VARIANCE: dict[str, float] = {
    "log_topolip_model": 0.10, "log_topolip_kind": 0.10, "log_topolip_seed": 0.10,
    "drop_model": 0.02, "drop_kind": 0.02, "drop_seed": 0.02,
    "log_radius_model": 0.15, "log_radius_method": 0.05, "log_radius_seed": 0.10,
    "auroc_model": 0.02, "auroc_image": 0.01, "flag_rate": 0.2,
}

#: log median radius of each bisected attack above APGD-CE + APGD-T's (PGD a little weaker,
#: FGSM weaker)
_RADIUS_METHODS = {"autoattack": 0.0, "pgd": math.log(1.05), "fgsm": math.log(1.5)}

#: The kinds whose input displacement can lie within the noise floor in the simulation.
_FLAG_KINDS = ("fgsm", "pgd", "elastic")

#: ``flag_tied``: each family's flag rate as a multiple of ``flag_rate`` (their mean is 1).
FLAG_ARCH_FACTOR: dict[str, float] = {"attention": 1.5, "convolution": 0.5}


def _tied_flag(logit: float, slope: float, z: float) -> float:
    """Flag probability ``expit(logit - slope · z)`` (a smaller value, a likelier flag)."""
    return 1.0 / (1.0 + math.exp(slope * z - logit))


_OOD_SETS = roster.ood_names()
#: The secondary detectors' AUROC columns of ``ood_behaviour`` (max-logit, energy).
_EXTRA_AUROC = tuple(c for c in roster.OOD_DETECTORS.values() if c != "auroc")
_RUNGS = {"fgsm": 0.30, "pgd": 0.50, "autoattack": 0.55, "square": 0.40}


def simulate_tables(n_seeds: int = 5, *, topolip_ratio: float = 1.0, drop_diff: float = 0.0,
                    radius_ratio: float = 1.0, weak_radius_ratio: float = 1.0,
                    ood_topolip_ratio: float = 1.0, auroc_diff: float = 0.0,
                    association: float = 0.0,
                    arch_association: bool = False,
                    batch_share: float = 0.0, flag_tied: bool = False,
                    flag_slope: float = 1.5, variance: Mapping[str, float] | None = None,
                    n_resamples: int = 20,
                    smoothness_resamples: int = 999, smoothness: bool = True,
                    smoothness_rule: Mapping[str, object] | None = None,
                    eps: float = 0.05,
                    seed: int = 0) -> dict[str, pd.DataFrame]:
    """One simulated book's tables, in the chain's layout.

    Parameters
    ----------
    n_seeds : int, default=5
        Seeds per architecture (the same seeds for every architecture: pairs).
    topolip_ratio : float, default=1.0
        True ratio attention / convolution of the scale-free (and raw) TopoLip in both family
        pairs and every perturbation kind (1: the null).
    drop_diff : float, default=0.0
        True attention − convolution accuracy drop, every rung and corruption.
    radius_ratio : float, default=1.0
        True ratio attention / convolution of the median minimal radius, both bisected
        attacks (``radius_summary``; 1: the null, of the rival claim's radius contrast too).
    weak_radius_ratio : float, default=1.0
        A further true ratio attention / convolution of the FGSM radius alone: the ratio of
        radius ratios (FGSM over APGD-CE + APGD-T) the rival claim's primary contrast reads
        (1: its null; above 1, attention's advantage is larger against the weak attack).
    ood_topolip_ratio : float, default=1.0
        True ratio attention / convolution of the scale-free TopoLip on every OOD set
        (``ood_topolip_summary``; 1: the null of the out-of-distribution smoothness claim).
    auroc_diff : float, default=0.0
        True attention − convolution difference of the max-softmax AUROC on every OOD set
        (``ood_behaviour`` and its resamples; the logit-based detectors unchanged; 0: the
        null of the OOD-robustness claim).
    association : float, default=0.0
        Within-architecture slope of the accuracy drop on the log TopoLip (0: the null).
    arch_association : bool, default=False
        When True the four architectures' means all differ and go together (a lower TopoLip
        with a smaller drop *between* architectures, none within): the clustered null of the
        association claim (the comparison claims are then not null). When False the members of
        each family pair share their means and the pairs differ (every claim's null holds).
    batch_share : float, default=0.0
        A hard (or easy) test batch: one standard-normal draw per seed moves the log TopoLip
        *and* the accuracy drop of every architecture and kind of that seed, by
        ``sqrt(batch_share)`` times their model-level standard deviations (so its variance is
        ``batch_share`` times the model-level variance, in both). No model-level association:
        the seed-batch null of issue 26, which a within-architecture τ on raw values reads as
        an association (every architecture's τ moves with the same batches).
    flag_tied : bool, default=False
        Tie the noise-floor flag of the FGSM, PGD and elastic models to their value and their
        architecture (the tied-flag null of issue 26): a model is flagged with probability
        ``expit(logit(r_a) - flag_slope * z)``, where ``z`` is the model's log TopoLip less its
        architecture's mean in that kind, in units of its standard deviation
        (``sqrt(log_topolip_model² + log_topolip_seed² + log_topolip_kind²)``), and ``r_a`` is
        ``flag_rate`` times :data:`FLAG_ARCH_FACTOR` (attention 1.5, convolution 0.5): small
        values, and attention models, fall within the floor more often. The values themselves
        are those of the untied book (the same draws), so only the flags differ. False: each
        flag is an independent draw at ``flag_rate`` (the book it always was).
    flag_slope : float, default=1.5
        Logit slope of the tied flag per standard deviation of the model's value (0: tied to
        the architecture only). Used only with ``flag_tied``.
    variance : mapping, optional
        Overrides of :data:`VARIANCE`.
    n_resamples : int, default=20
        Image resamples per model in ``ood_resamples``.
    smoothness_resamples : int, default=999
        Monte-Carlo relabellings of the seeds in the ``smoothness`` table beyond 6 seeds (up
        to 6 the test is exact, as in the book; beyond, the 8! of an exact test would cost a
        simulation seconds per book: a calibration needs the rule's error rate, not one
        p-value's precision).
    smoothness : bool, default=True
        Make the ``smoothness`` table (the association claim's input; the slow part).
    smoothness_rule : mapping, optional
        Keyword arguments of :func:`topolip.evidence.claims.smoothness_table` (``centre``,
        ``weights``): the mutation checks run the older rules through the same books.
    eps : float, default=0.05
        The TopoLip ε (``strength`` of FGSM and PGD).
    seed : int, default=0
        Seed of the simulation.

    Returns
    -------
    dict of str to pandas.DataFrame
        The tables :func:`topolip.evidence.claims.evaluate` reads.

    Raises
    ------
    ValueError
        If ``n_seeds`` is not a positive int, a ratio is not positive, ``batch_share`` is
        negative, ``flag_slope`` is not finite, or with ``flag_tied`` an architecture's flag
        rate ``flag_rate · FLAG_ARCH_FACTOR`` is not in (0, 1).

    Examples
    --------
    >>> t = simulate_tables(3, seed=1)
    >>> sorted(t), len(t["topolip_summary"]), sorted(t["robustness"]["perturbation"].unique())
    ... # doctest: +NORMALIZE_WHITESPACE
    (['ood_behaviour', 'ood_resamples', 'ood_topolip_summary', 'radius_matched',
      'radius_summary', 'robustness', 'smoothness', 'topolip', 'topolip_summary'], 84,
      ['autoattack', 'contrast', 'elastic', 'fgsm', 'gaussian_blur', 'gaussian_noise',
       'pgd', 'rotation', 'square'])
    """
    if not (isinstance(n_seeds, int) and n_seeds >= 1):
        raise ValueError(f"n_seeds must be a positive int, got {n_seeds!r}")
    if not topolip_ratio > 0:
        raise ValueError(f"topolip_ratio must be positive, got {topolip_ratio!r}")
    for name, ratio in (("radius_ratio", radius_ratio), ("weak_radius_ratio", weak_radius_ratio),
                        ("ood_topolip_ratio", ood_topolip_ratio)):
        if not (isinstance(ratio, (int, float)) and ratio > 0 and math.isfinite(ratio)):
            raise ValueError(f"{name} must be a positive finite number, got {ratio!r}")
    if not (isinstance(auroc_diff, (int, float)) and math.isfinite(auroc_diff)):
        raise ValueError(f"auroc_diff must be a finite number, got {auroc_diff!r}")
    if not (isinstance(batch_share, (int, float)) and batch_share >= 0):
        raise ValueError(f"batch_share must be a number >= 0, got {batch_share!r}")
    if not (isinstance(flag_slope, (int, float)) and math.isfinite(flag_slope)):
        raise ValueError(f"flag_slope must be a finite number, got {flag_slope!r}")
    v = {**VARIANCE, **(variance or {})}
    flag_logit = {}
    if flag_tied:
        for a in roster.ARCHS:
            r = v["flag_rate"] * FLAG_ARCH_FACTOR[a.family]
            if not 0 < r < 1:
                raise ValueError(f"flag_tied needs flag_rate · {FLAG_ARCH_FACTOR[a.family]} in "
                                 f"(0, 1) for {a.name}, got flag_rate {v['flag_rate']!r}")
            flag_logit[a.name] = math.log(r / (1 - r))
    # the sd of a model's log TopoLip about its architecture's mean in a kind (the tied flag's z)
    sd_value = math.sqrt(v["log_topolip_model"] ** 2 + v["log_topolip_seed"] ** 2
                         + v["log_topolip_kind"] ** 2)
    rng = np.random.default_rng(seed)
    if arch_association:
        level_t = dict(zip(ARCHS, (0.0, 0.5, 1.0, 1.5), strict=True))
        level_d = dict(zip(ARCHS, (0.0, 0.05, 0.10, 0.15), strict=True))
    else:
        level_t = {a.name: 1.0 if a.plain else 0.0 for a in roster.ARCHS}
        level_d = {a.name: 0.15 if a.plain else 0.0 for a in roster.ARCHS}
    attention = set(roster.arch_names("attention"))
    kind_t = dict(zip(KINDS, rng.normal(0, 0.5, len(KINDS)), strict=True))
    kind_d = dict(zip(KINDS, rng.uniform(0.05, 0.25, len(KINDS)), strict=True))
    summary, robust, ood_sum, ood_beh, ood_res = [], [], [], [], []
    image_effect = {(a, o): rng.normal(0, v["auroc_image"]) for a in ARCHS for o in _OOD_SETS}
    seed_t = rng.normal(0, v["log_topolip_seed"], n_seeds)
    seed_d = rng.normal(0, v["drop_seed"], n_seeds)
    # drawn from its own generator, so a book with batch_share = 0 is the book it always was
    batch = np.random.default_rng([seed, 26]).normal(0, 1, n_seeds) * math.sqrt(batch_share)
    seed_t = seed_t + batch * math.hypot(v["log_topolip_model"], v["log_topolip_seed"])
    seed_d = seed_d + batch * math.hypot(v["drop_model"], v["drop_seed"])
    # radii from their own generator too, so the other tables stay as they were
    rng_r = np.random.default_rng([seed, 25])
    seed_r = rng_r.normal(0, v["log_radius_seed"], n_seeds)
    radii, matched = [], []
    # the accuracy-matched checkpoints' radii (the primary pair's convolution side at an
    # earlier epoch): their own generator, an epoch's own noise about the model's radius
    rng_m = np.random.default_rng([seed, 28])
    # the logit-based detectors' AUROCs (max-logit, energy): their own generator, image and
    # model effects, so the max-softmax tables stay as they were
    rng_o = np.random.default_rng([seed, 27])
    extra_image = {(m, a, o): rng_o.normal(0, v["auroc_image"])
                   for m in _EXTRA_AUROC for a in ARCHS for o in _OOD_SETS}
    for arch in ARCHS:
        shift_t = math.log(topolip_ratio) if arch in attention else 0.0
        shift_d = drop_diff if arch in attention else 0.0
        for s in range(n_seeds):
            u_t = rng.normal(0, v["log_topolip_model"]) + seed_t[s]
            u_d = rng.normal(0, v["drop_model"]) + seed_d[s]
            clean = float(np.clip(0.95 + rng.normal(0, 0.01), 0, 1))
            for kind in KINDS:
                log_t = level_t[arch] + kind_t[kind] + shift_t + u_t + rng.normal(
                    0, v["log_topolip_kind"])
                drop = (level_d[arch] + kind_d[kind] + shift_d + u_d
                        + association * (log_t - level_t[arch] - kind_t[kind] - shift_t)
                        + rng.normal(0, v["drop_kind"]))
                # the uniform is drawn as in the untied book, so only the flags can differ
                flagged = kind in _FLAG_KINDS and rng.random() < (
                    _tied_flag(flag_logit[arch], flag_slope, (
                        log_t - level_t[arch] - kind_t[kind] - shift_t) / sd_value
                        if sd_value > 0 else 0.0)
                    if flag_tied else v["flag_rate"])
                summary.append({
                    "arch": arch, "seed": s, "perturbation": kind,
                    "strength": eps if kind in ("fgsm", "pgd") else 3, "n_images": 200,
                    "end_to_end": math.exp(log_t + 0.5),
                    "end_to_end_scale_free": math.exp(log_t),
                    "end_to_end_flag": "input displacement within the noise floor"
                    if flagged else "",
                    "accuracy_clean": clean, "accuracy_perturbed": clean - drop,
                    "accuracy_drop": drop, "relative_drop": drop / (clean - 0.1)})
                if kind not in ("fgsm", "pgd"):
                    # 04's corruption curve at the TopoLip severity, which the robustness
                    # claim reads (the same drop: one image set in the simulation)
                    for strength, d in ((0, 0.0), (3, drop)):
                        robust.append({"arch": arch, "seed": s, "perturbation": kind,
                                       "strength": strength, "unit": "severity", "n": 500,
                                       "accuracy": clean - d, "accuracy_clean": clean,
                                       "accuracy_drop": d})
            for kind, base in _RUNGS.items():
                drop = level_d[arch] + base + shift_d + u_d + rng.normal(0, v["drop_kind"])
                for strength, d in ((0.0, 0.0), (eps, drop), (4 * eps, clean - 0.05)):
                    robust.append({"arch": arch, "seed": s, "perturbation": kind,
                                   "strength": strength, "unit": "linf", "n": 500,
                                   "accuracy": clean - d, "accuracy_clean": clean,
                                   "accuracy_drop": d, "steps": 20, "restarts": 2})
            # median radius: a larger level for the architectures with a smaller drop
            u_r = rng_r.normal(0, v["log_radius_model"]) + seed_r[s]
            for method, offset in _RADIUS_METHODS.items():
                log_r = (math.log(0.03) - 5 * level_d[arch] + offset + u_r
                         + (math.log(radius_ratio) if arch in attention else 0.0)
                         + (math.log(weak_radius_ratio)
                            if arch in attention and method == "fgsm" else 0.0)
                         + rng_r.normal(0, v["log_radius_method"]))
                radii.append({"arch": arch, "seed": s, "method": method,
                              "group": f"{method}_radius", "n_images": 200,
                              "clean_accuracy": clean, "median_radius": math.exp(log_r)})
                if arch == _claims.FAMILY_PAIRS[0][1] and method == "autoattack":
                    log_m = log_r + rng_m.normal(0, v["log_radius_method"])
                    matched.append({"arch": arch, "seed": s, "method": method,
                                    "group": "autoattack_radius_accuracy_matched",
                                    "n_images": 200, "median_radius": math.exp(log_m),
                                    "epoch": 1, "matched_to": _claims.FAMILY_PAIRS[0][0]})
            u_a = rng.normal(0, v["auroc_model"])
            u_x = {m: rng_o.normal(0, v["auroc_model"]) for m in _EXTRA_AUROC}
            ood_beh.append({"arch": arch, "seed": s, "dataset": "in_distribution", "n": 1000,
                            "auroc": math.nan, **dict.fromkeys(_EXTRA_AUROC, math.nan)})
            for o in _OOD_SETS:
                log_t = (level_t[arch] + 0.3 + u_t + rng.normal(0, v["log_topolip_kind"])
                         + (math.log(ood_topolip_ratio) if arch in attention else 0.0))
                ood_sum.append({"arch": arch, "seed": s, "ood_set": o,
                                "end_to_end": math.exp(log_t),
                                "end_to_end_scale_free": math.exp(log_t)})
                auroc = (0.8 + image_effect[(arch, o)] + u_a + rng.normal(0, 0.01)
                         + (auroc_diff if arch in attention else 0.0))
                extra = {m: 0.8 + extra_image[(m, arch, o)] + u_x[m] + rng_o.normal(0, 0.01)
                         for m in _EXTRA_AUROC}
                ood_beh.append({"arch": arch, "seed": s, "dataset": o, "n": 1000,
                                "auroc": auroc, **extra})
                # bootstrap resamples of the shared image set: the paired difference's
                # resampling sd (sqrt(2)·auroc_image) is that of its image effect
                boot = auroc + rng.normal(0, v["auroc_image"], n_resamples)
                ood_res += [{"arch": arch, "seed": s, "group": o, "measure": "auroc",
                             "resample": b, "value": float(x)} for b, x in enumerate(boot)]
                for m, value in extra.items():
                    boot = value + rng_o.normal(0, v["auroc_image"], n_resamples)
                    ood_res += [{"arch": arch, "seed": s, "group": o, "measure": m,
                                 "resample": b, "value": float(x)} for b, x in enumerate(boot)]
    tables = {"topolip_summary": pd.DataFrame(summary), "robustness": pd.DataFrame(robust),
              "ood_topolip_summary": pd.DataFrame(ood_sum),
              "ood_behaviour": pd.DataFrame(ood_beh), "ood_resamples": pd.DataFrame(ood_res),
              "radius_summary": pd.DataFrame(radii), "radius_matched": pd.DataFrame(matched),
              "topolip": pd.DataFrame({"bottleneck": [0.1, 0.2], "envelope": [0.5, 0.5]})}
    if smoothness:
        tables["smoothness"] = _claims.smoothness_table(tables["topolip_summary"],
                                                        n_resamples=smoothness_resamples,
                                                        seed=seed, exact_seeds=6,
                                                        **(smoothness_rule or {}))
    return tables


def calibrate(n_sim: int = 200, *, claims: Sequence[_claims.Claim] | None = None,
              seed: int = 0, **simulation) -> pd.DataFrame:
    """Family-wise decisive rates of every claim over ``n_sim`` simulated books.

    Parameters
    ----------
    n_sim : int, default=200
        Simulated books.
    claims : sequence of Claim, optional
        Default: ``data/claims.yml``.
    seed : int, default=0
        Book ``i`` is simulated with seed ``seed + i``.
    **simulation
        Keyword arguments of :func:`simulate_tables` (``n_seeds``, ``topolip_ratio``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per claim and role (``primary``, ``secondary``): ``claim``, ``role``,
        ``decisive`` (books where the family had at least one decisive verdict), ``n_sim``,
        ``rate``, ``supported_rate`` (books where the primary or a secondary was *supported*).

    Examples
    --------
    >>> r = calibrate(4, n_seeds=3)
    >>> sorted(set(r["role"])), int(r["n_sim"].iloc[0])
    (['primary', 'secondary'], 4)
    """
    if claims is None:
        claims = _claims.load_claims(Path(__file__).resolve().parents[2] / "data/claims.yml")
    claims = [c for c in claims if c.check != "envelope_holds"]
    simulation.setdefault("smoothness", any(c.check == "smoothness_predicts_robustness"
                                            for c in claims))
    counts: dict[tuple[str, str], list[int]] = {}
    for i in range(n_sim):
        v = _claims.evaluate(list(claims), simulate_tables(seed=seed + i, **simulation))
        v = v[v["role"].isin(["primary", "secondary"])]
        for c in claims:
            for role in ("primary", "secondary"):
                part = v[(v["claim"] == c.id) & (v["role"] == role)]
                k = counts.setdefault((c.id, role), [0, 0])
                k[0] += bool(part["verdict"].isin(["supported", "contradicted"]).any())
                k[1] += bool((part["verdict"] == "supported").any())
    return pd.DataFrame([{"claim": c, "role": r, "decisive": d, "n_sim": n_sim,
                          "rate": d / n_sim, "supported_rate": s / n_sim}
                         for (c, r), (d, s) in counts.items()])


#: Effects the design is asked to detect (issue 18): a 1.5× TopoLip ratio, a 0.10 accuracy drop.
TARGETS: dict[str, float] = {"log": math.log(1.5), "accuracy_drop": 0.10, "auroc": 0.05,
                             "median_radius": math.log(1.3)}


def power_table(verdicts: pd.DataFrame, *, alpha: float = 0.05,
                power: float = 0.8) -> pd.DataFrame:
    """Minimum detectable effect of each primary comparison, for the design the run used.

    From the run's own per-seed differences: the standard error of a primary row times
    ``sqrt(n_pairs)`` is the sd of its paired differences (log units for TopoLip; with the
    image level for an AUROC), and :func:`topolip.evidence.stats.minimum_detectable_effect` gives
    the
    true effect its paired t detects with ``power`` at ``alpha`` (noncentral t, ``df = n − 1``).

    Parameters
    ----------
    verdicts : pandas.DataFrame
        :func:`topolip.evidence.claims.evaluate`'s table.
    alpha : float, default=0.05
        The primary's level.
    power : float, default=0.8
        The power.

    Returns
    -------
    pandas.DataFrame
        One row per primary comparison with a paired t: ``claim``, ``comparison``, ``group``,
        ``measure``, ``scale``, ``n_pairs``, ``sd`` (of the differences), ``mde`` (in effect
        units: a log ratio, or a difference), ``mde_ratio_low``/``mde_ratio_high`` (for log:
        ``exp(∓mde)``), ``target`` and ``power_at_target`` (the power for a 1.5× TopoLip
        ratio, a 1.3× median-radius ratio, a 0.10 accuracy drop or a 0.05 AUROC difference;
        :data:`TARGETS`), ``seeds_for_target`` (the seeds that target needs at the run's
        sd, :func:`seeds_for_target`), ``observed`` (the run's effect, as a ratio for log) and
        ``text`` (the MDE in words).

    Examples
    --------
    >>> v = pd.DataFrame([dict(claim="a", comparison="vit vs resnet", group="pgd",
    ...     measure="end_to_end_scale_free", role="primary", scale="log", effect=-0.1,
    ...     se=0.1, n_pairs=5)])
    >>> t = power_table(v)
    >>> round(float(t["mde_ratio_low"].iloc[0]), 3), t["text"].iloc[0]
    (0.687, 'a ratio ≤ 0.687 or ≥ 1.46')
    """
    require_columns(verdicts, ["claim", "comparison", "group", "measure", "role",
                               "scale", "effect", "se", "n_pairs"], "verdicts")
    rows = []
    prim = verdicts[(verdicts["role"] == "primary") & ~verdicts["comparison"].astype(
        str).str.startswith("Kendall")]
    for r in prim.to_dict("records"):
        n = int(r["n_pairs"]) if math.isfinite(float(r["n_pairs"])) else 0
        sd = float(r["se"]) * math.sqrt(n) if n >= 2 else math.nan
        mde = stats.minimum_detectable_effect(sd, n, alpha=alpha, power=power)
        log = r["scale"] == "log"
        target = TARGETS.get(r["measure"], TARGETS["log" if log else "accuracy_drop"])
        row = {"claim": r["claim"], "comparison": r["comparison"], "group": r["group"],
               "measure": r["measure"], "scale": r["scale"], "n_pairs": n, "sd": sd,
               "mde": mde, "mde_ratio_low": math.exp(-mde) if log else math.nan,
               "mde_ratio_high": math.exp(mde) if log else math.nan, "target": target,
               "power_at_target": stats.paired_power(target, sd, n, alpha=alpha),
               "observed": math.exp(r["effect"]) if log and math.isfinite(r["effect"])
               else r["effect"]}
        row["seeds_for_target"] = seeds_for_target(target, sd, alpha=alpha, power=power)
        if not math.isfinite(mde):
            row["text"] = "nothing (fewer than 2 pairs or no spread)"
        elif log:
            row["text"] = f"a ratio ≤ {row['mde_ratio_low']:.3g} or ≥ {row['mde_ratio_high']:.3g}"
        else:
            row["text"] = f"a difference of ±{mde:.3g}"
        rows.append(row)
    cols = ["claim", "comparison", "group", "measure", "scale", "n_pairs", "sd", "mde",
            "mde_ratio_low", "mde_ratio_high", "target", "power_at_target", "seeds_for_target",
            "observed", "text"]
    return pd.DataFrame(rows, columns=cols)


def seeds_for_target(target: float, sd: float, *, alpha: float = 0.05, power: float = 0.8,
                     max_seeds: int = 200) -> float:
    """The fewest seed pairs whose paired t detects ``target`` with ``power``, at a standard
    deviation ``sd`` of the per-seed differences (the run's own; noncentral t,
    :func:`topolip.evidence.stats.paired_power`).

    Returns
    -------
    float
        The seed count (at least 2), or NaN when ``sd`` is not finite and positive or more
        than ``max_seeds`` would be needed.

    Examples
    --------
    >>> seeds_for_target(math.log(1.3), 0.24)
    9.0
    """
    if not (math.isfinite(sd) and sd > 0):
        return math.nan
    for n in range(2, max_seeds + 1):
        if stats.paired_power(target, sd, n, alpha=alpha) >= power:
            return float(n)
    return math.nan
