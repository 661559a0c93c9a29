# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Robustness under attack and corruption, and TopoLip against the accuracy it costs
#
# The paper argues that attention models are more robust than convolutional ones, as shown
# "through adversarial tasks", and that their smoother transformations (lower TopoLip) are the
# reason. This notebook measures both sides on the models trained in the first notebook and puts
# them against each other:
#
# 1. **Accuracy against strength**, for every architecture and seed: FGSM and PGD (L∞ budget ε
#    in pixel units of images in [0, 1], ε = 0 being the clean images), and each common
#    corruption of `topolip.corruptions.CORRUPTIONS` at severities 0 (clean) to 5.
# 2. **TopoLip per layer** for every architecture and perturbation kind, at one strength per kind
#    (`topolip_strengths`), computed as in the TopoLip notebook (`topolip.experiments.measure_topolip`).
# 3. **TopoLip against robust accuracy**: does a lower model TopoLip go with a smaller accuracy
#    drop (clean minus perturbed accuracy, at the same strength)? A scatter over models, seeds and
#    perturbation kinds, with Spearman's rank correlation ρ (`scipy.stats.spearmanr`).
#
# Model TopoLip here is the per-layer geometric mean $(\Delta_L/\Delta_0)^{1/L}$ (the companion's
# formalization, see the method page), reported **raw** and **scale-free**. The scale-free one is
# the one our sentences use: raw TopoLip is dominated by each architecture's activation scale.
# Results are tidy tables under `results_dir/tables/` (`robustness.csv`: one row per model, seed,
# perturbation and strength; `robust_topolip.csv`: one row per model, seed, perturbation and
# layer); the figures are drawn from the tables as read back from disk.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
n_points = 200
degrees = [0, 1]
p = 1
q = float("inf")
n_perm = None
n_robust = 500
attack_eps = [0.0, 0.05, 0.1, 0.2]
pgd_steps = 5
severities = [0, 1, 2, 3, 4, 5]
topolip_strengths = {"fgsm": 0.05, "pgd": 0.05, "gaussian_noise": 3, "gaussian_blur": 3,
                     "contrast": 3, "rotation": 3, "elastic": 3}

# %%
from pathlib import Path

import pandas as pd

from topolip.corruptions import CORRUPTIONS
from topolip.data import load_dataset
from topolip.experiments import measure_topolip, model_summaries
from topolip.figures import (
    plot_accuracy_curves,
    plot_topolip_by_layer,
    plot_topolip_vs_accuracy,
    save_figure,
)
from topolip.metric import DistanceSpec
from topolip.pipeline import read_table, write_table
from topolip.robustness import rank_correlations, robustness_curves, topolip_vs_accuracy
from topolip.train import load_trained

tables = Path(results_dir) / "tables"
figures = Path(results_dir) / "figures"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
if not 1 <= n_robust <= len(data.y_test):
    raise ValueError(f"n_robust={n_robust} must be between 1 and n_test={len(data.y_test)}")
if not 2 <= n_points <= len(data.y_test):
    raise ValueError(f"n_points={n_points} must be between 2 and n_test={len(data.y_test)}")
grid = {"fgsm": attack_eps, "pgd": attack_eps, **{kind: severities for kind in CORRUPTIONS}}
off_grid = {k: s for k, s in topolip_strengths.items() if s not in grid.get(k, [])}
if off_grid:
    raise ValueError(f"topolip_strengths {off_grid} are not on the robustness grid {grid}: "
                     "the accuracy drop at a TopoLip strength must be measured")
x_rob, y_rob = data.x_test[:n_robust], data.y_test[:n_robust]
x, y = data.x_test[:n_points], data.y_test[:n_points]
spec = DistanceSpec(degrees=degrees, p=p, q=q)
print(f"accuracy on {n_robust} test images; TopoLip on {n_points} ({spec.label}); "
      f"PGD: {pgd_steps} steps of 2.5 ε / {pgd_steps}")

# %%
curve_parts, topo_parts = [], []
for row in models.itertuples():
    model = load_trained(row.checkpoint).model
    c = robustness_curves(model, x_rob, y_rob, grid, seed=row.seed, pgd_steps=pgd_steps)
    t = measure_topolip(model, x, y, topolip_strengths, spec, n_perm=n_perm, seed=row.seed)
    for part in (c, t):
        part.insert(0, "arch", row.arch)
        part.insert(1, "seed", row.seed)
    curve_parts.append(c)
    topo_parts.append(t)
    print(f"{row.arch} seed {row.seed}: done")

run_params = {"dataset": dataset, "n_robust": n_robust, "attack_eps": attack_eps,
              "pgd_steps": pgd_steps, "severities": severities, "n_points": n_points,
              "topolip_strengths": topolip_strengths, "degrees": degrees, "p": p, "q": q,
              "n_perm": n_perm}
_ = write_table(pd.concat(curve_parts, ignore_index=True), tables / "robustness.csv", run_params)
topo = pd.concat(topo_parts, ignore_index=True)
_ = write_table(topo, tables / "robust_topolip.csv", run_params)
_ = write_table(model_summaries(topo), tables / "robust_topolip_summary.csv", run_params)

# %% [markdown]
# ## Accuracy against ε and severity
#
# Read back from `tables/robustness.csv`. Lines are means over seeds, bands one standard
# deviation. PGD is the stronger attack for the same ε (several projected steps instead of one).

# %%
curves = read_table(tables / "robustness.csv")
fig = plot_accuracy_curves(curves)
_ = save_figure(fig, figures / "robustness_curves.png")

# %% [markdown]
# Mean ± standard deviation over seeds of the accuracy, per architecture (columns) and
# perturbation strength (rows).

# %%
acc = (curves.groupby(["perturbation", "strength", "arch"], sort=False)["accuracy"]
       .agg(["mean", "std"]))
acc_wide = (acc["mean"].map("{:.3f}".format) + " ± " + acc["std"].map("{:.3f}".format)).unstack()
acc_wide

# %% [markdown]
# Strength 0 is the clean test set itself: when `n_robust` equals `n_test` the accuracy there
# must be the clean test accuracy recorded at training time, exactly.

# %%
clean = curves[curves["strength"] == 0].merge(models[["arch", "seed", "test_accuracy"]],
                                              on=["arch", "seed"])
assert (clean["accuracy"] == clean["accuracy_clean"]).all()
if n_robust == len(data.y_test):
    assert (clean["accuracy"] - clean["test_accuracy"]).abs().max() < 1e-12
print(f"strength-0 accuracy checked on {len(clean)} (model, seed, kind) rows")

# %% [markdown]
# ## TopoLip per layer for every perturbation kind
#
# At the strengths of `topolip_strengths`; raw (left) and scale-free (right), mean over seeds.

# %%
topo = read_table(tables / "robust_topolip.csv")
fig = plot_topolip_by_layer(topo)
_ = save_figure(fig, figures / "robust_topolip_by_layer.png")

# %% [markdown]
# A corruption does not depend on the model: with the same seed, every architecture sees the
# same corrupted images, so the input-layer displacement $\Delta_0$ must agree across
# architectures (a check of the pipeline, not a finding).

# %%
inputs = topo[(topo["depth"] == 0) & topo["perturbation"].isin(CORRUPTIONS)]
spread = inputs.groupby(["perturbation", "seed"])["delta"].agg(lambda d: d.max() - d.min())
assert (spread <= 1e-9 * inputs["delta"].abs().max()).all(), spread
summary = read_table(tables / "robust_topolip_summary.csv")
(summary.groupby(["perturbation", "arch"], sort=False)[
    ["geometric_mean", "geometric_mean_scale_free"]].agg(["mean", "std"]).round(3))

# %% [markdown]
# ## TopoLip against the accuracy drop
#
# One point per model, seed and perturbation kind: model TopoLip (per-layer geometric mean) at
# the kind's strength against the accuracy drop at the same strength (on the `n_robust`
# images). Spearman's ρ > 0 means that a higher TopoLip goes with a larger drop, the direction
# the paper's argument predicts; pooled over kinds the correlation also reflects how hard each
# kind is, so the table gives it within each kind as well.

# %%
joined = topolip_vs_accuracy(summary, curves)
measures = ["geometric_mean", "geometric_mean_scale_free"]
corr = rank_correlations(joined, measures, "accuracy_drop", by="perturbation")
_ = write_table(joined, tables / "topolip_vs_accuracy.csv", run_params)
_ = write_table(corr, tables / "topolip_accuracy_correlations.csv", run_params)
joined = read_table(tables / "topolip_vs_accuracy.csv")
corr = read_table(tables / "topolip_accuracy_correlations.csv")
fig = plot_topolip_vs_accuracy(joined)
_ = save_figure(fig, figures / "topolip_vs_accuracy.png")

# %%
corr.pivot(index="group", columns="measure", values=["rho", "pvalue", "n"]).round(3)

# %% [markdown]
# ## What this run shows
#
# The sentences below are computed from the tables above, not written by hand, whatever the
# paper claims. The pooled correlation is recomputed from the saved scatter table and must match
# the one in the correlation table.

# %%
import numpy as np
from scipy.stats import spearmanr

pooled = corr[corr["group"] == "all"].set_index("measure")
for m in measures:
    ok = joined[m].notna()
    rho = (spearmanr(joined.loc[ok, m], joined.loc[ok, "accuracy_drop"]).statistic
           if ok.sum() >= 3 else np.nan)
    np.testing.assert_allclose(rho, pooled.loc[m, "rho"], rtol=1e-9)
sf, raw = pooled.loc["geometric_mean_scale_free"], pooled.loc["geometric_mean"]
if np.isfinite(sf["rho"]):
    direction = "a larger" if sf["rho"] > 0 else "a smaller" if sf["rho"] < 0 else "no"
    print(f"Scale-free model TopoLip against accuracy drop, pooled over {int(sf['n'])} (model, "
          f"seed, kind) points: Spearman rho = {sf['rho']:.2f} (p = {sf['pvalue']:.2g}); a "
          f"higher TopoLip goes with {direction} drop. Raw TopoLip: rho = {raw['rho']:.2f} "
          f"(p = {raw['pvalue']:.2g}).")
else:
    print(f"The pooled rank correlation is undefined in this run ({int(sf['n'])} points, or a "
          "constant column).")
within = corr[(corr["group"] != "all") & (corr["measure"] == "geometric_mean_scale_free")]
positive = within[within["rho"] > 0]
print(f"Within a kind (n = {int(within['n'].max())} each), the scale-free rho is positive for "
      f"{len(positive)} of {within['rho'].notna().sum()} kinds "
      f"(range {within['rho'].min():.2f} to {within['rho'].max():.2f}).")

drop = joined.groupby(["perturbation", "arch"], sort=False)["accuracy_drop"].mean().unstack()
gm = joined.groupby(["perturbation", "arch"], sort=False)[
    "geometric_mean_scale_free"].mean().unstack()
agree = 0
for kind in drop.index:
    robust, smooth = drop.loc[kind].idxmin(), gm.loc[kind].idxmin()
    agree += robust == smooth
    print(f"{kind} (strength {topolip_strengths[kind]:g}): smallest accuracy drop for {robust} "
          f"({drop.loc[kind, robust]:.3f}); lowest scale-free TopoLip for {smooth} "
          f"({gm.loc[kind, smooth]:.3f})")
print(f"The most robust architecture is also the smoothest in {agree} of {len(drop)} kinds.")
for a, b in (("vit", "resnet"), ("attention_stack", "conv_stack")):
    if a in drop.columns and b in drop.columns:
        smaller = int((drop[a] < drop[b]).sum())
        print(f"{a} loses less accuracy than {b} in {smaller} of {len(drop)} kinds, and has the "
              f"lower scale-free TopoLip in {int((gm[a] < gm[b]).sum())} of {len(gm)}.")
