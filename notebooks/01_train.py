# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Training the models
#
# **Question.** Do the four architectures of this run learn the task well enough for their
# smoothness and robustness to be compared? A comparison of TopoLip between a model that has
# learned and one that has not would say little about attention or convolution.
#
# **Method.** Every architecture is trained from every seed with one recipe,
# `topolip.nets.train.fit`: AdamW with a linear warm-up over the first tenth of the steps and a
# cosine decay after it, cross-entropy, and small random affine copies of the training digits
# (torchvision's `RandomAffine`: rotations, shifts and zooms, the `augment` parameter), with
# CUDA and bfloat16 autocast when a GPU is present, else the CPU. The validation
# images (their number is a parameter, in the table below) are held out of the training images
# (the same for every model), and each model is the
# epoch with the best validation accuracy, so no architecture is compared at an epoch where it
# had not yet learned or had begun to overfit. The ViT and the ResNet are torchvision's own
# classes (`VisionTransformer`, `ResNet` with `BasicBlock`) adapted to small images by
# `topolip.nets.models`; the attention-only and convolution-only stacks (no residual connections, no
# normalization) follow the plain models of the paper's earlier version as its public reviews
# describe them. Checkpoints are written after every epoch under the results folder, named by a
# hash of everything that determines them, so an interrupted run resumes and a changed parameter
# never reuses a stale model.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
archs = ["vit", "resnet", "attention_stack", "conv_stack"]
vit = {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 48, "mlp_dim": 96}
resnet = {"width": 8, "blocks": [1, 1, 1, 1], "stem_kernel": 3}
attention_stack = {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 40}
conv_stack = {"num_layers": 4, "channels": 32, "kernel_size": 3}
seeds = [0, 1, 2, 3, 4]
epochs = 30
batch_size = 128
lr = 0.003
weight_decay = 0.05
val_size = 500
warmup = 0.1
augment = {"rotate": 10.0, "translate": 0.1, "scale": 0.1}
threads = None          # torch CPU threads (None: torch's default)
scheduler = "local"     # trainings on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

import pandas as pd

from topolip.evidence.claims import FAMILY_PAIRS
from topolip.experiments.per_model import train_models
from topolip.nets.data import load_dataset
from topolip.nets.models.capacity import MATCH_TOLERANCE, capacity_table, flops_per_image
from topolip.nets.run_spec import TrainConfig, spec_for
from topolip.nets.train import configure_threads, default_device
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import write_table
from topolip.report.findings import train_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.schema import frame
from topolip.tasks import TaskRunner

arch_params = {"vit": vit, "resnet": resnet, "attention_stack": attention_stack,
               "conv_stack": conv_stack}
params = notebook_parameters(globals(), "01_train")
show_parameters(params)

# %% tags=["hide-input"]
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
device = default_device()
_ = configure_threads(threads)
jobs = [(spec_for(arch, arch_params[arch], data),
         TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                     seed=seed, val_size=val_size, warmup=warmup, **augment))
        for arch in archs for seed in seeds]
with TaskRunner(scheduler, n_workers=n_workers) as runner:
    # every epoch's weights of the pair the robustness primary compares, for 04's
    # accuracy-matched comparison
    trained = train_models(jobs, data, results_dir=results_dir, runner=runner,
                           keep_epochs=FAMILY_PAIRS[0])
flops = {spec.arch: flops_per_image(spec.build(), data.image_shape) for spec, _ in jobs}
rows, histories = [], []
for (spec, config), result in zip(jobs, trained, strict=True):
    arch, seed = spec.arch, config.seed
    rows.append({"arch": arch, "seed": seed, "train_accuracy": result["train_accuracy"],
                 "val_accuracy": result["val_accuracy"], "test_accuracy": result["test_accuracy"],
                 "best_epoch": result["best_epoch"], "parameters": result["parameters"], "flops": flops[arch], "epochs": epochs,
                 "train_seconds": round(sum(h["seconds"] for h in result["history"]), 1),
                 "threads": result["history"][-1].get("threads"),
                 "checkpoint": result["checkpoint"]})
    histories += [{"arch": arch, "seed": seed, **h} for h in result["history"]]

models = frame("models", rows)  # the declared columns of tables/models.csv, in order
history = pd.DataFrame(histories)
_ = write_table(models, Path(results_dir) / "tables" / "models.csv", params)
_ = write_table(history, Path(results_dir) / "tables" / "training.csv", params)
capacity = capacity_table(models, FAMILY_PAIRS)

_ = publish_registered("fig-train-curves", results_dir=results_dir, params=params, seeds=seeds)
_ = glue_all(train_findings({"models": models}, params, capacity=capacity,
                            match_tolerance=MATCH_TOLERANCE, data_name=data.name,
                            device=device.type))

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-train-curves
# :name: fig-train-curves
# :alt: Two panels against the epoch: training loss falling and training accuracy rising for each architecture, attention models in blue, convolution models in orange.
#
# Training loss (left) and training accuracy (right) against the epoch, for each architecture;
# lines are means over the {glue:text}`n-seeds` seeds, bands one standard deviation (drawn only
# with two seeds or more). Data: {glue:text}`train-data`.
# {glue:md}`fig-train-curves-provenance`
# ```
#
# {numref}`fig-train-curves` shows how training went. The run trained
# {glue:text}`n-models` models ({glue:text}`n-archs` architectures × {glue:text}`n-seeds`
# seeds, {glue:text}`train-epochs` epochs each, {glue:text}`train-seconds` s of training in
# all). Mean clean test accuracy over the seeds: ViT {glue:text}`acc-vit`, ResNet
# {glue:text}`acc-resnet`, attention stack {glue:text}`acc-attention-stack`, convolution stack
# {glue:text}`acc-conv-stack`. The most accurate architecture is the
# {glue:text}`acc-best-arch` ({glue:text}`acc-best`), the least accurate the
# {glue:text}`acc-worst-arch` ({glue:text}`acc-worst`), a spread of {glue:text}`acc-spread`.
# The recipe aims at a mean test accuracy of at least 0.95 for every architecture, with the ViT
# within 0.02 of the ResNet, so that a robustness comparison is not a comparison of training:
# in this run {glue:text}`acc-goal`, and the ResNet's lead over the ViT is
# {glue:text}`acc-gap-vit-resnet`. Where a goal is missed, the robustness chapters compare models
# that learned to different degrees, and say so beside the accuracies.
#
# **Matched in size.** An architecture comparison is only about attention and convolution if
# the two sides have about the same capacity, so each compared pair is matched in parameters
# within {glue:text}`match-tolerance` in both profiles (`tests/test_capacity.py` checks them);
# in this run {glue:text}`match-verdict`. Weights, attention side against convolution side:
# ViT against ResNet {glue:text}`params-vit-resnet` (ratio
# {glue:text}`params-ratio-vit-resnet`), attention stack against convolution stack
# {glue:text}`params-attention-stack-conv-stack` (ratio
# {glue:text}`params-ratio-attention-stack-conv-stack`). Their cost per image is not matched:
# a convolution reuses its weights at every pixel, so the ViT needs
# {glue:text}`flops-ratio-vit-resnet` times the ResNet's floating-point operations per image
# and the attention stack {glue:text}`flops-ratio-attention-stack-conv-stack` times the
# convolution stack's (the table gives both per model; `topolip.nets.models.capacity` counts them
# with PyTorch's FLOP counter). The sweeps of {doc}`07_sweeps` show each family against its
# size.
#
# The table lists every trained model.

# %% tags=["remove-input"]
show_table(models, columns={"arch": "architecture", "seed": "seed",
                            "train_accuracy": "train accuracy",
                            "val_accuracy": "validation accuracy",
                            "test_accuracy": "test accuracy", "best_epoch": "epoch kept",
                            "parameters": "weights", "flops": "FLOPs per image",
                            "train_seconds": "training time (s)"},
           caption="Trained models: clean accuracy on the images trained on, on the validation "
                   "images that chose the epoch kept, and on the held-out test images; weights, "
                   "cost per image and training time.")

# %% [markdown]
# **Caveats.** Accuracy is measured once, on the held-out test images of this run's split; with
# few seeds the spread between seeds is a rough guide to the training noise, not a confidence
# interval. Where the architectures' accuracies differ, later comparisons of smoothness and
# robustness compare models that learned the task to different degrees, and no verdict adjusts
# for clean accuracy: read each robustness comparison beside the accuracies above. The
# per-epoch numbers (validation accuracy and learning rate included) are in
# `tables/training.csv`.
