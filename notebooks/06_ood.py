# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip under distribution shift
#
# **Question.** The paper claims attention models handle out-of-distribution (OOD) data
# better. Do the attention models of this run transform OOD data more smoothly, and do they
# tell it apart from their own test data better?
#
# **Method.** Here the "perturbed" batch is another data set: for every trained model we compare,
# layer by layer, the point cloud of its seed's clean test batch with the cloud of a batch of OOD
# images. The samples are not paired, so the displacement
# $\Delta_\ell = W_{p,q}(\mathrm{Dgm}(H_\ell X), \mathrm{Dgm}(H_\ell X'))$ is defined but no
# certified envelope is; the model-level measure is again the end-to-end scale-free ratio,
# which says whether the network widens ($>1$) or narrows ($<1$) the topological gap between
# the data sets. Narrowing maps OOD data onto in-distribution-like features, which is not
# obviously a virtue, so we also measure what the models *do* on OOD data: their max-softmax
# confidence and how well it separates test from OOD images (AUROC;
# {cite:t}`hendrycks2017baseline`), and beside it two detection scores that read the logits
# before the softmax normalises them, the maximum logit ({cite:t}`hendrycks2022scaling`) and
# the energy score $\log\sum_k e^{f_k(x)}$ ({cite:t}`liu2020energy`). The max-softmax AUROC
# is the registered primary (chosen before the first run); the other two are its secondaries,
# added later. The TopoLip of a model is taken on its seed's own images, so
# the trained model is the unit; the AUROC is taken on the whole test set and the same OOD
# images for every seed, so its image variance is not in the seeds' spread: it alone is
# recomputed on bootstrap resamples of the images (no diagram is computed on a resample).
#
# The OOD sets need no network: scikit-learn's 8×8 digits resized to full frame (a near
# shift), colour-inverted MNIST digits, and crops of scikit-learn's two sample photographs (a
# far shift, no class).

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
persistence_backend = "ripser"  # or "gudhi" (GUDHI's Ripser port)
ood_sets = ["digits", "inverted_mnist", "photo_patches"]
n_ood = 1000
n_image_resamples = 20
scheduler = "local"     # models measured on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

from topolip import roster
from topolip.experiments.model_measurement import model_summaries
from topolip.experiments.ood import measure_ood_trained
from topolip.experiments.per_model import map_models
from topolip.nets.data import load_dataset
from topolip.perturbations.ood_sets import load_ood_batches
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import ood_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.tasks import TaskRunner
from topolip.topology.spec import TopoLipSpec

params = notebook_parameters(globals(), "06_ood")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
ood = load_ood_batches(ood_sets, data, n=n_ood, seed=split_seed)
spec = TopoLipSpec.from_params(params)


with TaskRunner(scheduler, n_workers=n_workers) as runner:
    topo, behaviour, auroc_resamples = map_models(
        models, measure_ood_trained, runner=runner, data=data, ood=ood, spec=spec,
        n_points=n_points, n_resamples=n_image_resamples)
_ = write_table(topo, tables / "ood_topolip.csv", params)
_ = write_table(model_summaries(topo, by=("arch", "seed", "ood_set")),
                tables / "ood_topolip_summary.csv", params)
_ = write_table(behaviour, tables / "ood_behaviour.csv", params)
_ = write_table(auroc_resamples, tables / "ood_resamples.csv", params)

# %% tags=["remove-input"]
summary = read_table(tables / "ood_topolip_summary.csv")
behaviour = read_table(tables / "ood_behaviour.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
own = behaviour[behaviour["dataset"] == "in_distribution"].merge(models, on=["arch", "seed"])
assert (own["accuracy"] - own["test_accuracy"]).abs().max() < 1e-12, "same test set as training"
_ = publish_registered("fig-ood-topolip", results_dir=results_dir, params=params, seeds=seeds)
_ = publish_registered("fig-ood-behaviour", results_dir=results_dir, params=params,
                       seeds=seeds)
_ = publish_registered("fig-ood-detectors", results_dir=results_dir, params=params,
                       seeds=seeds)
_ = glue_all(ood_findings({"ood_topolip_summary": summary, "ood_behaviour": behaviour},
                          params))

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-ood-topolip
# :name: fig-ood-topolip
# :alt: Dot plot of the end-to-end scale-free TopoLip between clean test images and each out-of-distribution set, per architecture, log axis.
#
# End-to-end scale-free TopoLip between each model's clean test batch and a batch of each OOD
# set ({glue:text}`ood-n-points` images each; log axis, dotted line at 1). Small points: seeds;
# large points: means. {glue:md}`fig-ood-topolip-provenance`
# ```
#
# Ordered from the smallest ratio (the network narrows the gap between the data sets most),
# the means over seeds are {glue:text}`ood-e2e-rankings` ({numref}`fig-ood-topolip`).
#
# ```{glue:figure} fig-ood-behaviour
# :name: fig-ood-behaviour
# :alt: Bar charts of the mean max-softmax confidence on each data set and of the AUROC of confidence for separating the test set from each out-of-distribution set, per architecture.
#
# What the models do on OOD data: mean max-softmax confidence per data set, and the AUROC of
# that confidence for separating the test set from each OOD set ({glue:text}`ood-n-ood` images
# per set; 0.5: no separation). Bars: means over seeds; ticks: one standard deviation.
# {glue:md}`fig-ood-behaviour-provenance`
# ```
#
# By the AUROC of the max-softmax confidence ({numref}`fig-ood-behaviour`), from the worst
# separation to the best: {glue:text}`ood-auroc-rankings`. Confidence is a worse-than-chance
# OOD detector (more confident on the OOD set than on the model's own test images) in
# {glue:text}`ood-n-below-chance` (set, architecture) pairs: {glue:text}`ood-below-chance`.
# Hein et al. explain how that can happen: a ReLU network (piecewise affine) grows more
# confident the further an input lies from the training data ({cite:t}`hein2019relu`), so an
# image far from the digits can score above the model's own test images. The chapter
# {doc}`10_literature` measures this on our models ({numref}`fig-lit-topology`, right: the
# confidence of every model on test images scaled by a growing factor).
#
# ```{glue:figure} fig-ood-detectors
# :name: fig-ood-detectors
# :alt: Dot plots of the AUROC of three OOD detection scores (max-softmax, max-logit, energy), one panel per out-of-distribution set, one point per seed and architecture.
#
# AUROC of each detection score for separating the test set from each OOD set: the max-softmax
# confidence, the maximum logit and the energy score (the log-sum-exp of the logits). Small
# points: seeds; large points: means over seeds; dotted line at 0.5 (no separation; below it
# the OOD set scores higher than the test images). {glue:md}`fig-ood-detectors-provenance`
# ```
#
# With the scores that read the logits, the mean AUROC lies below chance in
# {glue:text}`ood-detectors-below-chance` (set, architecture) pairs
# ({numref}`fig-ood-detectors`), against {glue:text}`ood-n-below-chance` for max-softmax.
# Hein et al.'s argument covers the logits too: along a ray far from the data a ReLU network is
# affine, so its logits, their maximum and their log-sum-exp grow linearly with the input's
# scale; the softmax only caps that growth at 1. Chapter {doc}`08_verdict` tests the ViT against
# the ResNet on the far shift with each score.

# %% tags=["remove-input"]
aurocs = {column: roster.measure_label(column) for column in roster.OOD_DETECTORS.values()}
table = behaviour.groupby(["dataset", "arch"], sort=False)[
    ["mean_confidence", "accuracy", *aurocs]].mean().reset_index()
table["dataset"] = table["dataset"].map(roster.label)
show_table(table, columns={"dataset": "data set", "arch": "architecture",
                           "mean_confidence": "mean confidence", "accuracy": "accuracy",
                           **aurocs}, digits=3,
           na_reason="no accuracy where the set has no class of the model; no AUROC for the "
                     "test set itself",
           caption="Behaviour on each data set, means over seeds.")

# %% [markdown]
# **Caveats.** A lower TopoLip under shift is not a better model: a network that maps every
# input onto the same features has TopoLip 0 and detects nothing. The OOD sets are small
# stand-ins built without a network; for a CIFAR-10 model the digit sets carry no class of the
# model, so no accuracy is reported for them.
