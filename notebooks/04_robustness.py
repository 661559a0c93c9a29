# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Robustness, and whether smoothness goes with it
#
# **Question.** The paper argues that attention models are more robust than convolutional
# ones, as shown through adversarial tasks, and that their smoother transformations (lower
# TopoLip) are the reason. Two things are measured here on the models of {doc}`01_train`: how
# much accuracy each perturbation costs at increasing strength, and whether, within one kind of
# perturbation, the models with the lower TopoLip are those that lose less accuracy.
#
# **Method.** Accuracy is measured on each seed's batch of `n_robust` test images (the same
# images for every architecture of the seed) under FGSM and PGD at each $L_\infty$ budget
# $\varepsilon$ of `attack_eps` (pixel units of $[0, 1]$ images; $\varepsilon = 0$ is the
# clean batch) and under each common corruption at each severity. The link between smoothness
# and robustness is Kendall's $\tau$ between the end-to-end scale-free TopoLip and the accuracy
# drop over the trained models (architecture × seed), **within each perturbation kind**, with a
# permutation p-value (pairings shuffled), Holm's correction over the kinds, and the same with
# the clean accuracy partialled out and with the relative drop
# $(\text{clean} - \text{perturbed})/(\text{clean} - \text{chance})$; across kinds only a
# stratified test (pairings shuffled within each kind) pools them. Kinds are never pooled as if
# they were independent samples: their models are the same.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
n_robust = 500
attack_eps = [0.0, 0.05, 0.1, 0.2]
pgd_steps = 5
severities = [0, 1, 2, 3, 4, 5]
scheduler = "local"     # models measured on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

from topolip.claims import most_robust_vs_smoothest, smoothness_table
from topolip.corruptions import CORRUPTIONS
from topolip.data import load_dataset
from topolip.figures import plot_accuracy_curves, plot_topolip_vs_accuracy
from topolip.pipeline import notebook_parameters, publish_figure, read_table, write_table
from topolip.report import ARCH_LABELS, glue_number, kind_label, show_parameters, show_table
from topolip.robustness import robustness_curves_trained
from topolip.tasks import TaskRunner, map_models

params = notebook_parameters(globals(), "04_robustness")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
grid = {"fgsm": attack_eps, "pgd": attack_eps, **{kind: severities for kind in CORRUPTIONS}}


with TaskRunner(scheduler, n_workers=n_workers) as runner:
    curves = map_models(models, robustness_curves_trained, runner=runner, data=data,
                        strengths=grid, n_robust=n_robust, pgd_steps=pgd_steps)
_ = write_table(curves, tables / "robustness.csv", params)
summary = read_table(tables / "topolip_summary.csv")
smooth = smoothness_table(summary)
_ = write_table(smooth, tables / "smoothness.csv", params)

# %% tags=["remove-input"]
curves = read_table(tables / "robustness.csv")
smooth = read_table(tables / "smoothness.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
_ = publish_figure(plot_accuracy_curves(curves), "fig-robustness-curves", results_dir=results_dir,
                   notebook="04_robustness", tables=("robustness.csv",), params=params,
                   seeds=seeds)
_ = publish_figure(plot_topolip_vs_accuracy(summary), "fig-topolip-vs-drop",
                   results_dir=results_dir, notebook="04_robustness",
                   tables=("topolip_summary.csv",), params=params, seeds=seeds)
strongest = (curves[curves["perturbation"].isin(["fgsm", "pgd"])]
             .query("strength == strength.max()"))
acc = strongest.groupby(["perturbation", "arch"])["accuracy"].mean().unstack()
eps_max = float(strongest["strength"].max()) if len(strongest) else float("nan")
glue_number("rb-eps-max", eps_max, "{:g}")
for kind in ("fgsm", "pgd"):
    if kind in acc.index:
        row = acc.loc[kind].sort_values()
        glue_number(f"rb-{kind}-ranking", ", ".join(
            f"{ARCH_LABELS.get(a, a)} {v:.2f}" for a, v in row.items()), "{}")
    else:
        glue_number(f"rb-{kind}-ranking", "not measured", "{}")
within = smooth[(smooth["response"] == "accuracy_drop") & ~smooth["partial"]
                & (smooth["group"] != "stratified")]
n_pos = int((within["tau"] > 0).sum())
n_sig = int(((within["p_adjusted"] < 0.05) & (within["tau"] > 0)).sum())
n_neg_sig = int(((within["p_adjusted"] < 0.05) & (within["tau"] < 0)).sum())
strat = smooth[(smooth["group"] == "stratified") & (smooth["response"] == "accuracy_drop")]
glue_number("rb-n-kinds", len(within), "{}")
glue_number("rb-n-models", int(within["n"].max()) if len(within) else 0, "{}")
glue_number("rb-n-positive", n_pos, "{}")
glue_number("rb-n-significant", n_sig, "{}")
glue_number("rb-n-negative-significant", n_neg_sig, "{}")
glue_number("rb-tau-range", f"{within['tau'].min():.2f} to {within['tau'].max():.2f}"
            if within["tau"].notna().any() else "undefined", "{}")
glue_number("rb-strat-tau", float(strat["tau"].iloc[0]) if len(strat) else float("nan"), "{:.2f}")
glue_number("rb-strat-p", float(strat["pvalue"].iloc[0]) if len(strat) else float("nan"),
            "{:.2g}")
partial = smooth[(smooth["response"] == "accuracy_drop") & smooth["partial"]]
glue_number("rb-n-partial-significant",
            int(((partial["p_adjusted"] < 0.05) & (partial["tau"] > 0)).sum()), "{}")
agree = most_robust_vs_smoothest(summary)
glue_number("rb-agree", f"{int(agree['agree'].sum())} of {len(agree)}", "{}")
_ = glue_number("rb-n-seeds", len(seeds), "{}")

# %% [markdown]
# ## Accuracy against strength
#
# ```{glue:figure} fig-robustness-curves
# :name: fig-robustness-curves
# :alt: Accuracy against attack budget for FGSM and PGD and against severity for five corruptions, one panel per perturbation, one line per architecture.
#
# Accuracy on each seed's batch of test images against the $L_\infty$ budget $\varepsilon$
# (FGSM, PGD; pixel units) or the severity (corruptions). Lines: means over seeds; bands: one
# standard deviation over seeds. {glue:md}`fig-robustness-curves-provenance`
# ```
#
# At the largest budget, $\varepsilon =$ {glue:text}`rb-eps-max`, the mean accuracy under FGSM
# is {glue:text}`rb-fgsm-ranking`, and under PGD {glue:text}`rb-pgd-ranking`
# ({numref}`fig-robustness-curves`). Which family loses less, with intervals and a correction
# for the number of comparisons, is decided in {doc}`08_verdict`.
#
# ## Does a lower TopoLip go with a smaller accuracy drop?
#
# ```{glue:figure} fig-topolip-vs-drop
# :name: fig-topolip-vs-drop
# :alt: One scatter panel per perturbation kind: the end-to-end scale-free TopoLip of each trained model against its accuracy drop, with the within-kind Kendall tau in the panel title.
#
# End-to-end scale-free TopoLip $\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0$ (log axis) against
# the accuracy drop at the same perturbation, one point per trained model (architecture ×
# seed), one panel per kind; titles give Kendall's $\tau$ within the kind.
# {glue:md}`fig-topolip-vs-drop-provenance`
# ```
#
# Within a kind ({numref}`fig-topolip-vs-drop`), $\tau$ ranges from {glue:text}`rb-tau-range`
# over {glue:text}`rb-n-models` models; it is positive (a lower TopoLip with a smaller drop,
# the direction the paper's argument predicts) for {glue:text}`rb-n-positive` of
# {glue:text}`rb-n-kinds` kinds, and significantly so after Holm's correction for
# {glue:text}`rb-n-significant` (significantly negative: {glue:text}`rb-n-negative-significant`).
# Pooled across kinds by the stratified test, the mean within-kind $\tau$ is
# {glue:text}`rb-strat-tau` (permutation p = {glue:text}`rb-strat-p`). With the clean accuracy
# partialled out, {glue:text}`rb-n-partial-significant` kinds keep a significant positive
# association. The most robust architecture of a kind is also its smoothest in
# {glue:text}`rb-agree` kinds.

# %% tags=["remove-input"]
view = smooth.copy()
view["association"] = view["response"].str.replace("_", " ") + view["partial"].map(
    {True: " | clean accuracy", False: ""})
view["group"] = view["group"].map(kind_label)
show_table(view[["group", "association", "n", "tau", "pvalue", "p_adjusted"]],
           columns={"group": "perturbation", "association": "response (| partialled out)",
                    "n": "models", "tau": "Kendall τ", "pvalue": "permutation p",
                    "p_adjusted": "Holm-adjusted p"}, digits=2,
           caption="Kendall τ between end-to-end scale-free TopoLip and the accuracy drop over "
                   "the trained models, within each perturbation kind and stratified across "
                   "kinds.")

# %% [markdown]
# **Caveats.** There are only as many models per kind as architectures × seeds
# ({glue:text}`rb-n-seeds` seeds here), so a permutation test has little power and
# a rank correlation is dominated by the four architectures' differences. A positive $\tau$
# here is an association across architectures, not evidence that smoothing a given model would
# make it robust. The measure study ({doc}`09_measures`) asks whether TopoLip ranks models by
# robustness better than simpler measures do.
