# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip per layer, its noise floor, and the measurements behind every comparison
#
# **Question.** How far does each layer of each trained model move the shape of a batch of
# images when the images are perturbed, and is that movement larger than the difference
# between two batches of clean images?
#
# **Method.** For each trained model we take its seed's batch of test images (every
# architecture trained with seed $s$ sees the same images, and different seeds see different
# images), perturb it with each kind at its TopoLip strength (the parameters table; attacks with an $L_\infty$ budget
# $\varepsilon$ in pixel units of $[0, 1]$ images, PGD the attack ladder's of {doc}`04_robustness`:
# {glue:text}`tl-pgd-steps` steps from the worst of {glue:text}`tl-pgd-restarts` random starts;
# corruptions at a severity), and follow both
# batches through the network. At each probe point $\ell$ the flattened activations form two
# point clouds; the distance $W_{p,q}$ between their Vietoris–Rips persistence diagrams is the
# topological displacement $\Delta_\ell$, and $\mathrm{TopoLip}_\ell = \Delta_\ell/\Delta_{\ell-1}$
# (our formalization, {doc}`../method`). The model-level measure is the end-to-end scale-free
# ratio $\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0$.
#
# Two additions make the numbers usable as evidence. The **noise floor** of each layer is the
# displacement between the clean batch and a disjoint clean batch of the same size: how much
# the diagram changes when other images are drawn. A perturbation's displacement compares the
# *same* images before and after, so it is not limited by that sampling difference and can be
# reproducible below the floor; what a displacement within the floor says is that the
# perturbation changes the shape of the batch less than redrawing the images does, and a ratio
# that divides by such a number is dominated by the smallest bars of the diagrams. We flag those
# ratios, and the verdicts chapter leaves the models whose *input* displacement lies within the
# floor out of its TopoLip comparisons (and says how many). The **baseline measures** of the
# measure study (Euclidean displacement ratios, a paired topological divergence, CKA, Lipschitz
# products, margins) are computed on the same clouds. The trained model is the unit of every
# comparison: one value per model and perturbation, on its seed's own images, so a seed's
# value already carries the variance of its images and no image resampling is added. Every layer is also checked against the
# certified envelope $W_{\infty,\infty} \le 2\varepsilon_\ell$; a violation stops the notebook.

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
degrees = [0, 1]
p = 1
q = float("inf")
n_perm = None
persistence_backend = "ripser"  # or "gudhi" (GUDHI's Ripser port)
scheduler = "local"     # models measured on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

from topolip.experiments.model_measurement import measure_trained
from topolip.experiments.per_model import map_models
from topolip.nets.data import load_dataset
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import topolip_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.report.topolip_tables import noise_floor_share_table
from topolip.tasks import TaskRunner
from topolip.topology.spec import TopoLipSpec

params = notebook_parameters(globals(), "02_topolip")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
spec = TopoLipSpec.from_params(params)


with TaskRunner(scheduler, n_workers=n_workers) as runner:
    table, summary = map_models(
        models, measure_trained, runner=runner, data=data, perturbations=topolip_strengths,
        spec=spec, n_points=n_points, n_robust=n_robust, pgd_steps=ladder_pgd_steps,
        pgd_restarts=ladder_pgd_restarts)
_ = write_table(table, tables / "topolip.csv", params)
_ = write_table(summary, tables / "topolip_summary.csv", params)

# %% tags=["remove-input"]
table = read_table(tables / "topolip.csv")
summary = read_table(tables / "topolip_summary.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
_ = publish_registered("fig-noise-floor", results_dir=results_dir, params=params, seeds=seeds)
_ = glue_all(topolip_findings({"topolip": table, "models": models}, params))

# %% [markdown]
# ## Displacement against the noise floor
#
# ```{glue:figure} fig-noise-floor
# :name: fig-noise-floor
# :alt: Small multiples, one per perturbation kind: the scale-free topological displacement at each probe depth for each architecture (solid lines, log axis) and the displacement between two disjoint clean batches (dashed lines).
#
# Scale-free displacement $\Delta_\ell/s_\ell$ at every probe point (solid; mean over seeds)
# and the noise floor, the displacement between the clean batch and a disjoint clean batch of
# the same size (dashed), per perturbation kind. Attention models in blue, convolution models
# in orange. {glue:md}`fig-noise-floor-provenance`
# ```
#
# Over the {glue:text}`tl-n-models` trained models and {glue:text}`tl-n-kinds` perturbation
# kinds, {glue:text}`tl-n-flagged` of the {glue:text}`tl-n-ratios` layer ratios
# ({glue:text}`tl-share-flagged`) have a denominator within the noise floor
# ({numref}`fig-noise-floor`): at those layers the perturbed batch is no further from the clean
# one, in diagram distance, than another clean batch is. The input displacement itself is
# within the floor for most models under {glue:text}`tl-n-kinds-input-below` kinds
# ({glue:text}`tl-kinds-input-below`), so the end-to-end ratio of those kinds divides by a
# number that sampling alone could produce; these rows carry a flag in the tables. Only
# {glue:text}`tl-share-layers-above` of the probed layers displace the batch by more than the
# floor. The certified envelope held on every layer: the largest ratio of the bottleneck
# displacement to its bound $2\varepsilon_\ell$ is {glue:text}`tl-envelope-max`.
#
# The per-model summary (one row per model and perturbation kind) is in
# `tables/topolip_summary.csv`; the model-level comparisons are drawn in {doc}`03_compare` and
# decided, with intervals, in {doc}`08_verdict`. The accuracy drop in that table is measured on
# {glue:text}`tl-n-robust` images per seed, TopoLip on the first {glue:text}`tl-n-points`.

# %% tags=["remove-input"]
show_table(noise_floor_share_table(table), digits=2,
           caption="Share of layer ratios whose denominator lies within the noise floor, "
                   "per architecture and perturbation kind (all seeds).")

# %% [markdown]
# **Caveats.** The noise floor is one pair of clean batches per seed; it is itself a noisy
# number. The baselines are computed here but judged
# in {doc}`09_measures`.
