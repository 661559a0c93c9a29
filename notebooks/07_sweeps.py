# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # TopoLip against model parameters
#
# **Question.** Is TopoLip a property of the mechanism (attention against convolution) or of a
# model's size and shape? And, for the measure study of {doc}`09_measures`, how do TopoLip and
# the simpler measures rank models that differ in one parameter only?
#
# **Method.** One parameter at a time is varied around a small base model of each family, the
# others held at the base: the ViT's depth (`num_layers`), width (`hidden_dim`), heads and patch
# size; the ResNet's width, stem kernel and blocks per stage; the plain stacks' depth. Each
# point is trained with `topolip.nets.train.fit` for {glue:text}`sw-epochs` epochs (fewer than the
# main models, so the sweep fits the profile's time), on a checkpoint named by everything that
# determines it, so a re-run trains nothing already trained. Each model is then measured like
# the main models ({doc}`02_topolip`): under {glue:text}`sw-kinds`, the end-to-end scale-free
# TopoLip on {glue:text}`sw-n-points` images, the accuracy drop on the seed's batch of
# {glue:text}`sw-n-robust` images, and the baselines.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
n_points = 200
n_robust = 500
ladder_pgd_steps = 20    # PGD is the attack ladder's (04): steps, step size 2.5 eps / steps
ladder_pgd_restarts = 2  # and random restarts (per-image worst case)
degrees = [0, 1]
p = 1
q = float("inf")
n_perm = None
persistence_backend = "ripser"  # or "gudhi" (GUDHI's Ripser port)
batch_size = 128
lr = 0.003
weight_decay = 0.05
val_size = 500
warmup = 0.1
augment = {"rotate": 10.0, "translate": 0.1, "scale": 0.1}
threads = None          # torch CPU threads (None: torch's default)
scheduler = "local"     # sweep models on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)
sweep_epochs = 30
sweep_seeds = [0]
sweep_perturbations = {"fgsm": 0.1, "gaussian_noise": 3}
sweeps = {
    "vit": {"base": {"patch_size": 7, "num_layers": 2, "num_heads": 2, "hidden_dim": 32,
                     "mlp_dim": 64},
            "grid": {"num_layers": [1, 2, 4], "hidden_dim": [16, 32, 64],
                     "num_heads": [1, 2, 4], "patch_size": [7, 14]}},
    "resnet": {"base": {"width": 8, "blocks": [1, 1, 1, 1], "stem_kernel": 3},
               "grid": {"width": [4, 8, 16], "stem_kernel": [3, 5, 7],
                        "blocks": [[1, 1, 1, 1], [2, 2, 2, 2]]}},
    "attention_stack": {"base": {"patch_size": 7, "num_layers": 2, "num_heads": 2,
                                 "hidden_dim": 32},
                        "grid": {"num_layers": [1, 2, 4]}},
    "conv_stack": {"base": {"num_layers": 4, "channels": 16, "kernel_size": 3},
                   "grid": {"num_layers": [2, 4, 6]}},
}

# %% tags=["remove-input"]
from pathlib import Path

from topolip.experiments.sweeps import run_sweeps
from topolip.nets.data import load_dataset
from topolip.nets.run_spec import TrainConfig
from topolip.nets.train import configure_threads
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import write_table
from topolip.report.findings import sweeps_findings
from topolip.report.format import glue_all, show_parameters
from topolip.tasks import TaskRunner
from topolip.topology.spec import TopoLipSpec

params = notebook_parameters(globals(), "07_sweeps")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
spec = TopoLipSpec.from_params(params)
config = TrainConfig(epochs=sweep_epochs, batch_size=batch_size, lr=lr,
                     weight_decay=weight_decay, val_size=val_size, warmup=warmup,
                     **augment)
_ = configure_threads(threads)
with TaskRunner(scheduler, n_workers=n_workers) as runner:
    table = run_sweeps(sweeps, data, config, results_dir=results_dir,
                       perturbations=sweep_perturbations, n_robust=n_robust, n_points=n_points,
                       floor=True, spec=spec, seeds=sweep_seeds, pgd_steps=ladder_pgd_steps,
                       pgd_restarts=ladder_pgd_restarts, runner=runner)
table = table.drop(columns=["resumed_from_epoch"])
_ = write_table(table, tables / "sweeps.csv", params)

# %% tags=["remove-input"]
for arch in sweeps:
    _ = publish_registered(f"fig-sweep-{arch.replace('_', '-')}", results_dir=results_dir,
                           params=params, seeds=sweep_seeds)
_ = publish_registered("fig-sweep-size", results_dir=results_dir, params=params,
                       seeds=sweep_seeds)
_ = glue_all(sweeps_findings(tables, params))

# %% [markdown]
# ## The sweeps
#
# ```{glue:figure} fig-sweep-vit
# :name: fig-sweep-vit
# :alt: ViT sweeps: raw and scale-free end-to-end TopoLip and clean accuracy against depth, width, heads and patch size.
#
# ViT sweeps, one row per swept parameter: raw and scale-free end-to-end TopoLip
# $\Delta_L/\Delta_0$ (log axes, dashed line at 1) and clean test accuracy, against the
# parameter's value, the others at the base; under {glue:text}`sw-kind`.
# {glue:md}`fig-sweep-vit-provenance`
# ```
#
# In {numref}`fig-sweep-vit` and the figures below, the sweeps trained {glue:text}`sw-n-models`
# distinct models for {glue:text}`sw-epochs` epochs each, with the main models' recipe. Their
# clean test accuracy, lowest to highest per family: {glue:text}`sw-accuracy`; a point far
# below its family's main models compares a less trained model, and the accuracy panel of each
# figure shows which. The figures and sentences read {glue:text}`sw-kind`, the swept kind with the
# fewest models whose input displacement lies within the noise floor (within it, per kind:
# {glue:text}`sw-floor-shares`; a ratio there divides by sampling noise, {doc}`02_topolip`).
# Under {glue:text}`sw-kind`, the end-to-end scale-free TopoLip along each swept
# parameter, from its smallest to its largest value: {glue:text}`sw-trends`. Within one family
# the ratio spans up to a factor {glue:text}`sw-max-span` ({glue:text}`sw-max-span-arch`);
# the families' ranges are {glue:text}`sw-ranges`, and their medians differ by up to a factor
# {glue:text}`sw-median-span`. These are one short training run per point, so they describe
# the spread, not a test.
#
# ```{glue:figure} fig-sweep-size
# :name: fig-sweep-size
# :alt: Two panels against the number of weights on a log axis: the end-to-end scale-free TopoLip and the accuracy drop of every sweep model, one colour and marker per architecture.
#
# Every sweep model against its number of weights: end-to-end scale-free TopoLip (left, log
# axis) and accuracy drop (right), under {glue:text}`sw-kind`; one point per model (mean
# over the sweep seeds). {glue:md}`fig-sweep-size-provenance`
# ```
#
# {numref}`fig-sweep-size` separates architecture from size: read along a colour, a family's
# TopoLip and robustness as it grows; read across colours at one size, the families compared at
# equal capacity. Kendall's $\tau$ between log weights and TopoLip within each family (sweep
# points only, descriptive): {glue:text}`sw-size-tau`.
#
# ```{glue:figure} fig-sweep-resnet
# :name: fig-sweep-resnet
# :alt: ResNet sweeps: raw and scale-free end-to-end TopoLip and clean accuracy against width, stem kernel and blocks per stage.
#
# ResNet sweeps, as {numref}`fig-sweep-vit`. {glue:md}`fig-sweep-resnet-provenance`
# ```
#
# ```{glue:figure} fig-sweep-attention-stack
# :name: fig-sweep-attention-stack
# :alt: Attention-stack depth sweep: raw and scale-free end-to-end TopoLip and clean accuracy against depth.
#
# Attention-only stack, depth sweep, as {numref}`fig-sweep-vit`.
# {glue:md}`fig-sweep-attention-stack-provenance`
# ```
#
# ```{glue:figure} fig-sweep-conv-stack
# :name: fig-sweep-conv-stack
# :alt: Convolution-stack depth sweep: raw and scale-free end-to-end TopoLip and clean accuracy against depth.
#
# Convolution-only stack, depth sweep, as {numref}`fig-sweep-vit`.
# {glue:md}`fig-sweep-conv-stack-provenance`
# ```
#
# **Caveats.** Each sweep point is one training run ({glue:text}`sw-epochs` epochs) per sweep
# seed: a trend along two or three points is what this run shows, not a law, and the sweeps
# carry no intervals (they are not used for verdicts, only in the measure study, where each
# model is one observation).
