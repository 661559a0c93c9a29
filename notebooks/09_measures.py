# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Does TopoLip rank models by robustness better than simpler measures?
#
# **Question.** TopoLip is built from persistent homology. If a measure that uses no topology
# ranks trained models by robustness as well, the topology adds nothing to that task. This
# chapter asks, for each measure, how well its ranking of the models agrees with the accuracy a
# perturbation costs them, and whether TopoLip's ranking is better than each simpler one.
#
# **Measures.** For each model of the chain ({doc}`01_train`) and each perturbation kind, the
# chain computed, on the same clouds as TopoLip ({doc}`02_topolip`): the end-to-end scale-free
# TopoLip $\Delta_L/\Delta_0$ (the reference), its raw version and its per-layer geometric
# mean; the **Euclidean displacement ratio** $(\varepsilon_L/s_L)/(\varepsilon_0/s_0)$ with the
# max and with the mean paired displacement (no topology); a **paired topological divergence**
# in the spirit of RTD {cite:p}`barannikov2022rtd` and its H0 "lite" variant
# {cite:p}`tulchinskii2025rtdlite`: the total length of the H0 cross-barcode of the clean and
# perturbed distance graphs, last probe over input (our implementation,
# `topolip.experiments.baselines.rtd_lite`), which uses the pairing of samples that TopoLip's separate
# diagrams discard; **1 − linear CKA** {cite:p}`kornblith2019cka` between clean and perturbed
# activations at the last probe; the **product of per-layer empirical Lipschitz estimates** and
# the data-free **product of weight spectral norms**; the **mean logit margin** on clean images,
# the **parameter count** and the **clean accuracy** (shown, not compared). Each measure is
# oriented before any data is seen, so that a positive Kendall $\tau$ means it ranks models the
# way its rationale predicts (a larger margin, accuracy or size predicts a smaller drop).
#
# **Why within architectures.** The models are architectures × seeds. A measure that only tells
# the architectures apart (one architecture has both the larger ratio and the larger drop) earns
# a large $\tau$ over all models without ranking any two models of one design. The primary
# statistic is therefore Kendall's $\tau$ over the pairs of models *of the same architecture*
# (`topolip.evidence.measures.within_tau`), averaged over the perturbation kinds; the $\tau$ over all
# models together is shown beside it, confounded by architecture.
#
# **Tests.** A measure's within-architecture $\tau$ is tested by permuting the seeds: the
# responses of one seed are given to another, the same relabelling in every architecture and
# every kind (the architectures of a seed share their images, so the seed is the unit; every
# relabelling is enumerated, an exact test). TopoLip's $\tau$ averaged over kinds is the one
# primary association test; the others form one Holm family. TopoLip is compared with each
# baseline by the difference of their within-architecture $\tau$, with a delete-one-seed
# jackknife and Student's $t$ on seeds − 1 degrees of freedom
# (`topolip.evidence.measures.compare_within`): it respects the clustering (architectures are
# strata; deleting a seed deletes its model in every architecture and kind) and is conservative
# (the jackknife variance is biased upwards, Efron–Stein). On simulated books with 4
# architectures whose means differ and two equally good measures it calls better or worse in
# well under 5% of books at $\alpha = 0.05$ (`tests/test_measures.py`). The comparisons
# averaged over kinds are the primary family, Holm-corrected over the baselines; the comparisons
# per kind are a secondary family of their own. A verdict "better" or "worse" is said only where
# the Holm-adjusted p-value is below $\alpha$; the interval shown is the one that test uses.
#
# **Within the sweeps** ({doc}`07_sweeps`), where one hyper-parameter varies at a time around
# a base model, we report the granulated $\tau$ of {cite:t}`jiang2020fantastic`: for each
# architecture family and swept axis, $\tau$ over the models that differ only in that axis
# (same seed, the other axes at the base), averaged over seeds; then averaged over the family's
# axes, and over the families.
#
# **Noise floor.** Where a model's TopoLip input displacement lies within the noise floor
# ({doc}`02_topolip`), its TopoLip ratio means nothing: that model is left out of its kind's
# ranking for every measure, so TopoLip and the baselines rank the same models.
#
# **Models that did not learn.** A model whose clean test accuracy is below a threshold
# (here {glue:text}`ms-min-accuracy`; chance is 0.1) has almost no accuracy to lose, so its
# accuracy drop says nothing about its smoothness: it is left out of every ranking. This run
# leaves out {glue:text}`ms-not-learned`.

# %% tags=["parameters"]
results_dir = "results/quick"
n_boot = 2000
alpha = 0.05
min_accuracy = 0.5

# %% tags=["remove-input"]
from pathlib import Path

from topolip.evidence.measures import measure_population, measure_study
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import learner_findings, measures_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.report.measure_tables import granulated_table, kind_table, primary_table

params = notebook_parameters(globals(), "09_measures")
show_parameters({**params, "tables read": "topolip_summary.csv, sweeps.csv",
                 "n_boot": f"{n_boot} (random seed permutations, used beyond 8 seeds)"})

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
summary = read_table(tables / "topolip_summary.csv")
sweeps = read_table(tables / "sweeps.csv")
population = measure_population(summary, sweeps, min_accuracy=min_accuracy)
study, granulated = measure_study(population, alpha=alpha, n_resamples=n_boot)
_ = write_table(population, tables / "measure_population.csv", params)
_ = write_table(study, tables / "measure_study.csv", params)
_ = write_table(granulated, tables / "measure_granulated.csv", params)

# %% tags=["remove-input"]
study = read_table(tables / "measure_study.csv")
models = read_table(tables / "models.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
_ = publish_registered("fig-measure-study", results_dir=results_dir, params=params,
                       seeds=seeds, alpha=alpha)
_ = glue_all(measures_findings({"measure_study": study}, alpha=alpha))
_ = glue_all(learner_findings(read_table(tables / "measure_population.csv"), min_accuracy))

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-measure-study
# :name: fig-measure-study
# :alt: Left, for each measure, Kendall tau with the accuracy drop within architectures (black), per perturbation kind (grey dots) and pooled over all models (orange diamonds). Right, TopoLip's tau minus each baseline's with its Holm interval, coloured by verdict.
#
# Left: Kendall $\tau$ between each measure (oriented) and the accuracy drop, over pairs of
# models of the same architecture, averaged over the perturbation kinds (black circles; filled
# where significant at $\alpha$ after Holm), for each kind (grey dots), and over all models
# pooled (orange diamonds, confounded by architecture). Right: $\tau$ of TopoLip minus that of
# each baseline, within architectures and averaged over kinds, with the interval of its
# Holm-corrected jackknife test; green: TopoLip better, pink: worse, grey: no difference shown.
# {glue:md}`fig-measure-study-provenance`
# ```
#
# **The within-architecture ranking.** {glue:text}`ms-sentence`
#
# Over {glue:text}`ms-n-models` models ({glue:text}`ms-n-archs` architectures ×
# {glue:text}`ms-n-seeds` seeds) and {glue:text}`ms-n-kinds` perturbation kinds
# ({glue:text}`ms-n-excluded` model × kind rows left out for the noise floor), TopoLip's
# within-architecture $\tau$ per kind is {glue:text}`ms-ref-taus`; averaged over kinds it is
# {glue:text}`ms-ref-tau` (exact seed-permutation p {glue:text}`ms-ref-p`), so the run
# {glue:text}`ms-significance` an association of TopoLip with the accuracy drop within
# architectures at $\alpha$. The measure with the largest within-architecture $\tau$ is
# {glue:text}`ms-top-measure` ({glue:text}`ms-top-tau`); TopoLip ranks
# {glue:text}`ms-ref-rank` ({numref}`fig-measure-study`). Averaged over kinds,
# {glue:text}`ms-n-significant` of the measures' $\tau$ are significant at $\alpha$
# (TopoLip's as its one test, the others after Holm over every measure and kind).
#
# **TopoLip against each baseline.** Of the {glue:text}`ms-n-comparisons` baselines that can be
# compared within architectures ({glue:text}`ms-n-untestable` cannot: a measure constant within
# every architecture, such as the parameter count, ranks no two models of one design), TopoLip
# is significantly better than {glue:text}`ms-n-better` ({glue:text}`ms-better`) and
# significantly worse than {glue:text}`ms-n-worse` ({glue:text}`ms-worse`) after Holm; no
# difference is shown for {glue:text}`ms-n-undecided`. Per kind (the secondary family,
# {glue:text}`ms-n-secondary` comparisons), it is better in
# {glue:text}`ms-n-secondary-better` and worse in {glue:text}`ms-n-secondary-worse`.
# {glue:text}`ms-near` of the primary p-values lie within 0.01 (or two Monte-Carlo errors) of
# $\alpha$, where another seed set could move a verdict.
#
# **Pooled over architectures**, TopoLip's $\tau$ is {glue:text}`ms-ref-pooled`: that number
# also counts the pairs of models of different architectures, so it rewards telling the
# architectures apart, and it is not a test of the measure.

# %% tags=["remove-input"]
show_table(primary_table(study),
           digits=2,
           caption="The primary rows: each measure's within-architecture Kendall τ with the "
                   "accuracy drop, averaged over the perturbation kinds, its exact "
                   "seed-permutation p-value (TopoLip's is one test; the others' are "
                   "Holm-adjusted in one family), the pooled τ, and TopoLip against each "
                   "baseline (jackknife over seeds, Holm over the baselines).")

# %% tags=["remove-input"]
show_table(kind_table(study), digits=2,
           caption="Within-architecture Kendall τ with the accuracy drop, per measure (rows) "
                   "and perturbation kind (columns); p-values, pooled τ and the per-kind "
                   "comparisons are in tables/measure_study.csv.")

# %% [markdown]
# **Within the sweeps.** TopoLip's granulated $\tau$ is {glue:text}`ms-granulated` (the mean
# over the families of the mean over their swept axes, averaged over the sweeps' kinds). The table gives each measure's value per family; the per-axis values are in
# `tables/measure_granulated.csv`. A sweep has one model per value and seed, so each axis's
# $\tau$ rests on two to five models: the granulated $\tau$ says in which direction a measure
# follows the drop when one design choice changes, not whether that is significant.

# %% tags=["remove-input"]
gran = read_table(tables / "measure_granulated.csv")
if len(gran):
    show_table(granulated_table(gran, study), digits=2,
               caption="Granulated Kendall τ (Jiang et al. 2020) per architecture family: the "
                       "mean over the family's swept axes of τ over the models that differ "
                       "only in that axis, averaged over the sweeps' perturbation kinds.")

# %% [markdown]
# **Caveats.** With {glue:text}`ms-n-seeds` seeds there are {glue:text}`ms-n-permutations`
# relabellings of the seeds, so no permutation p-value is below {glue:text}`ms-min-p`,
# {glue:text}`ms-family-note`. The jackknife comparison is conservative: in the calibration
# simulation of `tests/test_measures.py` (4 architectures × 5 seeds) it calls two equally
# good measures different in well under 5% of books, and it detects a measure that tracks the
# drop almost perfectly against a useless one in most books but not all, so "no difference
# shown" is weak evidence of equality. The sweeps train one model per value
# and seed, so the granulated $\tau$ is descriptive. The noise-floor exclusion removes the same
# models for every measure, which also removes baselines' information on those models.
