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
# much accuracy each perturbation costs at increasing strength, under attacks strong enough for
# a robustness reviewer and checked for gradient masking, and whether, within one kind of
# perturbation, the models with the lower TopoLip are those that lose less accuracy.
#
# **Method.** Each model is attacked on its seed's first {glue:text}`rb-n-ladder` test images
# (the same images for every architecture of the seed) by a ladder of three white-box attacks
# at each $L_\infty$ budget $\varepsilon \in \{${glue:text}`rb-eps-grid`$\}$ (pixel units of
# $[0, 1]$ images), each one torchattacks' own implementation: **FGSM** (one gradient-sign
# step), **PGD** ({glue:text}`rb-pgd-steps` steps of size $2.5\,\varepsilon/\text{steps}$ from
# {glue:text}`rb-pgd-restarts` random starts; an image counts as robust only if every start
# fails) and **APGD-CE + APGD-T** (`autoattack` in the CSV files; no FAB-T, so not
# AutoAttack itself), APGD-CE followed by APGD-T {cite:p}`croce2020autoattack`, per
# image the first that fools the model. The black-box **Square** attack runs at
# the TopoLip budget. The accuracy under each common corruption is measured on the same images
# at each severity. The link between smoothness
# and robustness is asked **within architectures**: Kendall's $\tau$ between the end-to-end
# scale-free TopoLip and the accuracy drop over the seeds of one architecture, averaged over
# the architectures and the perturbation kinds. Across architectures a rank correlation mostly
# measures how the four architectures differ (four clusters, not independent models), so that
# level is reported on its own with its $n$. The test permutes the drops across the seeds with
# one relabelling of the seeds shared by every architecture (the architectures of a seed share
# their images) and by every kind (the kinds reuse the same models); with the number of seeds
# of this run every relabelling is enumerated, so the p-value is exact. The pooled row is the
# association claim's primary comparison ({doc}`08_verdict`); the per-kind rows and the relative
# drop $(\text{clean} - \text{perturbed})/(\text{clean} - \text{chance})$ are secondary, with
# Holm's correction over them. Models whose input displacement lies within the noise floor are
# left out of their kind.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
topolip_strengths = {"fgsm": 0.1, "pgd": 0.1, "gaussian_noise": 3, "gaussian_blur": 3,
                     "contrast": 3, "rotation": 3, "elastic": 3}
attack_eps = [0.0, 0.05, 0.1]
masking_probe_steps = 5  # steps of the masking check's short PGD (below ladder_pgd_steps)
severities = [0, 1, 3, 5]
n_ladder = 100
ladder_pgd_steps = 20
ladder_pgd_restarts = 2
apgd_steps = 20
apgd_target_classes = 3
square_queries = 1000
n_radius = 200
radius_eps_max = 0.3
radius_steps = 3
radius_check_images = 50
fab_steps = 20
masking_large_eps = 0.3
masking_tolerance = 0.03
masking_zero_accuracy = 0.05
scheduler = "local"     # models measured on: local (Dask LocalCluster), serial, or tcp://host:8786
n_workers = None        # processes of the local cluster, 1 thread each (None: the cores)

# %% tags=["remove-input"]
from pathlib import Path

import pandas as pd

from topolip import roster
from topolip.evidence.claims import smoothness_table
from topolip.evidence.masking import ladder_table, masking_checks
from topolip.experiments.matched import (
    accuracy_matched_epochs,
    matched_radii_trained,
    matched_summary,
)
from topolip.experiments.per_model import map_models
from topolip.experiments.radii import radii_trained, radius_check, radius_summary, robust_curve
from topolip.experiments.robustness import robustness_trained
from topolip.nets.data import load_dataset
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import matched_findings, radius_findings, robustness_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.report.robustness_tables import (
    attack_ladder_table,
    masking_table,
    smoothness_tau_table,
)
from topolip.tasks import TaskRunner

params = notebook_parameters(globals(), "04_robustness")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
models = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
eps_topolip = topolip_strengths[roster.BUDGET_KIND]  # the TopoLip budget: Square, steps check

with TaskRunner(scheduler, n_workers=n_workers) as runner:
    curves, probes = map_models(
        models, robustness_trained, runner=runner, data=data, attack_eps=attack_eps,
        severities=severities, n_images=n_ladder, topolip_eps=eps_topolip,
        large_eps=masking_large_eps, pgd_steps=ladder_pgd_steps,
        pgd_restarts=ladder_pgd_restarts, apgd_steps=apgd_steps,
        n_target_classes=apgd_target_classes, square_queries=square_queries,
        probe_steps=masking_probe_steps)
    radii = map_models(
        models, radii_trained, runner=runner, data=data, n_images=n_radius,
        eps_max=radius_eps_max, steps=radius_steps, apgd_steps=apgd_steps,
        n_target_classes=apgd_target_classes, pgd_steps=ladder_pgd_steps,
        pgd_restarts=ladder_pgd_restarts, n_check=radius_check_images,
        fab_steps=fab_steps, desc="radii")
    # accuracy held fixed: the more accurate model of each seed's primary pair again, at the
    # epoch of its training whose validation accuracy is nearest the other's (weights kept by 01)
    matched = accuracy_matched_epochs(models, read_table(tables / "training.csv"),
                                      roster.family_pairs()[0])
    radii_matched = map_models(
        matched, matched_radii_trained, runner=runner, data=data, n_images=n_radius,
        eps_max=radius_eps_max, steps=radius_steps, apgd_steps=apgd_steps,
        n_target_classes=apgd_target_classes, n_check=0, methods=("autoattack",),
        desc="matched radii") \
        if len(matched) else None
_ = write_table(matched_summary(radii_matched, matched), tables / "radius_matched.csv", params)
_ = write_table(radii, tables / "radii.csv", params)
_ = write_table(radius_summary(radii, eps=eps_topolip), tables / "radius_summary.csv", params)
_ = write_table(radius_check(radii), tables / "radius_check.csv", params)
_ = write_table(robust_curve(radii), tables / "robust_curve.csv", params)
masking = masking_checks(pd.concat([curves, probes], ignore_index=True), eps=eps_topolip,
                         large_eps=masking_large_eps, tolerance=masking_tolerance,
                         zero_accuracy=masking_zero_accuracy)
_ = write_table(curves, tables / "robustness.csv", params)
_ = write_table(masking, tables / "masking.csv", params)
summary = read_table(tables / "topolip_summary.csv")
smooth = smoothness_table(summary)
_ = write_table(smooth, tables / "smoothness.csv", params)

# %% tags=["remove-input"]
curves = read_table(tables / "robustness.csv")
masking = read_table(tables / "masking.csv")
smooth = read_table(tables / "smoothness.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
_ = publish_registered("fig-robustness-curves", results_dir=results_dir, params=params,
                       seeds=seeds)
_ = publish_registered("fig-topolip-vs-drop", results_dir=results_dir, params=params,
                       seeds=seeds)
_ = publish_registered("fig-radius-curves", results_dir=results_dir, params=params,
                       seeds=seeds)
_ = publish_registered("fig-effective-robustness", results_dir=results_dir, params=params,
                       seeds=seeds)
ladder = ladder_table(curves, eps_topolip, masking=masking)
_ = glue_all(robustness_findings({"robustness": curves, "masking": masking, "smoothness": smooth,
                                  "topolip_summary": summary, "models": models}, params))
_ = glue_all(radius_findings(tables, params))
_ = glue_all(matched_findings(read_table(tables / "radius_summary.csv"),
                              read_table(tables / "radius_matched.csv")))

# %% [markdown]
# ## The attack ladder
#
# What runs, exactly (torchattacks 3.3; no attack of this project's own). On each model's
# {glue:text}`rb-n-ladder` images, at each budget $\varepsilon$ of {glue:text}`rb-eps-grid`:
#
# - **FGSM**: one step $\varepsilon\,\mathrm{sign}\,\nabla_x \mathcal{L}_{\mathrm{CE}}$;
# - **PGD**: {glue:text}`rb-pgd-steps` steps of size $2.5\,\varepsilon/${glue:text}`rb-pgd-steps`
#   from a uniform random start in the ball, repeated from {glue:text}`rb-pgd-restarts` random
#   starts on the images the earlier starts left correctly classified (`torchattacks.MultiAttack`),
#   so an image counts as robust only if every start fails;
# - **APGD-CE + APGD-T** (`autoattack` in the CSV files): `torchattacks.APGD` with the
#   cross-entropy loss ({glue:text}`rb-apgd-steps` iterations, one random start), then, on the images it left correctly classified,
#   `torchattacks.APGDT` (targeted DLR loss, {glue:text}`rb-apgd-steps` iterations per target)
#   against each of the {glue:text}`rb-apgd-targets` most likely wrong classes of the clean image
#   (the largest logits after the top one), per image the first attack that fools the model. This is the white-box half of AutoAttack's standard version under a stated
#   budget: the standard version runs 100 iterations against all 9 wrong classes, and adds
#   FAB-T and Square; the budget here is cut so that the quick book keeps its time (the paper
#   profile runs the standard iterations and targets);
# - **Square** (black box, the masking check below): `torchattacks.Square`, margin loss,
#   {glue:text}`rb-square-queries` queries per image, at the TopoLip budget
#   $\varepsilon =$ {glue:text}`rb-eps` only.
#
# ```{glue:figure} fig-robustness-curves
# :name: fig-robustness-curves
# :alt: Accuracy against attack budget for FGSM, PGD, APGD-CE + APGD-T and Square, and against severity for five corruptions, one panel per perturbation, one line per architecture.
#
# Accuracy on each seed's batch of test images against the $L_\infty$ budget $\varepsilon$
# (FGSM, PGD, APGD-CE + APGD-T, Square; pixel units) or the severity (corruptions). Lines: means
# over seeds; bands: one standard deviation over seeds.
# {glue:md}`fig-robustness-curves-provenance`
# ```
#
# At the TopoLip budget $\varepsilon =$ {glue:text}`rb-eps` the mean accuracy, weakest attack
# first, is under FGSM {glue:text}`rb-fgsm-ranking`; under PGD {glue:text}`rb-pgd-ranking`; under
# APGD-CE + APGD-T {glue:text}`rb-autoattack-ranking`; and under the black-box Square
# {glue:text}`rb-square-ranking` ({numref}`fig-robustness-curves`). APGD-CE + APGD-T lowers an
# architecture's mean accuracy below PGD's by at most {glue:text}`rb-aa-below-pgd`. Which
# family loses less, with intervals and a correction for the number of comparisons, is decided
# in {doc}`08_verdict` on the median minimal radius under the strongest attack (below), with
# the ladder's fixed budgets beside it.

# %% tags=["remove-input"]
show_table(attack_ladder_table(ladder), digits=2, na_reason="one seed: no spread",
           caption="The attack ladder at the TopoLip budget: accuracy per architecture, weak to "
                   "strong white-box attacks, then the black-box Square.")

# %% [markdown]
# ## Minimal adversarial radii: where each model breaks
#
# A fixed budget reads a floor when a model has no robust accuracy left there, and a ceiling
# when it loses none. The **minimal adversarial $L_\infty$ radius** of an image is the smallest
# budget at which it can be misclassified; one set of radii gives the robust accuracy at every
# budget (the share of images whose radius exceeds it) and the **median radius**, the budget
# at which a model keeps half its images, which is never on a floor. For every model, on its
# seed's first {glue:text}`rd-n-images` test images (the first of them those of the ladder),
# each image's radius is bracketed on the grid $\varepsilon_{\max}, \varepsilon_{\max}/4,
# \dots$ from $\varepsilon_{\max} =$ {glue:text}`rd-eps-max` and then bisected
# {glue:text}`rd-steps` times on the log scale, once with each white-box rung of the ladder
# (APGD-CE + APGD-T, PGD and FGSM, each as above, at every budget): the reported radius is the
# smallest budget tried at which the attack found an adversarial image, an upper bound on the
# true minimum, within {glue:text}`rd-width`% of the last budget that failed (the bisection's
# resolution; an attack whose success does not grow with the budget, as FGSM's need not, may
# also succeed below it). The radii lie on that grid, and a model's median (the mean of its
# two middle radii) on it or between two neighbouring points: seeds of one architecture can
# share a median, and a per-seed ratio of two medians within one grid step of 1 is below the
# bisection's resolution. Every reported image is checked (misclassified, inside $[0, 1]$ and
# within the reported norm). Of the {glue:text}`rd-n-rows` image radii of each rung, these
# were not broken at $\varepsilon_{\max}$ (censored): {glue:text}`rd-n-censored`. Why
# bisection rather than a minimum-norm attack: it measures the same attacker as the ladder's strongest rung. The cross-check is FAB
# (`torchattacks.FAB`, {glue:text}`rd-fab-steps` iterations, a minimum-norm attack) on the first
# {glue:text}`rd-check-images` images of every model: the median ratio bisection / FAB per
# model lies in {glue:text}`rd-check-ratio`, and on average {glue:text}`rd-check-within` of the
# images agree within a factor {glue:text}`rd-check-factor`; FAB broke
# {glue:text}`rd-check-only-fab` images the bisection did not.
#
# Median radius per architecture (geometric mean over seeds; pixels of $[0, 1]$): under
# APGD-CE + APGD-T {glue:text}`rd-autoattack-ranking`; under PGD {glue:text}`rd-pgd-ranking`;
# under FGSM {glue:text}`rd-fgsm-ranking` ({numref}`fig-radius-curves`). PGD's median radius
# over APGD-CE + APGD-T's, geometric mean over the models, is {glue:text}`rd-pgd-over-aa` (1:
# PGD breaks a model's images where the strongest attack does, above 1 only at larger
# budgets; both are read on the bisection's grid). Which family breaks later is decided in
# {doc}`08_verdict` on the APGD-CE + APGD-T median radius, paired by seed; the PGD and FGSM
# radii are its secondaries, and the rival claim reads FGSM against each of the two stronger
# attacks.
#
# ```{glue:figure} fig-radius-curves
# :name: fig-radius-curves
# :alt: Robust accuracy against the L-infinity budget on a log axis, one panel per attack (FGSM, PGD, APGD-CE + APGD-T), one line per trained model coloured by architecture.
#
# Robust accuracy read off the minimal radii of each white-box rung of the ladder (FGSM, PGD,
# APGD-CE + APGD-T; weak to strong) over an $\varepsilon$ grid of
# {glue:text}`rd-n-grid` budgets from {glue:text}`rd-grid` (pixel units, log axis), chosen so
# that every model starts at ≥ 0.9 and ends at ≤ 0.1 of its clean accuracy under
# APGD-CE + APGD-T; one line per model (seed), one colour per architecture; dotted: one half,
# where each line crosses its model's median radius.
# {glue:md}`fig-radius-curves-provenance`
# ```
#
# A larger radius may only say that a model learned its task better. Clean accuracy on these
# images, mean over seeds: {glue:text}`rd-acc-ranking`. To hold it fixed we fit, over all
# {glue:text}`rd-eff-n` models, the log median radius against the logit of clean accuracy
# (effective robustness, {cite:t}`taori2020measuring`; slope {glue:text}`rd-eff-slope` log
# radius per logit) and divide each model's radius by what its accuracy predicts
# ({numref}`fig-effective-robustness`). The effective radius (1: as robust as its accuracy
# predicts), geometric mean over seeds: {glue:text}`rd-eff-ranking`. It is a secondary of the
# robustness claim in {doc}`08_verdict`. The fit's population is the main models only: the
# sweep points are not measured for radii in this run, and the matched epochs below are kept
# out of it (a model's earlier epoch is not an independent model).
#
# The fit assumes one line serves both families. A second check assumes nothing: the
# **accuracy-matched pair**. For each seed, the more accurate of the ViT and the ResNet (by
# the validation accuracy of its chosen epoch) is measured again at the epoch of its own
# training whose validation accuracy is nearest the other's (training keeps every epoch's
# weights of this pair), on the same {glue:text}`rd-n-images` images:
# {glue:text}`rd-matched-epochs`. The ViT's median radius over the ResNet's, geometric mean
# over the {glue:text}`rd-matched-n` matched seeds, is {glue:text}`rd-matched-ratio` at
# matched accuracy, against {glue:text}`rd-chosen-ratio` at the chosen epochs. It is a
# secondary row of the robustness claim in {doc}`08_verdict` (the row "median minimal radius
# (APGD-CE + APGD-T), accuracy-matched epoch"). An earlier epoch is also a model earlier in
# its schedule, not only a less accurate one, so this row holds accuracy fixed but not
# training time.
#
# ```{glue:figure} fig-effective-robustness
# :name: fig-effective-robustness
# :alt: Left, clean accuracy per architecture with one point per seed; right, median minimal radius on a log axis against clean accuracy on a logit axis, one point per model, with a dashed least-squares line.
#
# Left: clean accuracy on the radius images, one point per model (seed), a bar at each
# architecture's mean. Right: median minimal radius under APGD-CE + APGD-T (log axis) against
# clean accuracy (logit axis), one point per model; dashed: the least-squares fit over every
# model. A point above the line is more robust than its clean accuracy predicts.
# {glue:md}`fig-effective-robustness-provenance`
# ```

# %% [markdown]
# ## Gradient masking
#
# A model can look robust to a gradient attack because its gradients are useless (masked or
# obfuscated), not because it is robust {cite:p}`athalye2018obfuscated`. Every model is put
# through the sanity checks of {cite:t}`carlini2019evaluating`, each with a slack of
# {glue:text}`rb-tolerance` in accuracy for the attacks' randomness (random starts, final
# iterates), against which masked gradients move accuracy by tens of points:
# the accuracy of each attack does not rise with $\varepsilon$; a PGD of
# {glue:text}`rb-pgd-steps` steps × {glue:text}`rb-pgd-restarts` starts is not weaker than a
# single {glue:text}`rb-probe-steps`-step PGD at $\varepsilon =$ {glue:text}`rb-eps`; PGD is
# not weaker than FGSM, nor APGD-CE + APGD-T than PGD, at any budget; a
# {glue:text}`rb-probe-steps`-step PGD at the large budget $\varepsilon =$
# {glue:text}`rb-large-eps` leaves at most {glue:text}`rb-zero-accuracy` accuracy (half the
# chance level); and the black-box Square is not stronger than APGD-CE + APGD-T at
# $\varepsilon =$ {glue:text}`rb-eps`. A model that fails one is flagged (`all` in
# `masking.csv`) and its robustness rows are not to be trusted.
#
# Of the {glue:text}`rb-n-attacked` models, {glue:text}`rb-n-flagged` fail a check:
# {glue:text}`rb-flagged`. Checks failed, with the number of models failing each:
# {glue:text}`rb-check-failures`.

# %% tags=["remove-input"]
show_table(masking_table(masking),
           caption="Gradient-masking checks (Carlini et al. 2019) per model; the values and "
                   "the accuracies compared are in masking.csv.")

# %% [markdown]
# ## Does a lower TopoLip go with a smaller accuracy drop?
#
# ```{glue:figure} fig-topolip-vs-drop
# :name: fig-topolip-vs-drop
# :alt: One scatter panel per perturbation kind: the end-to-end scale-free TopoLip of each trained model against its accuracy drop, with the within-kind Kendall tau in the panel title.
#
# End-to-end scale-free TopoLip $\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0$ (log axis) against
# the accuracy drop at the same perturbation, one point per trained model (architecture ×
# seed), one panel per kind; titles give Kendall's $\tau$ over all models of the kind, architectures pooled (so mostly their differences; the within-architecture test is below).
# {glue:md}`fig-topolip-vs-drop-provenance`
# ```
#
# Within architectures, pooled over the {glue:text}`rb-n-archs` architectures and the
# {glue:text}`rb-n-kinds` kinds, Kendall's $\tau$ between TopoLip and the accuracy drop is
# {glue:text}`rb-pooled-tau` (permutation p = {glue:text}`rb-pooled-p`, {glue:text}`rb-exact`
# over {glue:text}`rb-n-permutations` relabellings of the seeds; {glue:text}`rb-n-excluded`
# model-kind values within the noise floor left out). Kind by kind it ranges from
# {glue:text}`rb-tau-range`; it is positive (a lower TopoLip with a smaller drop, the direction
# the paper's argument predicts) for {glue:text}`rb-n-positive` of {glue:text}`rb-n-kinds`
# kinds, {glue:text}`rb-holm-words`. Between architectures, over
# the architecture means ($n$ = {glue:text}`rb-n-archs`, the panels of
# {numref}`fig-topolip-vs-drop` show it pooled with the seeds), $\tau$ is
# {glue:text}`rb-between-tau` (p = {glue:text}`rb-between-p`; with four units no test can go
# below p = {glue:text}`rb-between-min-p`, so this level can describe but never decide). The
# most robust architecture of a kind is also its smoothest in {glue:text}`rb-agree` kinds.

# %% tags=["remove-input"]
show_table(smoothness_tau_table(smooth), digits=3,
           caption="Kendall τ between end-to-end scale-free TopoLip and the accuracy drop: within "
                   "architectures (seeds of one architecture; the permutation relabels whole "
                   "seeds, the same for every architecture and kind), pooled and per kind, and "
                   "over the architecture means (context, never decisive with four).")

# %% [markdown]
# **Caveats.** Within an architecture there are only {glue:text}`rb-n-seeds` models (its
# seeds), so the within-architecture test has little power, and its smallest p-value is one
# over the number of relabellings. A positive $\tau$ within architectures says that, among
# models of one design trained from different seeds, the smoother ones tend to lose less; it is
# not evidence that making a given model smoother would make it robust. The measure study ({doc}`09_measures`) asks whether TopoLip ranks models by
# robustness better than simpler measures do.
