"""The numbers and sentences each chapter of the book glues into its prose, from the saved tables.

One function per notebook (``00_theory`` … ``09_measures``): it takes the chapter's tables (a
``results/<profile>/tables`` folder, or the DataFrames already in hand, by table stem) and the
notebook's parameters, and returns a plain ``dict`` glue key -> text, each text formatted
exactly as the book shows it (:func:`topolip.report.format.glue_text`: the same digits, a NaN as
``—``, powers of ten instead of ``e`` notation). The notebook glues them all with
:func:`topolip.report.format.glue_all`; the tests assert them on small tables
(``tests/test_findings.py``), so the prose's numbers are tested code.

Torch-free (pandas, numpy and the table statistics): :mod:`topolip.nets.models.capacity`, which
imports torch, is not used here; ``train_findings`` takes its table as an input.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from topolip import roster
from topolip.report.format import arch_label, arch_ranking, glue_text, shown_kind
from topolip.schema import require_columns

__all__ = [
    "bounds_findings", "compare_findings", "learner_findings", "matched_findings",
    "measures_findings", "ood_findings",
    "primary_choices", "radius_findings", "robustness_findings", "sweeps_findings",
    "theory_findings",
    "topolip_findings", "train_findings", "verdict_findings",
]

Tables = str | os.PathLike | Mapping[str, pd.DataFrame]


def _frames(tables: Tables, names: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The tables ``names`` (stems, ``"topolip_summary"``) from a folder of CSV files or from a
    mapping stem -> DataFrame."""
    if isinstance(tables, (str, os.PathLike)):
        folder = Path(tables)
        out = {}
        for name in names:
            path = folder / f"{name}.csv"
            if not path.is_file():
                raise FileNotFoundError(f"no table {name}.csv in {str(folder)!r}; run the "
                                        "notebook that writes it first")
            out[name] = pd.read_csv(path)
        return out
    if isinstance(tables, Mapping):
        missing = [n for n in names if n not in tables]
        if missing:
            raise KeyError(f"tables lacks {missing} (has {sorted(tables)}); pass a DataFrame "
                           "per table stem, or the tables folder")
        for n in names:
            if not isinstance(tables[n], pd.DataFrame):
                raise TypeError(f"tables[{n!r}] must be a DataFrame; got "
                                f"{type(tables[n]).__name__}")
        return {n: tables[n] for n in names}
    raise TypeError("tables must be a folder path or a mapping of table stem to DataFrame; "
                    f"got {type(tables).__name__}")


def _params(params: Mapping[str, Any], names: Sequence[str], chapter: str) -> None:
    missing = [n for n in names if n not in params]
    if missing:
        raise KeyError(f"params lacks {missing}, parameters of {chapter}")


def theory_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``00_theory`` glues, from ``theory_layers``, ``theory_attention`` and ``theory_conv``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"theory_layers": ..., "theory_attention": ...,
        "theory_conv": ...}``.
    params : mapping
        The notebook's parameters: ``theory_samples``, ``theory_seed``, ``slope_radius``,
        ``token_dim``.

    Returns
    -------
    dict
        ``theory-n-layers`` (random layers checked), ``theory-samples``, ``theory-seed``,
        ``theory-n-tight`` (layers with bound / estimate < 1.01), ``theory-loosest-layer`` and
        ``theory-loosest-ratio``; ``theory-attention-slope`` (log-log slope of the attention
        bound against n at R = ``slope_radius``, 4 ≤ n ≤ 256, width ``token_dim``),
        ``theory-slope-radius``, ``theory-width``; ``theory-conv-growth`` (percent growth of
        the certified conv norm over the last input size), ``theory-conv-size-last``,
        ``theory-conv-size-prev``, ``theory-conv-cheap-slack`` (largest cheap / certified).

    Raises
    ------
    ValueError
        If the attention slope is outside (0.3, 0.6) (not the √n regime), or the certified
        conv norm falls with the input size or still grows by 1% or more at the last size.
    """
    _params(params, ("theory_samples", "theory_seed", "slope_radius", "token_dim"), "00_theory")
    t = _frames(tables, ("theory_layers", "theory_attention", "theory_conv"))
    random_table, attention, conv = t["theory_layers"], t["theory_attention"], t["theory_conv"]
    f: dict[str, str] = {}
    tight = random_table[random_table["bound / estimate"] < 1.01]
    f["theory-n-layers"] = glue_text(len(random_table), "{:d}")
    f["theory-samples"] = glue_text(params["theory_samples"], "{:d}")
    f["theory-seed"] = glue_text(params["theory_seed"], "{:d}")
    f["theory-n-tight"] = glue_text(len(tight), "{:d}")
    loosest = random_table.loc[random_table["bound / estimate"].idxmax()]
    f["theory-loosest-layer"] = glue_text(loosest["layer"], "{}")
    f["theory-loosest-ratio"] = glue_text(loosest["bound / estimate"])

    by_n = attention[attention["width"] == params["token_dim"]]
    regime = by_n[(by_n["R"] == params["slope_radius"]) & by_n["n"].between(4, 256)]
    slope = np.polyfit(np.log(regime["n"]), np.log(regime["bound"]), 1)[0]
    if not 0.3 < slope < 0.6:
        raise ValueError(f"the attention bound's slope against n is {slope:.3f}, not about "
                         "1/2: the √n regime is not seen")
    f["theory-attention-slope"] = glue_text(slope, "{:.2f}")
    f["theory-slope-radius"] = glue_text(params["slope_radius"], "{:g}")
    f["theory-width"] = glue_text(params["token_dim"], "{:d}")

    sizes = conv[conv["sweep"] == "input size"]
    if not (np.diff(sizes["certified"]) >= -1e-3 * sizes["certified"].iloc[:-1]).all():
        raise ValueError("the certified conv norm falls as the input grows")
    growth = sizes["certified"].iloc[-1] / sizes["certified"].iloc[-2] - 1
    if not growth < 0.01:
        raise ValueError(f"the certified conv norm still grows by {100 * growth:.2f}% at the "
                         "last input size: not saturated")
    f["theory-conv-growth"] = glue_text(100 * growth, "{:+.2f}")
    f["theory-conv-size-last"] = glue_text(int(sizes["value"].iloc[-1]), "{:d}")
    f["theory-conv-size-prev"] = glue_text(int(sizes["value"].iloc[-2]), "{:d}")
    f["theory-conv-cheap-slack"] = glue_text((conv["cheap"] / conv["certified"]).max())
    return f


#: Reader-facing names of the data sets and training devices of ``train-data``.
_DATA_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10", "cifar-10": "CIFAR-10",
                "digits": "scikit-learn's 8×8 digits"}
_DEVICE_LABELS = {"cpu": "the CPU", "cuda": "a GPU", "mps": "an Apple GPU"}


#: The accuracy the quick profile's recipe aims at (issue 25): every architecture's mean clean
#: test accuracy at least ACCURACY_GOAL, the ViT within ACCURACY_GAP_GOAL of the ResNet.
ACCURACY_GOAL = 0.95
ACCURACY_GAP_GOAL = 0.02


def train_findings(tables: Tables, params: Mapping[str, Any], *, capacity: pd.DataFrame,
                   match_tolerance: float, data_name: str, device: str) -> dict[str, str]:
    """What ``01_train`` glues, from ``models`` and the capacity table.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"models": ...}``.
    params : mapping
        The notebook's parameters: ``archs``, ``seeds``, ``epochs``, ``n_train``.
    capacity : pandas.DataFrame
        ``topolip.nets.models.capacity.capacity_table(models, FAMILY_PAIRS)`` (computed by the
        notebook: that module imports torch).
    match_tolerance : float
        ``topolip.nets.models.capacity.MATCH_TOLERANCE`` (a fraction, 0.15).
    data_name : str
        The data set's name (``data.name``).
    device : str
        The training device's type (``"cpu"``, ``"cuda"``).

    Returns
    -------
    dict
        ``n-models``, ``n-archs``, ``n-seeds``, ``train-epochs``, ``train-data``;
        ``acc-vit``, ``acc-resnet``, ``acc-attention-stack``, ``acc-conv-stack`` (mean clean
        test accuracy over seeds, ``—`` for an architecture not trained); ``acc-best-arch``,
        ``acc-best``, ``acc-worst-arch``, ``acc-worst``, ``acc-spread``; ``acc-goal`` (which
        architectures fall short of :data:`ACCURACY_GOAL`, by how much), ``acc-gap-vit-resnet``
        (ResNet minus ViT, against :data:`ACCURACY_GAP_GOAL`); ``match-tolerance``,
        ``match-verdict``; per compared pair ``params-ratio-A-C``, ``flops-ratio-A-C``,
        ``params-A-C``; ``train-seconds`` (total training time).
    """
    _params(params, ("archs", "seeds", "epochs", "n_train"), "01_train")
    models = _frames(tables, ("models",))["models"]
    f: dict[str, str] = {}
    acc = models.groupby("arch", sort=False)["test_accuracy"].agg(["mean", "min", "max"])
    f["n-models"] = glue_text(len(models), "{:d}")
    f["n-archs"] = glue_text(len(params["archs"]), "{:d}")
    f["n-seeds"] = glue_text(len(params["seeds"]), "{:d}")
    f["train-epochs"] = glue_text(params["epochs"], "{:d}")
    data = _DATA_LABELS.get(str(data_name).lower(), str(data_name))
    where = _DEVICE_LABELS.get(str(device).lower(), f"the {device} device")
    f["train-data"] = glue_text(
        f"{data} ({int(params['n_train']):,} training images) on {where}", "{}")
    for arch in roster.arch_names():
        value = acc["mean"].get(arch, float("nan"))
        f[f"acc-{arch.replace('_', '-')}"] = glue_text(value, "{:.3f}")
    best, worst = acc["mean"].idxmax(), acc["mean"].idxmin()
    f["acc-best-arch"] = glue_text(roster.label(best), "{}")
    f["acc-best"] = glue_text(acc["mean"].max(), "{:.3f}")
    f["acc-worst-arch"] = glue_text(roster.label(worst), "{}")
    f["acc-worst"] = glue_text(acc["mean"].min(), "{:.3f}")
    f["acc-spread"] = glue_text(acc["mean"].max() - acc["mean"].min(), "{:.3f}")
    short = [(a, m) for a, m in acc["mean"].items() if m < ACCURACY_GOAL]
    f["acc-goal"] = glue_text(
        f"every architecture reaches the goal of {ACCURACY_GOAL:.2f}" if not short else
        f"below the goal of {ACCURACY_GOAL:.2f}: " + "; ".join(
            f"the {roster.label(a)} ({m:.3f}, short by {ACCURACY_GOAL - m:.3f})"
            for a, m in short), "{}")
    (attention, convolution), *_ = roster.family_pairs()  # the goal's pair: ViT and ResNet
    if {attention, convolution} <= set(acc.index):
        gap = acc["mean"][convolution] - acc["mean"][attention]
        f["acc-gap-vit-resnet"] = glue_text(
            f"{gap:+.3f}, " + ("within" if abs(gap) <= ACCURACY_GAP_GOAL else "outside")
            + f" the goal of {ACCURACY_GAP_GOAL:.2f}", "{}")
    else:
        f["acc-gap-vit-resnet"] = glue_text("not measured (no ViT and ResNet in this run)", "{}")
    f["match-tolerance"] = glue_text(100 * match_tolerance, "{:.0f}%")
    unmatched = capacity[~capacity["matched"]]
    f["match-verdict"] = glue_text("both compared pairs are matched" if unmatched.empty else (
        "NOT matched in this run: " + "; ".join(
            f"{roster.label(r.attention)} against "
            f"{roster.label(r.convolution)}, ratio {r.parameter_ratio:.2f}"
            for r in unmatched.itertuples())
        + ", so the comparisons of that pair confound the architecture with its size (the "
        "profiles are matched; a parameter override can undo it)"), "{}")
    for r in capacity.itertuples():
        key = f"{r.attention}-{r.convolution}".replace("_", "-")
        f[f"params-ratio-{key}"] = glue_text(r.parameter_ratio, "{:.2f}")
        f[f"flops-ratio-{key}"] = glue_text(r.flop_ratio, "{:.2f}")
        f[f"params-{key}"] = glue_text(
            f"{r.parameters_attention:,} against {r.parameters_convolution:,}", "{}")
    f["train-seconds"] = glue_text(models["train_seconds"].sum(), "{:.0f}")
    return f


def topolip_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``02_topolip`` glues, from ``topolip`` and ``models``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"topolip": ..., "models": ...}``.
    params : mapping
        The notebook's parameters: ``topolip_strengths``, ``n_points``, ``n_robust``,
        ``ladder_pgd_steps``, ``ladder_pgd_restarts``.

    Returns
    -------
    dict
        ``tl-n-models``, ``tl-n-kinds``, ``tl-n-ratios`` (layer rows, depth > 0),
        ``tl-n-flagged`` and ``tl-share-flagged`` (ratios with a flag), ``tl-kinds-input-below``
        and ``tl-n-kinds-input-below`` (kinds whose input displacement is within the noise
        floor for most models), ``tl-input-above`` (per kind of ``topolip_strengths``, the
        share of models whose input displacement lies above the noise floor: the floor rule's
        quantity), ``tl-share-layers-above`` (layer rows above the floor),
        ``tl-envelope-max`` (largest bottleneck / envelope), ``tl-n-points``, ``tl-n-robust``,
        ``tl-pgd-steps`` and ``tl-pgd-restarts`` (the PGD of every chapter, the ladder's).
    """
    _params(params, ("topolip_strengths", "n_points", "n_robust", "ladder_pgd_steps",
                     "ladder_pgd_restarts"), "02_topolip")
    t = _frames(tables, ("topolip", "models"))
    table = t["topolip"].copy()
    table["flag"] = table["flag"].astype(object).fillna("")  # "" is read back from CSV as NaN
    f: dict[str, str] = {}
    ratios = table[table["depth"] > 0]
    n_flagged = int((ratios["flag"] != "").sum())
    f["tl-n-models"] = glue_text(len(t["models"]), "{}")
    f["tl-n-kinds"] = glue_text(len(params["topolip_strengths"]), "{}")
    f["tl-n-ratios"] = glue_text(len(ratios), "{}")
    f["tl-n-flagged"] = glue_text(n_flagged, "{}")
    f["tl-share-flagged"] = glue_text(100 * n_flagged / max(len(ratios), 1), "{:.0f}%")
    inputs = table[table["depth"] == 0]
    below = inputs.groupby("perturbation")["within_noise_floor"].mean()
    f["tl-kinds-input-below"] = glue_text(", ".join(
        roster.label(k) for k, v in below.items() if v > 0.5) or "none", "{}")
    f["tl-n-kinds-input-below"] = glue_text(int((below > 0.5).sum()), "{}")
    f["tl-input-above"] = glue_text(", ".join(
        f"{roster.label(k)} {1 - below[k]:.0%}" for k in params["topolip_strengths"]
        if k in below.index) or "none", "{}")
    above = table[(table["depth"] > 0) & ~table["within_noise_floor"]]
    f["tl-share-layers-above"] = glue_text(100 * len(above) / max(len(ratios), 1), "{:.0f}%")
    f["tl-envelope-max"] = glue_text((table["bottleneck"] / table["envelope"]).max(), "{:.2f}")
    f["tl-n-points"] = glue_text(params["n_points"], "{}")
    f["tl-n-robust"] = glue_text(max(params["n_robust"], params["n_points"]), "{}")
    f["tl-pgd-steps"] = glue_text(params["ladder_pgd_steps"], "{}")
    f["tl-pgd-restarts"] = glue_text(params["ladder_pgd_restarts"], "{}")
    return f


def compare_findings(tables: Tables) -> dict[str, str]:
    """What ``03_compare`` glues, from ``topolip`` and ``topolip_summary``.

    The headline kind is the perturbation whose input displacement lies within the noise floor
    for the fewest models (the first such in the table's order); model-level values are
    geometric means over seeds.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"topolip": ..., "topolip_summary": ...}``.

    Returns
    -------
    dict
        ``e2e-kind`` (the headline kind), ``e2e-smoothest-arch``, ``e2e-smoothest``,
        ``e2e-roughest-arch``, ``e2e-roughest``, ``e2e-vit``, ``e2e-resnet`` (end-to-end
        scale-free TopoLip on the headline kind), ``e2e-rankings`` (every kind's ranking),
        ``e2e-vit-below-resnet`` and ``e2e-stack-below`` (kinds where the attention family is
        below, :func:`topolip.evidence.claims.family_below_counts`), ``e2e-seed-spread`` (largest
        max /
        min over seeds of one architecture and kind).
    """
    from topolip.evidence.claims import family_below_counts

    t = _frames(tables, ("topolip", "topolip_summary"))
    table, summary = t["topolip"], t["topolip_summary"]
    depth = table.groupby("arch")["depth"].max().rename("L")
    summary = summary.merge(depth, on="arch")
    kinds = list(dict.fromkeys(summary["perturbation"]))
    e2e = np.exp(summary.assign(log=np.log(summary["end_to_end_scale_free"]))
                 .groupby(["perturbation", "arch"])["log"].mean().unstack())
    flagged = ((summary["end_to_end_flag"].fillna("") != "")
               .groupby(summary["perturbation"]).mean())
    headline = min(kinds, key=lambda k: (flagged.get(k, 0.0), kinds.index(k)))
    first = e2e.loc[headline].dropna().sort_values()
    f: dict[str, str] = {}
    f["e2e-kind"] = glue_text(roster.label(headline), "{}")
    f["e2e-smoothest-arch"] = glue_text(arch_label(first.index[0]), "{}")
    f["e2e-smoothest"] = glue_text(first.iloc[0])
    f["e2e-roughest-arch"] = glue_text(arch_label(first.index[-1]), "{}")
    f["e2e-roughest"] = glue_text(first.iloc[-1])
    (vit, resnet), (attention_stack, conv_stack) = roster.family_pairs()
    f["e2e-vit"] = glue_text(first.get(vit, float("nan")))
    f["e2e-resnet"] = glue_text(first.get(resnet, float("nan")))
    f["e2e-rankings"] = glue_text("; ".join(f"{roster.label(kind)}: {arch_ranking(row)}"
                                            for kind, row in e2e.iterrows()), "{}")
    below = family_below_counts(summary)
    f["e2e-vit-below-resnet"] = glue_text(below[(vit, resnet)], "{}")
    f["e2e-stack-below"] = glue_text(below[(attention_stack, conv_stack)], "{}")
    spread = summary.groupby(["perturbation", "arch"])["end_to_end_scale_free"].agg(
        ["min", "max"])
    f["e2e-seed-spread"] = glue_text(float((spread["max"] / spread["min"]).max()), "{:.2f}")
    return f


def robustness_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``04_robustness`` glues, from ``robustness``, ``masking``, ``smoothness``,
    ``topolip_summary`` and ``models``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or a mapping with those five stems.
    params : mapping
        The notebook's parameters: ``topolip_strengths`` (its ``"pgd"`` entry is the TopoLip
        budget), ``attack_eps``, ``n_ladder``, ``ladder_pgd_steps``, ``ladder_pgd_restarts``,
        ``apgd_steps``, ``apgd_target_classes``, ``square_queries``, ``masking_probe_steps``,
        ``masking_large_eps``, ``masking_tolerance``, ``masking_zero_accuracy``.

    Returns
    -------
    dict
        The parameters as shown: ``rb-eps``, ``rb-eps-grid``, ``rb-n-ladder``,
        ``rb-pgd-steps``, ``rb-pgd-restarts``, ``rb-apgd-steps``, ``rb-apgd-targets``,
        ``rb-square-queries``, ``rb-probe-steps``, ``rb-large-eps``, ``rb-tolerance``,
        ``rb-zero-accuracy``. The ladder at the TopoLip budget: ``rb-fgsm-ranking``,
        ``rb-pgd-ranking``, ``rb-autoattack-ranking``, ``rb-square-ranking`` (mean accuracy
        per architecture, lowest first), ``rb-aa-below-pgd``. Masking: ``rb-n-attacked``,
        ``rb-n-flagged``, ``rb-flagged``, ``rb-check-failures``. Smoothness against the drop
        (within architectures): ``rb-n-kinds``, ``rb-n-archs``, ``rb-n-excluded``,
        ``rb-pooled-tau``, ``rb-pooled-p``, ``rb-n-permutations``, ``rb-exact``,
        ``rb-tau-range``, ``rb-n-positive``, ``rb-n-significant``,
        ``rb-n-negative-significant``, ``rb-holm-words`` (those counts in words, or, when
        the per-kind family cannot decide at the run's seed count, that it describes and the
        seeds it would need); over architecture means ``rb-between-tau``,
        ``rb-between-p``, ``rb-between-min-p``; ``rb-agree``, ``rb-n-seeds``.
    """
    from topolip.evidence.claims import most_robust_vs_smoothest
    from topolip.evidence.masking import ladder_table, masking_summary

    _params(params, ("topolip_strengths", "attack_eps", "n_ladder", "ladder_pgd_steps",
                     "ladder_pgd_restarts", "apgd_steps", "apgd_target_classes",
                     "square_queries", "masking_probe_steps", "masking_large_eps",
                     "masking_tolerance",
                     "masking_zero_accuracy"), "04_robustness")
    t = _frames(tables, ("robustness", "masking", "smoothness", "topolip_summary", "models"))
    curves, masking, smooth = t["robustness"], t["masking"], t["smoothness"]
    summary, models = t["topolip_summary"], t["models"]
    eps_topolip = params["topolip_strengths"][roster.BUDGET_KIND]
    seeds = sorted(int(s) for s in models["seed"].unique())
    ladder = ladder_table(curves, eps_topolip, masking=masking)
    flagged = masking_summary(masking)
    n_models = masking[["arch", "seed"]].drop_duplicates().shape[0]
    f: dict[str, str] = {}
    f["rb-eps"] = glue_text(eps_topolip, "{:g}")
    f["rb-eps-grid"] = glue_text(", ".join(f"{e:g}" for e in params["attack_eps"] if e > 0),
                                 "{}")
    f["rb-n-ladder"] = glue_text(params["n_ladder"], "{}")
    f["rb-pgd-steps"] = glue_text(params["ladder_pgd_steps"], "{}")
    f["rb-pgd-restarts"] = glue_text(params["ladder_pgd_restarts"], "{}")
    f["rb-apgd-steps"] = glue_text(params["apgd_steps"], "{}")
    f["rb-apgd-targets"] = glue_text(params["apgd_target_classes"], "{}")
    f["rb-square-queries"] = glue_text(params["square_queries"], "{}")
    f["rb-probe-steps"] = glue_text(params["masking_probe_steps"], "{}")
    f["rb-large-eps"] = glue_text(params["masking_large_eps"], "{:g}")
    f["rb-tolerance"] = glue_text(params["masking_tolerance"], "{:g}")
    f["rb-zero-accuracy"] = glue_text(params["masking_zero_accuracy"], "{:g}")
    for attack in ("fgsm", "pgd", "autoattack", "square"):
        row = ladder[ladder["perturbation"] == attack].sort_values("accuracy_mean")
        f[f"rb-{attack}-ranking"] = glue_text(", ".join(
            f"{roster.label(a)} {v:.2f}"
            for a, v in zip(row["arch"], row["accuracy_mean"], strict=True)), "{}")
    pivot = ladder.pivot(index="arch", columns="perturbation", values="accuracy_mean")
    f["rb-aa-below-pgd"] = glue_text(float((pivot["pgd"] - pivot["autoattack"]).max()),
                                     "{:.2f}")
    f["rb-n-attacked"] = glue_text(n_models, "{}")
    f["rb-n-flagged"] = glue_text(len(flagged), "{}")
    f["rb-flagged"] = glue_text("; ".join(
        f"{roster.label(a)} seed {s} ({c})" for a, s, c in flagged.values)
        if len(flagged) else "none", "{}")
    passes = masking[masking["check"] != "all"].groupby("check", sort=False)["passed"].sum()
    f["rb-check-failures"] = glue_text(", ".join(
        f"{c} ({n_models - int(n)})" for c, n in passes.items() if n < n_models) or "none",
        "{}")
    inside = smooth[smooth["level"] == "within architecture"]
    pooled = inside[(inside["group"] == "pooled") & (inside["response"] == "accuracy_drop")]
    per_kind = inside[(inside["group"] != "pooled") & (inside["response"] == "accuracy_drop")]
    between = smooth[(smooth["level"] == "architecture means")
                     & (smooth["response"] == "accuracy_drop")]
    nan = float("nan")
    f["rb-n-kinds"] = glue_text(len(per_kind), "{}")
    f["rb-n-archs"] = glue_text(int(pooled["n_arch"].iloc[0]) if len(pooled) else 0, "{}")
    f["rb-n-excluded"] = glue_text(int(pooled["n_excluded"].iloc[0]) if len(pooled) else 0,
                                   "{}")
    f["rb-pooled-tau"] = glue_text(float(pooled["tau"].iloc[0]) if len(pooled) else nan,
                                   "{:+.2f}")
    f["rb-pooled-p"] = glue_text(float(pooled["pvalue"].iloc[0]) if len(pooled) else nan,
                                 "{:.3f}")
    f["rb-n-permutations"] = glue_text(
        int(pooled["n_permutations"].iloc[0]) if len(pooled) else 0, "{:,}")
    f["rb-exact"] = glue_text("exact" if len(pooled) and bool(pooled["exact"].iloc[0])
                              else "Monte Carlo", "{}")
    f["rb-tau-range"] = glue_text(
        f"{per_kind['tau'].min():+.2f} to {per_kind['tau'].max():+.2f}"
        if per_kind["tau"].notna().any() else "undefined", "{}")
    f["rb-n-positive"] = glue_text(int((per_kind["tau"] > 0).sum()), "{}")
    f["rb-n-significant"] = glue_text(int(((per_kind["p_adjusted"] < 0.05)
                                           & (per_kind["tau"] > 0)).sum()), "{}")
    f["rb-n-negative-significant"] = glue_text(int(((per_kind["p_adjusted"] < 0.05)
                                                    & (per_kind["tau"] < 0)).sum()), "{}")
    # a family that cannot decide at this seed count is described, its decisions not counted
    floor = per_kind["family_floor"] if "family_floor" in per_kind else pd.Series(dtype=float)
    if len(floor) and float(floor.min()) >= 0.05:
        need = int(per_kind["seeds_needed"].max())
        words = (f"but no kind can be significant after Holm's correction at "
                 f"{len(seeds)} seeds (the family's smallest attainable adjusted p is "
                 f"{float(floor.min()):.3f} > 0.05; it would need {need} seeds): these rows "
                 "describe")
    else:
        pos = int(((per_kind["p_adjusted"] < 0.05) & (per_kind["tau"] > 0)).sum())
        neg = int(((per_kind["p_adjusted"] < 0.05) & (per_kind["tau"] < 0)).sum())
        words = (f"significantly so after Holm's correction for {pos} (significantly "
                 f"negative: {neg})")
    f["rb-holm-words"] = glue_text(words, "{}")
    f["rb-between-tau"] = glue_text(float(between["tau"].iloc[0]) if len(between) else nan,
                                    "{:+.2f}")
    f["rb-between-p"] = glue_text(float(between["pvalue"].iloc[0]) if len(between) else nan,
                                  "{:.2f}")
    f["rb-between-min-p"] = glue_text(
        float(between["min_pvalue"].iloc[0]) if len(between) else nan, "{:.3f}")
    agree = most_robust_vs_smoothest(summary)
    f["rb-agree"] = glue_text(f"{int(agree['agree'].sum())} of {len(agree)}", "{}")
    f["rb-n-seeds"] = glue_text(len(seeds), "{}")
    return f


def bounds_findings(tables: Tables, params: Mapping[str, Any], *,
                    data_name: str) -> dict[str, str]:
    """What ``05_bounds_vs_measured`` glues, from ``bounds`` and ``topolip``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"bounds": ..., "topolip": ...}``.
    params : mapping
        The notebook's parameters: ``n_points``, ``estimate_samples``, ``estimate_n_iter``.
    data_name : str
        The data set's name (``data.name``).

    Returns
    -------
    dict
        ``bounds-data``; over every layer of the join with the measured table
        (:func:`topolip.evidence.bound_tables.bound_slack`) ``bounds-max-slack``,
        ``bounds-min-slack``, ``bounds-median-slack``, ``bounds-n-layers``;
        ``bounds-estimate-samples``, ``bounds-estimate-iter``; the certified chain's growth
        (:func:`topolip.evidence.bound_tables.chain_growth`) ``bounds-chain-loosest-arch``,
        ``bounds-chain-loosest``, ``bounds-chain-tightest-arch``, ``bounds-chain-tightest``;
        per kind of bound (:func:`topolip.evidence.bound_tables.bound_looseness`)
        ``bounds-loosest-segment``, ``bounds-loosest-ratio``, ``bounds-tightest-segment``,
        ``bounds-tightest-ratio``.
    """
    from topolip.evidence.bound_tables import (
        bound_looseness,
        bound_slack,
        bounds_vs_measured,
        chain_growth,
    )

    _params(params, ("n_points", "estimate_samples", "estimate_n_iter"),
            "05_bounds_vs_measured")
    t = _frames(tables, ("bounds", "topolip"))
    bounds = t["bounds"]
    joined = bounds_vs_measured(bounds, t["topolip"])
    f: dict[str, str] = {}
    f["bounds-data"] = glue_text(f"{data_name}, {params['n_points']} test images", "{}")
    slack = bound_slack(joined)
    f["bounds-max-slack"] = glue_text(slack.max())
    f["bounds-min-slack"] = glue_text(slack.min())
    f["bounds-median-slack"] = glue_text(slack.median())
    f["bounds-n-layers"] = glue_text(len(slack), "{:d}")
    f["bounds-estimate-samples"] = glue_text(params["estimate_samples"], "{:d}")
    f["bounds-estimate-iter"] = glue_text(params["estimate_n_iter"], "{:d}")
    growth = chain_growth(joined)
    f["bounds-chain-loosest-arch"] = glue_text(arch_label(growth["slack"].idxmax()), "{}")
    f["bounds-chain-loosest"] = glue_text(growth["slack"].max())
    f["bounds-chain-tightest-arch"] = glue_text(arch_label(growth["slack"].idxmin()), "{}")
    f["bounds-chain-tightest"] = glue_text(growth["slack"].min())
    looseness = bound_looseness(bounds)
    f["bounds-loosest-segment"] = glue_text(looseness["segment"].iloc[-1], "{}")
    f["bounds-loosest-ratio"] = glue_text(looseness["max_ratio"].iloc[-1])
    f["bounds-tightest-segment"] = glue_text(looseness["segment"].iloc[0], "{}")
    f["bounds-tightest-ratio"] = glue_text(looseness["max_ratio"].iloc[0])
    return f


def ood_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``06_ood`` glues, from ``ood_topolip_summary`` and ``ood_behaviour``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"ood_topolip_summary": ..., "ood_behaviour": ...}``.
    params : mapping
        The notebook's parameters: ``n_points``, ``n_ood``.

    Returns
    -------
    dict
        ``ood-e2e-rankings`` (per OOD set, architectures by mean end-to-end scale-free TopoLip
        over seeds, lowest first), ``ood-auroc-rankings`` (the same for the mean AUROC),
        ``ood-n-below-chance`` and ``ood-below-chance`` (architecture-set means of AUROC below
        0.5), ``ood-detectors-below-chance`` (the same count for each logit-based detection
        score of :data:`topolip.roster.OOD_DETECTORS`, e.g. "max-logit 3 of 12, energy 2 of
        12"; "not measured" when the table has none of their AUROC columns), ``ood-n-points``,
        ``ood-n-ood``.
    """
    _params(params, ("n_points", "n_ood"), "06_ood")
    t = _frames(tables, ("ood_topolip_summary", "ood_behaviour"))
    summary, behaviour = t["ood_topolip_summary"], t["ood_behaviour"]
    e2e = summary.groupby(["ood_set", "arch"])["end_to_end_scale_free"].mean().unstack()
    ood = behaviour[behaviour["dataset"] != "in_distribution"]
    auroc = ood.groupby(["dataset", "arch"])["auroc"].mean().unstack()

    def ranking(row):
        return arch_ranking(row, "{:.2f}", sep=", ", item="{label} {value}")

    f: dict[str, str] = {}
    f["ood-e2e-rankings"] = glue_text("; ".join(f"{roster.label(k)}: {ranking(r)}"
                                                for k, r in e2e.iterrows()), "{}")
    f["ood-auroc-rankings"] = glue_text("; ".join(f"{roster.label(k)}: {ranking(r)}"
                                                  for k, r in auroc.iterrows()), "{}")
    below = auroc.stack()
    below = below[below < 0.5]
    f["ood-n-below-chance"] = glue_text(f"{len(below)} of {auroc.size}", "{}")
    f["ood-below-chance"] = glue_text(", ".join(
        f"{roster.label(a)} on {roster.label(d)} ({v:.2f})"
        for (d, a), v in below.items()) or "none", "{}")
    logit_based = []
    for score, column in roster.OOD_DETECTORS.items():
        if column != "auroc" and column in ood.columns:
            means = ood.groupby(["dataset", "arch"])[column].mean()
            logit_based.append(f"{score.replace('_', '-')} {int((means < 0.5).sum())} of "
                               f"{int(means.notna().sum())}")
    f["ood-detectors-below-chance"] = glue_text(", ".join(logit_based) or "not measured", "{}")
    f["ood-n-points"] = glue_text(params["n_points"], "{}")
    f["ood-n-ood"] = glue_text(params["n_ood"], "{}")
    return f


def sweeps_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``07_sweeps`` glues, from ``sweeps``.

    Everything but ``sw-kinds``, ``sw-floor-shares`` and ``sw-n-models`` is read at the kind of
    ``sweep_perturbations`` with the fewest rows within the noise floor
    (:func:`topolip.report.format.shown_kind`, the kind the figures draw).

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"sweeps": ...}``.
    params : mapping
        The notebook's parameters: ``sweep_perturbations``, ``n_points``, ``n_robust``,
        ``sweep_epochs``.

    Returns
    -------
    dict
        ``sw-trends`` (per architecture and swept parameter: whether the mean end-to-end
        scale-free TopoLip rises, falls or is not monotone, first to last value),
        ``sw-kind``, ``sw-kinds``, ``sw-floor-shares`` (per kind, the share of sweep rows whose
        input displacement lies within the noise floor; "not measured" without the flags),
        ``sw-n-points``, ``sw-n-robust``, ``sw-n-models``
        (distinct checkpoints), ``sw-epochs``, ``sw-max-span-arch`` and ``sw-max-span``
        (largest max / min over one architecture's models), ``sw-ranges``,
        ``sw-median-span`` (largest / smallest architecture median), ``sw-size-tau``
        (Kendall τ of log parameters against TopoLip, per architecture with 3+ sizes),
        ``sw-accuracy`` (per architecture, the lowest and highest clean test accuracy of its
        sweep models, one value per checkpoint).
    """
    from topolip.evidence.stats import kendall_tau

    _params(params, ("sweep_perturbations", "n_points", "n_robust", "sweep_epochs"),
            "07_sweeps")
    table = _frames(tables, ("sweeps",))["sweeps"]
    kind = shown_kind(table, list(params["sweep_perturbations"]))
    shown = table[table["perturbation"] == kind]
    means = shown.groupby(["arch", "parameter", "value_numeric"], sort=False)[
        ["end_to_end_scale_free", "test_accuracy"]].mean()
    trends = []
    for (arch, param), part in means.groupby(level=[0, 1], sort=False):
        part = part.droplevel([0, 1]).sort_index()
        e2e = part["end_to_end_scale_free"]
        diffs = e2e.diff().dropna()
        trend = ("rises" if (diffs > 0).all() else "falls" if (diffs < 0).all()
                 else "is not monotone")
        trends.append(f"{roster.label(arch)} {param.replace('_', ' ')}: {trend} "
                      f"({e2e.iloc[0]:.2f} to {e2e.iloc[-1]:.2f})")
    f: dict[str, str] = {}
    f["sw-trends"] = glue_text("; ".join(trends), "{}")
    f["sw-kind"] = glue_text(roster.label(kind), "{}")
    f["sw-kinds"] = glue_text(" and ".join(roster.label(k)
                                           for k in params["sweep_perturbations"]), "{}")
    if "end_to_end_flag" in table:
        within = table["end_to_end_flag"].fillna("").astype(str).str.len() > 0
        share = within.groupby(table["perturbation"]).mean()
        f["sw-floor-shares"] = glue_text("; ".join(
            f"{roster.label(k)} {100 * share[k]:.0f}%" for k in params["sweep_perturbations"]
            if k in share), "{}")
    else:
        f["sw-floor-shares"] = glue_text("not measured", "{}")
    f["sw-n-points"] = glue_text(params["n_points"], "{}")
    f["sw-n-robust"] = glue_text(max(params["n_robust"], params["n_points"]), "{}")
    f["sw-n-models"] = glue_text(table["checkpoint"].nunique(), "{}")
    f["sw-epochs"] = glue_text(params["sweep_epochs"], "{}")
    span = shown.groupby("arch")["end_to_end_scale_free"].agg(lambda v: v.max() / v.min())
    f["sw-max-span-arch"] = glue_text(roster.label(span.idxmax()), "{}")
    f["sw-max-span"] = glue_text(float(span.max()), "{:.1f}")
    family = shown.groupby("arch")["end_to_end_scale_free"].agg(["min", "max", "median"])
    f["sw-ranges"] = glue_text("; ".join(f"{roster.label(a)} {r['min']:.2f}–{r['max']:.2f}"
                                         for a, r in family.iterrows()), "{}")
    f["sw-median-span"] = glue_text(float(family["median"].max() / family["median"].min()),
                                    "{:.1f}")
    size = shown.groupby(["arch", "parameters"])[
        ["end_to_end_scale_free", "accuracy_drop"]].mean()
    size_tau = {arch: kendall_tau(np.log(part.index.get_level_values("parameters")),
                                  part["end_to_end_scale_free"])
                for arch, part in size.groupby(level=0) if len(part) >= 3}
    f["sw-size-tau"] = glue_text("; ".join(f"{roster.label(a)} {v:+.2f}"
                                           for a, v in size_tau.items()) or "none", "{}")
    acc = (table.drop_duplicates("checkpoint").groupby("arch")["test_accuracy"]
           .agg(["min", "max"]))
    f["sw-accuracy"] = glue_text("; ".join(f"{roster.label(a)} {r['min']:.3f}–{r['max']:.3f}"
                                           for a, r in acc.iterrows()), "{}")
    return f


def radius_findings(tables: Tables, params: Mapping[str, Any]) -> dict[str, str]:
    """What ``04_robustness`` glues about the minimal radii, from ``radius_summary``,
    ``radius_check`` and ``robust_curve``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or a mapping with those three stems.
    params : mapping
        ``n_radius``, ``radius_eps_max``, ``radius_steps``, ``radius_check_images``,
        ``fab_steps`` (and ``apgd_steps``, ``apgd_target_classes``).

    Returns
    -------
    dict
        ``rd-n-images``, ``rd-eps-max``, ``rd-steps``, ``rd-width`` (the final bracket's
        relative width, percent), ``rd-check-images``, ``rd-fab-steps``; per bisected attack
        ``rd-autoattack-ranking`` / ``rd-pgd-ranking`` / ``rd-fgsm-ranking`` (geometric mean
        over seeds of each architecture's median radius, lowest first; "" for an attack not
        measured); ``rd-pgd-over-aa`` (PGD's median radius over APGD-CE + APGD-T's: geometric
        mean over the models, its range and count; "not measured" without both);
        ``rd-n-censored`` (per bisected rung, strongest first, the images not broken at
        ``eps_max``, all models), ``rd-n-rows`` (images × models of one rung); the cross-check
        ``rd-check-ratio`` (range over models of the median ratio bisection / FAB),
        ``rd-check-within`` (mean share within the band), ``rd-check-factor``,
        ``rd-check-only-fab`` (images FAB broke and the bisection did not); the grid
        ``rd-grid`` (its positive range), ``rd-n-grid``; ``rd-attacks`` (mean attack calls per
        model and attack); the effective-robustness fit (:func:`topolip.evidence.claims.
        effective_radius`, APGD-CE + APGD-T radii) ``rd-eff-slope`` (log radius per logit of
        clean accuracy; "no fit" under three models), ``rd-eff-n`` (models fitted),
        ``rd-eff-ranking`` (geometric mean over seeds of each architecture's effective
        radius, lowest first) and ``rd-acc-ranking`` (mean clean accuracy on the radius images).
    """
    from topolip.evidence.claims import effective_radius

    _params(params, ("n_radius", "radius_eps_max", "radius_steps", "radius_check_images",
                     "fab_steps"), "04_robustness")
    t = _frames(tables, ("radius_summary", "radius_check", "robust_curve"))
    rs, check, curve = t["radius_summary"], t["radius_check"], t["robust_curve"]
    f: dict[str, str] = {}
    f["rd-n-images"] = glue_text(params["n_radius"], "{}")
    f["rd-eps-max"] = glue_text(params["radius_eps_max"], "{:g}")
    f["rd-steps"] = glue_text(params["radius_steps"], "{}")
    f["rd-width"] = glue_text(100 * (4 ** (2.0 ** -int(params["radius_steps"])) - 1), "{:.1f}")
    f["rd-check-images"] = glue_text(params["radius_check_images"], "{}")
    f["rd-fab-steps"] = glue_text(params["fab_steps"], "{}")
    for method in roster.LADDER:  # the bisected attacks are the ladder's rungs
        part = rs[rs["method"] == method]
        gm = (part.assign(lr=part["log_median_radius"].astype(float))
              .groupby("arch", sort=False)["lr"].mean().map(np.exp))
        f[f"rd-{method}-ranking"] = glue_text(arch_ranking(gm, "{:.3f}", sep=" < "), "{}")
    per_model = rs.pivot_table(index=["arch", "seed"], columns="method",
                               values="log_median_radius", aggfunc="first")
    if {"pgd", "autoattack"} <= set(per_model.columns) \
            and (d := (per_model["pgd"] - per_model["autoattack"]).dropna()).size:
        f["rd-pgd-over-aa"] = glue_text(
            f"{math.exp(d.mean()):.2f} (per model {math.exp(d.min()):.2f} to "
            f"{math.exp(d.max()):.2f}, {d.size} models)", "{}")
    else:
        f["rd-pgd-over-aa"] = glue_text("not measured", "{}")
    per_rung = rs.groupby("method")[["n_censored", "n_images"]].sum()
    rungs = [m for m in roster.LADDER[::-1] if m in per_rung.index]  # strong to weak
    f["rd-n-censored"] = glue_text(", ".join(
        f"{roster.label(m)} {int(per_rung.loc[m, 'n_censored']):,}" for m in rungs) or "none",
        "{}")
    f["rd-n-rows"] = glue_text(int(per_rung["n_images"].max()) if rungs else 0, "{:,}")
    ratio = check["median_ratio"].astype(float)
    f["rd-check-ratio"] = glue_text(f"{ratio.min():.2f}–{ratio.max():.2f}"
                                    if ratio.notna().any() else "not measured", "{}")
    f["rd-check-within"] = glue_text(float(check["share_within"].astype(float).mean())
                                     if len(check) else float("nan"), "{:.0%}")
    f["rd-check-factor"] = glue_text(float(check["factor"].iloc[0]) if len(check) else 1.25,
                                     "{:g}")
    f["rd-check-only-fab"] = glue_text(int(check["n_only_fab"].sum()) if len(check) else 0,
                                       "{}")
    grid = sorted(float(e) for e in curve["eps"].unique() if float(e) > 0)
    f["rd-grid"] = glue_text(f"{grid[0]:.3g} to {grid[-1]:.3g}" if grid else "empty", "{}")
    f["rd-n-grid"] = glue_text(len(grid), "{}")
    f["rd-attacks"] = glue_text(float(rs["attacks"].astype(float).mean()), "{:.0f}")
    aa = rs[rs["method"] == "autoattack"]
    f["rd-acc-ranking"] = glue_text(arch_ranking(
        aa.groupby("arch", sort=False)["clean_accuracy"].mean(), "{:.3f}", sep=" < "), "{}")
    eff = effective_radius(rs)
    f["rd-eff-n"] = glue_text(len(eff), "{}")
    if len(eff):
        f["rd-eff-slope"] = glue_text(float(eff["slope"].iloc[0]), "{:+.2f}")
        gm = (eff.assign(le=np.log(eff["effective_radius"].astype(float)))
              .groupby("arch", sort=False)["le"].mean().map(np.exp))
        f["rd-eff-ranking"] = glue_text(arch_ranking(gm, "{:.2f}", sep=" < "), "{}")
    else:
        f["rd-eff-slope"] = glue_text("no fit (fewer than three models)", "{}")
        f["rd-eff-ranking"] = glue_text("no fit (fewer than three models)", "{}")
    return f


def _log_ratio(a: float, b: float) -> float:
    """log(a / b), NaN unless both are positive and finite (a radius of 0 or not found)."""
    ok = all(math.isfinite(v) and v > 0 for v in (a, b))
    return math.log(a / b) if ok else math.nan


def matched_findings(radius_summary: pd.DataFrame, radius_matched: pd.DataFrame
                     ) -> dict[str, str]:
    """What ``04_robustness`` glues about the accuracy-matched pair
    (:mod:`topolip.experiments.matched`), on the APGD-CE + APGD-T median radius.

    Parameters
    ----------
    radius_summary, radius_matched : pandas.DataFrame
        ``radius_summary.csv`` (every model at its chosen epoch) and ``radius_matched.csv``.

    Returns
    -------
    dict
        ``rd-matched-n`` (seeds matched), ``rd-matched-epochs`` (per seed, the model matched,
        its epoch and validation accuracy against the other's; "none" without rows),
        ``rd-matched-ratio`` and ``rd-chosen-ratio`` (geometric mean over the matched seeds of
        the attention model's median radius over the convolution model's, matched and at the
        chosen epochs; "not measured" without rows).

    A seed whose median radius is 0 or not found on either side is left out of the ratios.

    Examples
    --------
    >>> rs = pd.DataFrame({"arch": ["vit", "resnet"], "seed": 0, "method": "autoattack",
    ...                    "median_radius": [0.01, 0.04]})
    >>> m = pd.DataFrame({"arch": ["resnet"], "seed": [0], "method": ["autoattack"],
    ...                   "median_radius": [0.02], "epoch": [3], "val_accuracy": [0.95],
    ...                   "matched_to": ["vit"], "target_val_accuracy": [0.96]})
    >>> f = matched_findings(rs, m)
    >>> f["rd-matched-epochs"], f["rd-matched-ratio"], f["rd-chosen-ratio"]
    ('seed 0: the ResNet at epoch 3 (validation 0.950, the ViT 0.960)', '0.50', '0.25')
    """
    require_columns(radius_summary, ["arch", "seed", "method", "median_radius"],
                    "radius_summary")
    require_columns(radius_matched, ["arch", "seed", "method", "median_radius", "epoch",
                                     "val_accuracy", "matched_to", "target_val_accuracy"],
                    "radius_matched")
    m = radius_matched[radius_matched["method"] == "autoattack"]
    chosen = radius_summary[radius_summary["method"] == "autoattack"].set_index(
        ["arch", "seed"])["median_radius"].astype(float)
    attention = {a for a, _ in roster.family_pairs()}
    parts, matched, base = [], [], []
    for r in m.itertuples(index=False):
        seed, other = int(r.seed), (r.matched_to, int(r.seed))
        parts.append(f"seed {seed}: the {arch_label(r.arch)} at epoch {int(r.epoch)} "
                     f"(validation {float(r.val_accuracy):.3f}, the {arch_label(r.matched_to)} "
                     f"{float(r.target_val_accuracy):.3f})")
        if other not in chosen.index:
            continue
        mine, theirs = float(r.median_radius), float(chosen.loc[other])
        att_m, conv_m = (mine, theirs) if r.arch in attention else (theirs, mine)
        att_c, conv_c = (float(chosen.loc[(r.arch, seed)]), theirs) if r.arch in attention \
            else (theirs, float(chosen.loc[(r.arch, seed)]))
        matched.append(_log_ratio(att_m, conv_m))
        base.append(_log_ratio(att_c, conv_c))
    f = {"rd-matched-n": glue_text(len(m), "{}"),
         "rd-matched-epochs": glue_text("; ".join(parts) or "none", "{}")}
    ok = [(a, b) for a, b in zip(matched, base, strict=True) if math.isfinite(a + b)]
    f["rd-matched-ratio"] = glue_text(math.exp(np.mean([a for a, _ in ok])) if ok
                                      else "not measured", "{:.2f}" if ok else "{}")
    f["rd-chosen-ratio"] = glue_text(math.exp(np.mean([b for _, b in ok])) if ok
                                     else "not measured", "{:.2f}" if ok else "{}")
    return f


def learner_findings(population: pd.DataFrame, min_accuracy: float) -> dict[str, str]:
    """What ``09_measures`` glues about the models left out for not learning.

    Parameters
    ----------
    population : pandas.DataFrame
        ``measure_population.csv`` (:func:`topolip.evidence.measures.measure_population`):
        ``model``, ``arch``, ``axis``, ``value``, ``did_not_learn``, ``accuracy_clean``.
    min_accuracy : float
        The threshold the population was built with (clean accuracy in [0, 1]).

    Returns
    -------
    dict
        ``ms-min-accuracy`` and ``ms-not-learned``: "no model" or the count of distinct
        models with each one's architecture, swept parameter and clean accuracy.

    Examples
    --------
    >>> pop = pd.DataFrame({"model": ["a", "a", "b"], "arch": "conv_stack",
    ...                     "axis": ["num_layers", "num_layers", ""], "value": ["2", "2", ""],
    ...                     "did_not_learn": [True, True, False],
    ...                     "accuracy_clean": [0.373, 0.373, 0.9]})
    >>> learner_findings(pop, 0.5)["ms-not-learned"]
    '1 model (convolution stack, num_layers = 2: clean accuracy 0.373)'
    """
    require_columns(population, ["model", "arch", "axis", "value", "did_not_learn",
                                 "accuracy_clean"], "measure_population")
    bad = population[population["did_not_learn"].astype(bool)].drop_duplicates("model")
    parts = []
    for _, r in bad.iterrows():
        where = f", {r['axis']} = {r['value']}" if str(r["axis"]) not in ("", "nan") else ""
        parts.append(f"{arch_label(r['arch'])}{where}: clean accuracy "
                     f"{float(r['accuracy_clean']):.3f}")
    text = ("no model" if not parts else
            f"{len(parts)} model{'s' if len(parts) > 1 else ''} ({'; '.join(parts)})")
    return {"ms-min-accuracy": glue_text(float(min_accuracy), "{:g}"),
            "ms-not-learned": glue_text(text, "{}")}


def verdict_findings(tables: Tables, *, claims: Sequence, alpha: float, n_seeds: int,
                     power: pd.DataFrame | None = None) -> dict[str, str]:
    """What ``08_verdict`` glues, from ``verdicts``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"verdicts": ...}``.
    claims : sequence of topolip.evidence.claims.Claim
        The claims evaluated (``with_options(load_claims(...), alpha=alpha)``), in order.
    alpha : float
        The level of every test.
    n_seeds : int
        The seeds of the run (of ``topolip_summary``).
    power : pandas.DataFrame, optional
        ``topolip.evidence.calibration.power_table(verdicts, alpha=alpha)`` when already computed.

    Returns
    -------
    dict
        ``headline-n-seeds``, ``headline-n-families``, ``headline-n-primary``,
        ``headline-error-bound``, ``headline-alpha``, ``headline-n-comparisons``,
        ``headline-n-decisive``, ``headline-n-supported``, ``headline-n-contradicted``,
        ``headline-n-near``, ``headline-by-pair`` (the decisive tests per compared pair)
        (:func:`topolip.report.verdict_sentences.claim_findings` with the
        power table of :func:`topolip.evidence.calibration.power_table`); per claim
        ``headline-<id>`` (its counts, ``no test`` when none) and, for a claim with a primary
        row, ``primary-<id>`` and ``primary-row-<id>``; ``headline-envelope-ratio``;
        ``vd-floor-low`` and ``vd-floor-high`` (:data:`topolip.evidence.claims.ROBUST_FLOOR`).
    """
    from topolip.evidence.calibration import power_table
    from topolip.evidence.claims import ROBUST_FLOOR
    from topolip.report.verdict_sentences import claim_findings

    verdicts = _frames(tables, ("verdicts",))["verdicts"]
    if power is None:
        power = power_table(verdicts, alpha=alpha)
    found = claim_findings(verdicts, power, alpha=alpha)
    f: dict[str, str] = {}
    f["headline-n-seeds"] = glue_text(n_seeds, "{}")
    f["headline-n-families"] = glue_text(found["n_families"], "{}")
    f["headline-n-primary"] = glue_text(found["n_primary"], "{}")
    f["headline-error-bound"] = glue_text(found["error_bound"], "{:.2g}")
    f["headline-alpha"] = glue_text(alpha, "{:g}")
    f["headline-n-comparisons"] = glue_text(found["n_tests"], "{}")
    f["headline-n-decisive"] = glue_text(found["n_decisive"], "{}")
    f["headline-n-supported"] = glue_text(found["n_supported"], "{}")
    f["headline-n-contradicted"] = glue_text(found["n_contradicted"], "{}")
    f["headline-n-near"] = glue_text(found["n_near"], "{}")
    f["headline-by-pair"] = glue_text(found["by_pair"] or "none is decisive", "{}")
    f["vd-floor-low"] = glue_text(ROBUST_FLOOR[0], "{:g}")
    f["vd-floor-high"] = glue_text(ROBUST_FLOOR[1], "{:g}")
    for c in claims:
        f[f"headline-{c.id}"] = glue_text(found["counts"].get(c.id, "no test"), "{}")
        if c.id in found["primary"]:
            f[f"primary-{c.id}"] = glue_text(found["primary"][c.id], "{}")
            f[f"primary-row-{c.id}"] = glue_text(found["primary_rows"][c.id], "{}")
    env = verdicts[verdicts["claim"] == "envelope"]
    f["headline-envelope-ratio"] = glue_text(
        float(env["effect"].iloc[0]) if len(env) else float("nan"), "{:.2f}")
    return f


def measures_findings(tables: Tables, *, alpha: float) -> dict[str, str]:
    """What ``09_measures`` glues, from ``measure_study``.

    Parameters
    ----------
    tables : folder or mapping
        The tables folder, or ``{"measure_study": ...}``.
    alpha : float
        The level of every test.

    Returns
    -------
    dict
        From :func:`topolip.report.measure_sentences.study_findings`: ``ms-sentence``,
        ``ms-n-models``, ``ms-n-archs``, ``ms-n-seeds``, ``ms-n-kinds``, ``ms-n-excluded``,
        ``ms-n-permutations``, ``ms-min-p``, ``ms-ref-tau``, ``ms-ref-p``, ``ms-ref-pooled``,
        ``ms-ref-rank``, ``ms-top-measure``, ``ms-top-tau``, ``ms-ref-taus``,
        ``ms-n-comparisons``, ``ms-n-better``, ``ms-n-worse``, ``ms-n-undecided``,
        ``ms-n-untestable``, ``ms-better``, ``ms-worse``, ``ms-n-secondary``,
        ``ms-n-secondary-better``, ``ms-n-secondary-worse``, ``ms-n-significant``,
        ``ms-granulated``, ``ms-near``, ``ms-family-note``, ``ms-significance`` (``shows`` or
        ``does not show``).
    """
    from topolip.report.measure_sentences import study_findings

    study = _frames(tables, ("measure_study",))["measure_study"].copy()
    study["comparison"] = study["comparison"].astype(object).fillna("")  # "" read back as NaN
    m = study_findings(study, alpha=alpha, kind_label=roster.label)
    f: dict[str, str] = {}
    for key, name, fmt in (
        ("ms-sentence", "sentence", "{}"), ("ms-n-models", "n_models", "{}"),
        ("ms-n-archs", "n_archs", "{}"), ("ms-n-seeds", "n_seeds", "{}"),
        ("ms-n-kinds", "n_kinds", "{}"), ("ms-n-excluded", "n_excluded", "{}"),
        ("ms-n-permutations", "n_permutations", "{:,}"), ("ms-min-p", "min_p", "{:.3f}"),
        ("ms-ref-tau", "ref_tau", "{:+.2f}"), ("ms-ref-p", "ref_p", "{:.3f}"),
        ("ms-ref-pooled", "ref_tau_pooled", "{:+.2f}"), ("ms-ref-rank", "ref_rank", "{}"),
        ("ms-top-measure", "top_measure", "{}"), ("ms-top-tau", "top_tau", "{:+.2f}"),
        ("ms-ref-taus", "ref_taus_by_kind", "{}"),
        ("ms-n-comparisons", "n_comparisons", "{}"), ("ms-n-better", "n_better", "{}"),
        ("ms-n-worse", "n_worse", "{}"), ("ms-n-undecided", "n_undecided", "{}"),
        ("ms-n-untestable", "n_untestable", "{}"), ("ms-better", "better", "{}"),
        ("ms-worse", "worse", "{}"), ("ms-n-secondary", "n_secondary", "{}"),
        ("ms-n-secondary-better", "n_secondary_better", "{}"),
        ("ms-n-secondary-worse", "n_secondary_worse", "{}"),
        ("ms-n-significant", "n_significant_measures", "{}"),
        ("ms-granulated", "granulated", "{}"), ("ms-near", "near", "{}"),
        ("ms-family-note", "family_note", "{}"),
    ):
        f[key] = glue_text(m[name], fmt)
    f["ms-significance"] = glue_text("shows" if m["ref_significant"] else "does not show", "{}")
    return f


def primary_choices(claims) -> tuple[pd.DataFrame, dict[str, str]]:
    """How each claim's primary comparison was chosen, for ``08_verdict``.

    Parameters
    ----------
    claims : sequence of topolip.evidence.claims.Claim
        The registry (``data/claims.yml``); the envelope check (no primary) is left out.

    Returns
    -------
    (pandas.DataFrame, dict)
        One row per claim with a primary: ``claim``, ``primary`` (its comparison in words),
        ``rule`` (the words of ``primary_rule.rule``) and ``chosen`` (``primary_rule.chosen``);
        and the glue ``vd-primaries-after``: which primaries were fixed after a run that
        showed their outcome ("none" when every one was fixed before its first run).
    """
    from topolip.evidence.claims import PRIMARY_CHOSEN
    from topolip.report.format import comparison_label

    rows = [{"claim": c.id,
             "primary": comparison_label(c.primary["comparison"], c.primary["group"]),
             "rule": c.primary_rule["rule"], "chosen": c.primary_rule["chosen"]}
            for c in claims if c.primary]
    table = pd.DataFrame(rows, columns=["claim", "primary", "rule", "chosen"])
    after = table.loc[table["chosen"] == PRIMARY_CHOSEN[1], "claim"].tolist()
    n = len(table)
    text = (f"all {n} primaries were fixed before their first run" if not after else
            f"{n - len(after)} of the {n} primaries were fixed before their first run; "
            + ", ".join(f"that of \u201c{roster.claim_title(a)}\u201d" for a in after)
            + " was chosen after a run that showed its outcome, so its verdict is weaker "
            "evidence than a pre-registered one")
    return table, {"vd-primaries-after": text}
