# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip per layer
#
# For every trained model we take a clean batch $X$ of test images, perturb it, and follow both
# batches through the network. At each probe point $\ell$ (the input, then each block) the
# flattened activations form two point clouds $H_\ell(X)$ and $H_\ell(\tilde X)$; their
# Vietoris–Rips persistence diagrams (ripser) are compared with the diagram distance
# $W_{p,q}$, giving the topological displacement $\Delta_\ell$, and
# $\mathrm{TopoLip}_\ell = \Delta_\ell / \Delta_{\ell-1}$ (the companion's formalization; see the
# method page). Every layer is also checked against the certified envelope
# $W_{\infty,\infty} \le 2\varepsilon_\ell$, $\varepsilon_\ell = \max_i \|h_\ell(x_i) - h_\ell(\tilde x_i)\|$;
# a violation would stop this notebook.
#
# The results go to one tidy table, `tables/topolip.csv` (one row per model, seed,
# perturbation and layer), which the next notebooks read.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
n_points = 200
perturbations = {"fgsm": 0.1, "gaussian_noise": 3}
degrees = [0, 1]
p = 1
q = float("inf")
n_perm = None

# %%
from pathlib import Path

from topolip.data import load_dataset
from topolip.experiments import measure_topolip, model_summaries
from topolip.metric import DistanceSpec
from topolip.pipeline import read_table, write_table
from topolip.train import load_trained

tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
if not 2 <= n_points <= len(data.y_test):
    raise ValueError(f"n_points={n_points} must be between 2 and n_test={len(data.y_test)}")
x, y = data.x_test[:n_points], data.y_test[:n_points]
spec = DistanceSpec(degrees=degrees, p=p, q=q)
print(f"clean batch: {n_points} test images; distance: {spec.label}; subsample: {n_perm}")

# %%
parts = []
for row in models.itertuples():
    trained = load_trained(row.checkpoint)
    t = measure_topolip(trained.model, x, y, perturbations, spec, n_perm=n_perm, seed=row.seed)
    t.insert(0, "arch", row.arch)
    t.insert(1, "seed", row.seed)
    parts.append(t)
    print(f"{row.arch} seed {row.seed}: done")

import pandas as pd

table = pd.concat(parts, ignore_index=True)
run_params = {"dataset": dataset, "n_train": n_train, "n_test": n_test,
              "split_seed": split_seed, "n_points": n_points, "perturbations": perturbations,
              "degrees": degrees, "p": p, "q": q, "n_perm": n_perm}
_ = write_table(table, tables / "topolip.csv", run_params)
summaries = model_summaries(table)
_ = write_table(summaries, tables / "topolip_summary.csv", run_params)

# %% [markdown]
# ## Per-layer values
#
# Mean over seeds. `delta` is $\Delta_\ell$ in activation units; `topolip` its ratio to the
# previous layer's; the `_scale_free` columns divide both clouds by the median pairwise distance
# of the clean cloud first. `eps` is $\varepsilon_\ell$ and `envelope` the certified bound
# $2\varepsilon_\ell$ on the bottleneck displacement `bottleneck`.

# %%
cols = ["delta", "delta_scale_free", "topolip", "topolip_scale_free", "eps", "bottleneck",
        "envelope"]
(table.groupby(["arch", "perturbation", "depth", "layer"], sort=False)[cols].mean()
 .style.format("{:.3g}"))

# %% [markdown]
# ## Model TopoLip
#
# The ratios telescope: $\prod_\ell \mathrm{TopoLip}_\ell = \Delta_L / \Delta_0$. Per model and
# perturbation: the end-to-end ratio, its per-layer geometric mean and the largest layer ratio.

# %%
summaries.round(4)

# %%
table.groupby(["arch", "perturbation"])[["accuracy_clean", "accuracy_perturbed"]].mean().round(3)
