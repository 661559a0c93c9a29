# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip against model parameters
#
# Is TopoLip a property of the mechanism (attention against convolution) or of the model's size
# and shape? This notebook varies one parameter at a time around a small base model of each
# family and measures, for every sweep point, the clean test accuracy and the model TopoLip for
# one perturbation (`sweep_perturbation`):
#
# - ViT (`torchvision.models.VisionTransformer`): depth (`num_layers`), width (`hidden_dim`),
#   attention heads (`num_heads`) and patch size;
# - ResNet (`torchvision.models.resnet.ResNet` with `BasicBlock`): width, kernel size of the stem
#   (`stem_kernel`) and blocks per stage;
# - the plain attention-only and convolution-only stacks: depth.
#
# Each point is a model trained with `topolip.train.fit` for `sweep_epochs` epochs (fewer than
# the main models, so the sweep fits the profile's time), on a checkpoint named by everything
# that determines it: a re-run of this notebook trains nothing that is already trained. Model
# TopoLip is the per-layer geometric mean $(\Delta_L/\Delta_0)^{1/L}$, raw and scale-free (a
# depth sweep changes $L$, and the geometric mean is per layer); `tables/sweeps.csv` also holds
# the end-to-end ratio $\Delta_L/\Delta_0$ and the largest layer ratio.

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
batch_size = 128
lr = 0.002
weight_decay = 0.0001
sweep_epochs = 6
sweep_seeds = [0]
sweep_perturbation = {"fgsm": 0.1}
sweeps = {
    "vit": {"base": {"patch_size": 7, "num_layers": 2, "num_heads": 2, "hidden_dim": 32,
                     "mlp_dim": 64},
            "grid": {"num_layers": [1, 2, 4], "hidden_dim": [16, 32, 64],
                     "num_heads": [1, 2, 4], "patch_size": [4, 7, 14]}},
    "resnet": {"base": {"width": 8, "blocks": [1, 1, 1, 1], "stem_kernel": 3},
               "grid": {"width": [4, 8, 16], "stem_kernel": [3, 5, 7],
                        "blocks": [[1, 1, 1, 1], [2, 2, 2, 2]]}},
    "attention_stack": {"base": {"patch_size": 7, "num_layers": 2, "num_heads": 2,
                                 "hidden_dim": 32},
                        "grid": {"num_layers": [1, 2, 4]}},
    "conv_stack": {"base": {"num_layers": 4, "channels": 16, "kernel_size": 3},
                   "grid": {"num_layers": [2, 4, 6]}},
}

# %%
from pathlib import Path

import pandas as pd

from topolip.data import load_dataset
from topolip.figures import plot_sweep, save_figure
from topolip.metric import DistanceSpec
from topolip.pipeline import read_table, write_table
from topolip.sweeps import run_sweep
from topolip.train import TrainConfig, default_device

tables = Path(results_dir) / "tables"
figures = Path(results_dir) / "figures"
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
if not 2 <= n_points <= len(data.y_test):
    raise ValueError(f"n_points={n_points} must be between 2 and n_test={len(data.y_test)}")
x, y = data.x_test[:n_points], data.y_test[:n_points]
spec = DistanceSpec(degrees=degrees, p=p, q=q)
config = TrainConfig(epochs=sweep_epochs, batch_size=batch_size, lr=lr,
                     weight_decay=weight_decay)
device = default_device()
print(f"training: {sweep_epochs} epochs on {n_train} images, seeds {sweep_seeds}, {device}; "
      f"TopoLip: {sweep_perturbation} on {n_points} test images ({spec.label})")

# %%
parts = []
for arch, sweep in sweeps.items():
    t = run_sweep(arch, sweep["base"], sweep["grid"], data, config, results_dir=results_dir,
                  x=x, y=y, perturbation=sweep_perturbation, spec=spec, n_perm=n_perm,
                  seeds=sweep_seeds, device=device)
    trained = int((t["resumed_from_epoch"] < sweep_epochs).sum())
    print(f"{arch}: {len(t)} sweep points, {t['checkpoint'].nunique()} distinct models, "
          f"{trained} trained in this run")
    parts.append(t)

table = pd.concat(parts, ignore_index=True).drop(columns=["resumed_from_epoch"])
_ = write_table(table, tables / "sweeps.csv",
                {"dataset": dataset, "n_train": n_train, "n_test": n_test, "sweeps": sweeps,
                 "sweep_epochs": sweep_epochs, "sweep_seeds": sweep_seeds,
                 "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay,
                 "sweep_perturbation": sweep_perturbation, "n_points": n_points,
                 "degrees": degrees, "p": p, "q": q, "n_perm": n_perm})

# %% [markdown]
# ## The sweeps
#
# Read back from `tables/sweeps.csv`. One figure per family, one row per swept parameter: raw
# TopoLip, scale-free TopoLip (log scale, dashed line at 1) and clean test accuracy, against the
# parameter's value (the other parameters at the base). With several seeds, lines are means and
# bands one standard deviation.

# %%
table = read_table(tables / "sweeps.csv")
for arch in sweeps:
    fig = plot_sweep(table, arch)
    save_figure(fig, figures / f"sweep_{arch}.png")

# %%
(table.groupby(["arch", "parameter", "value"], sort=False)[
    ["parameters", "test_accuracy", "geometric_mean", "geometric_mean_scale_free",
     "end_to_end_scale_free"]].mean().round(3))

# %% [markdown]
# ## What this run shows
#
# For each sweep, computed from the table above (means over seeds): the scale-free TopoLip and
# the clean accuracy from the smallest to the largest value of the parameter, and whether the
# scale-free TopoLip changes monotonically along the sweep. A sweep of two or three short
# training runs shows a trend in this run, not a law.

# %%
means = table.groupby(["arch", "parameter", "value_numeric"], sort=False)[
    ["geometric_mean_scale_free", "test_accuracy"]].mean()
for (arch, param), part in means.groupby(level=[0, 1], sort=False):
    part = part.droplevel([0, 1]).sort_index()
    gm, acc = part["geometric_mean_scale_free"], part["test_accuracy"]
    diffs = gm.diff().dropna()
    trend = ("rises" if (diffs > 0).all() else "falls" if (diffs < 0).all() else "is not monotone")
    values = ", ".join(f"{v:g}" for v in part.index)
    print(f"{arch} {param} ({values}): scale-free TopoLip {trend}, {gm.iloc[0]:.3f} to "
          f"{gm.iloc[-1]:.3f}; clean accuracy {acc.iloc[0]:.3f} to {acc.iloc[-1]:.3f}.")
