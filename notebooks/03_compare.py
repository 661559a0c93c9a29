# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Attention against convolution: model-level smoothness
#
# **Question.** The paper's central claim, in our formalization: attention models transform
# data more smoothly than convolution models, i.e. they expand the topological displacement of
# a perturbation less. Does this run's data say so?
#
# **Method.** For each trained model and perturbation, the chapter before measured the
# displacement $\Delta_\ell$ at every probe point. Here each model is summarised by the primary
# measure of the {doc}`method page <../method>`, the end-to-end scale-free ratio
# $\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0$, which does not depend on the number of probe
# points $L$ (below 1: the model shrinks the perturbation's effect on the shape of the data).
# The per-layer geometric mean $(\Delta_L/\Delta_0)^{1/L}$ is reported as a secondary measure,
# with its $L$. The statistical verdicts (intervals, corrections) are in the verdicts chapter;
# this chapter describes.

# %% tags=["parameters"]
results_dir = "results/quick"

# %% tags=["remove-input"]
from pathlib import Path

from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.provenance import read_table
from topolip.report.findings import compare_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.report.topolip_tables import architecture_means_table

tables = Path(results_dir) / "tables"
table = read_table(tables / "topolip.csv")
models = read_table(tables / "models.csv")
summary = read_table(tables / "topolip_summary.csv")
seeds = sorted(models["seed"].unique())
show_parameters({"results_dir": Path(results_dir).name, "tables read": "topolip.csv, "
                 "topolip_summary.csv, models.csv", "seeds": [int(s) for s in seeds]})

# %% tags=["hide-input"]
_ = publish_registered("fig-compare-end-to-end", results_dir=results_dir, seeds=seeds)
_ = publish_registered("fig-compare-by-layer", results_dir=results_dir, seeds=seeds)
_ = glue_all(compare_findings(tables))

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-compare-end-to-end
# :name: fig-compare-end-to-end
# :alt: Dot plot of the end-to-end scale-free TopoLip of each architecture under each perturbation, on a log axis; attention models in blue with circles, convolution models in orange with squares.
#
# End-to-end scale-free ratio $\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0$ of every trained
# model, per perturbation (log scale; dotted line: 1). Small points: one per seed; large
# outlined points: the mean over seeds. Data: {glue:text}`01_train.ipynb::train-data:s`.
# {glue:md}`fig-compare-end-to-end-provenance`
# ```
#
# {numref}`fig-compare-end-to-end` compares the architectures by the primary measure. Ranked
# from the smoothest (lowest geometric mean over seeds): {glue:text}`e2e-rankings`. Under
# {glue:text}`e2e-kind`, the kind whose input displacement lies within the noise floor for the
# fewest models, the smoothest architecture is the {glue:text}`e2e-smoothest-arch`
# ({glue:text}`e2e-smoothest`) and the least smooth the {glue:text}`e2e-roughest-arch`
# ({glue:text}`e2e-roughest`); the ViT {glue:text}`e2e-vit` against the ResNet's
# {glue:text}`e2e-resnet`. The ViT is below the ResNet
# under {glue:text}`e2e-vit-below-resnet` perturbation kinds, the attention stack below the
# convolution stack under {glue:text}`e2e-stack-below`. Between the seeds of one architecture
# the ratio varies by a factor of up to {glue:text}`e2e-seed-spread`, which is the scale
# against which the differences above must be read.
#
# ```{glue:figure} fig-compare-by-layer
# :name: fig-compare-by-layer
# :alt: Per-layer TopoLip against probe depth for each architecture, raw on the left and scale-free on the right, one row per perturbation, log axes with a dotted line at 1.
#
# Per-layer TopoLip $\Delta_\ell/\Delta_{\ell-1}$ against probe depth, raw (left) and
# scale-free (right), one row per perturbation; lines are means over seeds, bands one standard
# deviation (only with two seeds or more). Data: {glue:text}`01_train.ipynb::train-data:s`.
# {glue:md}`fig-compare-by-layer-provenance`
# ```
#
# {numref}`fig-compare-by-layer` shows where the end-to-end ratio comes from: the layers that
# expand ($>1$) or contract ($<1$) the displacement. Raw values mix each architecture's
# activation scale into the ratio; the scale-free panels remove it.
#
# The table gives both model-level measures per architecture, geometric means over seeds; the
# per-layer geometric mean is shown with the number of probed layers $L$ it averages over.

# %% tags=["remove-input"]
means = architecture_means_table(summary, table)
show_table(means, columns=dict(zip(means.columns, means.columns, strict=True)),  # "Δ_L" as is
           caption="Model-level TopoLip, geometric means over seeds.")

# %% [markdown]
# **Caveats.** These are descriptive numbers, one per trained model; each seed measures its
# models on its own batch of test images, so the spread over seeds holds both the training
# noise and the sampling of the images. Whether a difference between architectures is larger
# than that spread is decided in the verdicts chapter, with intervals; the FGSM, PGD and
# elastic rows include models whose input displacement lies within the noise floor, which the
# verdicts leave out.
# Clean accuracy differs between the architectures ({doc}`01_train`), and a model that has not
# learned the task can be smooth for the wrong reason.
