# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Bounds against measurement
#
# **Question.** How close do the Lipschitz bounds of {doc}`00_theory` come to what the trained
# models actually do to a perturbation, layer by layer?
#
# **Method.** The bounds are applied to every trained model, from its weights and the observed
# activations (token radius $R$, token count $n$, smallest LayerNorm input deviation). What a
# bound $L_\ell \ge \mathrm{Lip}(f_\ell)$ limits is the growth of the bottleneck displacement
# relative to the largest paired displacement at the layer before
# ({ref}`the method page <bound-per-layer>`):
#
# $$ \frac{W_{\infty,\infty,\ell}}{\varepsilon_{\ell-1}} \;\le\; 2\,L_\ell .$$
#
# It is not a bound on TopoLip $\Delta_\ell/\Delta_{\ell-1}$. So the figure puts $2L_\ell$
# next to the measured ratio $W_{\infty,\infty,\ell}/\varepsilon_{\ell-1}$, both read from the
# TopoLip tables (columns `bottleneck` and `eps`) and recomputed here on the same perturbations.
# $L_\ell$ is taken with margin $\varepsilon_{\ell-1}$, which makes it valid on every segment
# from a clean input to its perturbed version, so the step
# $\varepsilon_\ell \le L_\ell\varepsilon_{\ell-1}$ is certified (and checked). With margin 0
# the LayerNorm and attention values are *pointwise Jacobian bounds* at the clean activations,
# which certify nothing about a perturbation; they are used here only to measure how loose each
# bound is against its estimate. The chained bound $2\prod_{j\le\ell}L_j\,\varepsilon_0$ of this
# chapter takes each factor with the measured margin $\varepsilon_{j-1}$: it is a certified
# chain given those measurements, not an a-priori bound (an a-priori chain would take the
# margins $(\prod_{i<j}L_i)\,\varepsilon_0$ from the chain itself).

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
n_points = 200
n_robust = 500
topolip_strengths = {"fgsm": 0.1, "pgd": 0.1, "gaussian_noise": 3, "gaussian_blur": 3,
                     "contrast": 3, "rotation": 3, "elastic": 3}
ladder_pgd_steps = 20    # PGD is the attack ladder's (04): steps, step size 2.5 eps / steps
ladder_pgd_restarts = 2  # and random restarts (per-image worst case)
bound_kinds = ["fgsm", "gaussian_noise"]   # perturbations whose certified chain is checked
estimate_samples = 4     # clean images at which each segment's Jacobian norm is estimated
estimate_n_iter = 15     # power iterations of the estimate
scheduler = "local"     # models measured on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

from topolip.evidence.bound_tables import bound_looseness
from topolip.experiments.model_measurement import measure_bounds_trained
from topolip.experiments.per_model import map_models
from topolip.nets.data import load_dataset
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import bounds_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.tasks import TaskRunner

params = notebook_parameters(globals(), "05_bounds_vs_measured")
tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
measured = read_table(tables / "topolip.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
missing = (set(zip(models["arch"], models["seed"], strict=True))
           - set(zip(measured["arch"], measured["seed"], strict=True)))
if missing:
    raise ValueError(f"tables/topolip.csv has no rows for the trained models {sorted(missing)}: "
                     "rerun notebook 02_topolip with the same parameters")
paired_kinds = [k for k in bound_kinds if k in set(measured["perturbation"])]
show_parameters(params)

# %% tags=["hide-input"]
# For each trained model: the bound and the estimate of every segment at the clean batch
# (margin 0), then, per perturbation (recreated as the TopoLip notebook made it: the same seed
# batch, kind, strength and seed), the bounds with margin eps_{l-1} and the chain
# (topolip.experiments.model_measurement.measure_bounds, which raises if an estimate exceeds its bound or a
# measured eps_l exceeds L_l eps_{l-1}). bounds_vs_measured joins the chains with the TopoLip
# table and checks the stability theorem on every row.
with TaskRunner(scheduler, n_workers=n_workers) as runner:
    bounds = map_models(models, measure_bounds_trained, runner=runner, data=data,
                        perturbations={k: topolip_strengths[k] for k in paired_kinds},
                        n_points=n_points, n_robust=n_robust, pgd_steps=ladder_pgd_steps,
                        pgd_restarts=ladder_pgd_restarts,
                        estimate_samples=estimate_samples, estimate_n_iter=estimate_n_iter)
_ = write_table(bounds, tables / "bounds.csv", params)

# drawn from the saved tables, as `topolip figure fig-bounds-vs-measured` redraws it
_ = publish_registered("fig-bounds-vs-measured", results_dir=results_dir, params=params,
                       seeds=sorted(models["seed"].unique()))
# the numbers from the bounds in hand joined with the measured table (which raises if the
# stability theorem fails on a row)
_ = glue_all(bounds_findings({"bounds": bounds, "topolip": measured}, params,
                             data_name=data.name))

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-bounds-vs-measured
# :name: fig-bounds-vs-measured
# :alt: For each architecture, one colour per perturbation, left: the bound two times L per layer as a solid line above the dashed measured ratio of bottleneck displacement to the previous layer's largest displacement; right: the measured bottleneck displacement, the envelope two epsilon and the chained bound per layer, log axes.
#
# One colour per perturbation. Left: the bound $2L_\ell$ (solid, at the perturbation's own
# margin $\varepsilon_{\ell-1}$) and the measured ratio
# $W_{\infty,\infty,\ell}/\varepsilon_{\ell-1}$ (dashed) at each probe point. Right: the
# measured bottleneck displacement $W_{\infty,\infty,\ell}$ (solid), the measured envelope
# $2\varepsilon_\ell$ (dashed) and the chained bound $2\prod_{j\le\ell}L_j\varepsilon_0$ with
# measured margins (dotted). Means over seeds; log
# axes. Data: {glue:text}`bounds-data`. {glue:md}`fig-bounds-vs-measured-provenance`
# ```
#
# {numref}`fig-bounds-vs-measured` shows that on every one of the
# {glue:text}`bounds-n-layers` probed layers (all models, seeds and perturbations) the measured
# growth stays under its bound, as the stability theorem requires (the checks above stop the
# book otherwise). The bound exceeds the measurement by a factor between
# {glue:text}`bounds-min-slack` and {glue:text}`bounds-max-slack` (median
# {glue:text}`bounds-median-slack`). Compounded over the depth, the chained bound is loosest for
# the {glue:text}`bounds-chain-loosest-arch` (the chained factor $\prod_\ell L_\ell$ exceeds the
# measured growth $\varepsilon_L/\varepsilon_0$ by {glue:text}`bounds-chain-loosest`) and
# tightest for the {glue:text}`bounds-chain-tightest-arch` ({glue:text}`bounds-chain-tightest`).
#
# ## How loose is each bound?
#
# The largest and median ratio bound / estimate per kind of segment over the trained models
# (1: tight), at the clean activations (margin 0, so for LayerNorm and attention these are
# pointwise Jacobian bounds). The estimate is the largest Jacobian norm at
# {glue:text}`bounds-estimate-samples` clean test images ({glue:text}`bounds-estimate-iter` power
# iterations), a lower bound on the local constant, so a ratio mixes the looseness of the
# bound with the gap between the worst case and the inputs seen.

# %% tags=["remove-input"]
looseness = bound_looseness(bounds)
_ = write_table(looseness, tables / "bound_looseness.csv")
show_table(looseness, columns={"segment": "segment", "archs": "architectures",
                               "layers": "layers", "max_ratio": "largest bound / estimate",
                               "median_ratio": "median bound / estimate",
                               "max_bound": "largest bound"},
           caption="Looseness of each kind of bound (margin 0).")

# %% [markdown]
# The loosest kind of segment is {glue:text}`bounds-loosest-segment` (bound / estimate up to
# {glue:text}`bounds-loosest-ratio`), the tightest {glue:text}`bounds-tightest-segment`
# ({glue:text}`bounds-tightest-ratio`).
#
# **Caveats.** For the attention models two factors dominate the looseness: the attention bound
# is a worst case over the whole ball of token radius $R$, and a LayerNorm whose smallest
# observed token deviation is below $\varepsilon_{\ell-1}/\sqrt d$ (tokens of blank patches) gets
# the margin bound $\max|\gamma|/\sqrt{\epsilon}$, because a perturbation of that size can move
# such a token across zero deviation. The measured envelope $2\varepsilon_\ell$ needs no bound
# and stays close to the bottleneck displacement. None of these bounds limits the measured
# TopoLip $\Delta_\ell/\Delta_{\ell-1}$ of $W_{p,q}$ displacements, which can exceed $2L_\ell$
# when $\Delta_{\ell-1}$ is much smaller than $\varepsilon_{\ell-1}$. Per-layer numbers are in
# `tables/bounds.csv`.
