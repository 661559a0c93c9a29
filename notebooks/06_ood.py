# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip under distribution shift
#
# The paper claims attention models handle out-of-distribution data better. Here the
# "perturbed" batch is not a perturbation of the clean one but another data set: for every
# trained model we compare, layer by layer, the point cloud of a clean test batch with the cloud
# of an out-of-distribution (OOD) batch. The samples are not paired, so the topological
# displacement $\Delta_\ell = W_{p,q}(\mathrm{Dgm}(H_\ell X), \mathrm{Dgm}(H_\ell X'))$ is
# defined but no certified envelope is (`topolip_table(..., paired=False)`: `eps`,
# `bottleneck` and `envelope` are empty); $\mathrm{TopoLip}_\ell = \Delta_\ell/\Delta_{\ell-1}$
# says whether a layer widens (> 1) or narrows (< 1) the topological gap between the two data
# sets. A layer that narrows it maps OOD data onto in-distribution-like features, which is not
# obviously a virtue, so we also report what the models *do* on OOD data: their max-softmax
# confidence, their accuracy where the OOD images carry the model's classes, and how well the
# confidence separates in- from out-of-distribution images (AUROC; Hendrycks and Gimpel 2017).
#
# The OOD sets (`topolip.data.OOD_SETS`) need no network: scikit-learn's 8×8 digits resized to
# full frame (a near shift), colour-inverted MNIST digits, and crops of scikit-learn's two sample
# photographs (a far shift, no class). For a CIFAR-10 model the digit sets carry no CIFAR class,
# so no accuracy is reported for them.

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
ood_sets = ["digits", "inverted_mnist", "photo_patches"]
n_ood = 1000

# %%
from pathlib import Path

import pandas as pd

from topolip.data import OOD_SETS, load_dataset
from topolip.experiments import measure_ood, model_summaries
from topolip.figures import plot_ood_behaviour, plot_topolip_by_layer, save_figure
from topolip.metric import DistanceSpec
from topolip.pipeline import read_table, write_table
from topolip.robustness import load_ood_batches, ood_behaviour
from topolip.train import load_trained

tables = Path(results_dir) / "tables"
figures = Path(results_dir) / "figures"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
if not 2 <= n_points <= min(len(data.y_test), n_ood):
    raise ValueError(f"n_points={n_points} must be between 2 and min(n_test, n_ood)")
ood = load_ood_batches(ood_sets, data, n=n_ood, seed=split_seed)
x = data.x_test[:n_points]
spec = DistanceSpec(degrees=degrees, p=p, q=q)
for name in ood_sets:
    print(f"{name}: {OOD_SETS[name]}")
print(f"TopoLip: {n_points} clean test images against {n_points} images of each set "
      f"({spec.label}); behaviour: {len(data.y_test)} test images and {n_ood} per set")

# %%
topo_parts, behaviour_parts = [], []
for row in models.itertuples():
    model = load_trained(row.checkpoint).model
    t = measure_ood(model, x, {name: xo[:n_points] for name, (xo, _) in ood.items()}, spec,
                    n_perm=n_perm)
    b = ood_behaviour(model, data.x_test, data.y_test, ood)
    for part in (t, b):
        part.insert(0, "arch", row.arch)
        part.insert(1, "seed", row.seed)
    topo_parts.append(t)
    behaviour_parts.append(b)
    print(f"{row.arch} seed {row.seed}: done")

run_params = {"dataset": dataset, "ood_sets": ood_sets, "n_ood": n_ood, "n_points": n_points,
              "degrees": degrees, "p": p, "q": q, "n_perm": n_perm, "draw_seed": split_seed}
topo = pd.concat(topo_parts, ignore_index=True)
_ = write_table(topo, tables / "ood_topolip.csv", run_params)
_ = write_table(model_summaries(topo, by=("arch", "seed", "ood_set")),
                tables / "ood_topolip_summary.csv", run_params)
_ = write_table(pd.concat(behaviour_parts, ignore_index=True), tables / "ood_behaviour.csv",
                run_params)

# %% [markdown]
# ## TopoLip per layer, clean against out-of-distribution
#
# Read back from `tables/ood_topolip.csv`; raw (left) and scale-free (right), mean over seeds,
# bands one standard deviation.

# %%
topo = read_table(tables / "ood_topolip.csv")
fig = plot_topolip_by_layer(topo, row="ood_set")
_ = save_figure(fig, figures / "ood_topolip_by_layer.png")

# %% [markdown]
# Every model sees the same clean and OOD images, so the input-layer displacement $\Delta_0$
# must be the same for all of them (a check of the pipeline); the unpaired rows carry no
# envelope.

# %%
inputs = topo[topo["depth"] == 0]
spread = inputs.groupby("ood_set")["delta"].agg(lambda d: d.max() - d.min())
assert (spread <= 1e-9 * inputs["delta"].abs().max()).all(), spread
assert topo[["eps", "bottleneck", "envelope"]].isna().all().all()
assert topo["delta"].notna().all()
inputs.groupby("ood_set")["delta"].first().rename("Δ_0 (input, pixel units)").round(3)

# %% [markdown]
# Model TopoLip under shift: the per-layer geometric mean $(\Delta_L/\Delta_0)^{1/L}$, mean and
# standard deviation over seeds.

# %%
summary = read_table(tables / "ood_topolip_summary.csv")
(summary.groupby(["ood_set", "arch"], sort=False)[
    ["geometric_mean", "geometric_mean_scale_free"]].agg(["mean", "std"]).round(3))

# %% [markdown]
# ## What the models do on out-of-distribution data
#
# Mean max-softmax confidence on each data set, accuracy where the OOD images carry the model's
# classes, and the AUROC of confidence for telling the test set from each OOD set (0.5: the
# model is as confident on OOD images as on its own test images).

# %%
behaviour = read_table(tables / "ood_behaviour.csv")
own = behaviour[behaviour["dataset"] == "in_distribution"].merge(models, on=["arch", "seed"])
assert (own["accuracy"] - own["test_accuracy"]).abs().max() < 1e-12, "same test set as training"
fig = plot_ood_behaviour(behaviour)
_ = save_figure(fig, figures / "ood_behaviour.png")

# %%
(behaviour.groupby(["dataset", "arch"], sort=False)[["mean_confidence", "accuracy", "auroc"]]
 .agg(["mean", "std"]).round(3))

# %% [markdown]
# ## What this run shows
#
# Computed from the tables above (scale-free TopoLip, means over seeds), whatever the paper
# claims.

# %%
gm = summary.groupby(["ood_set", "arch"])["geometric_mean_scale_free"].mean().unstack()
beh = behaviour.groupby(["dataset", "arch"])[["mean_confidence", "accuracy", "auroc"]].mean()
for name in ood_sets:
    row = gm.loc[name]
    auroc = beh.loc[name, "auroc"]
    conf = beh.loc[name, "mean_confidence"]
    print(f"{name}: lowest scale-free TopoLip for {row.idxmin()} ({row.min():.3f}), highest for "
          f"{row.idxmax()} ({row.max():.3f}); best separated from the test set by confidence: "
          f"{auroc.idxmax()} (AUROC {auroc.max():.3f}), worst: {auroc.idxmin()} "
          f"({auroc.min():.3f}); mean confidence on it {conf.min():.2f} to {conf.max():.2f}.")
    acc = beh.loc[name, "accuracy"].dropna()
    if len(acc):
        print(f"  accuracy on {name} (same classes): {acc.idxmax()} {acc.max():.3f} best, "
              f"{acc.idxmin()} {acc.min():.3f} worst.")
inverted = beh["auroc"].dropna()
below = inverted[inverted < 0.5]
print(f"Confidence below chance as an OOD detector (AUROC < 0.5: more confident on the OOD set "
      f"than on its own test images) in {len(below)} of {len(inverted)} (set, architecture) "
      "pairs" + (": " + ", ".join(f"{a} on {d} ({v:.3f})" for (d, a), v in below.items())
                 if len(below) else "") + ".")
order = gm.mean().sort_values()
print("Scale-free TopoLip under shift, averaged over the OOD sets, from lowest to highest: "
      + ", ".join(f"{a} {v:.3f}" for a, v in order.items()) + ".")
