# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # What our runs show about the paper's claims
#
# **Question.** Which of the paper's claims, as we read them in its abstracts (our paraphrase,
# not quotations, in `data/claims.yml`), does this run support, which does it contradict, and
# where is the evidence too weak to say? And how large an effect could this design see?
#
# **Method.** The trained model is the unit: one value per architecture, seed and
# perturbation (or data set). Attention-based models are compared with convolution-based ones
# in two pairs, the ViT against the ResNet and the plain attention-only stack against the
# plain convolution-only stack, **paired by seed** (the architectures of a seed see the same
# images): a paired t test on the per-seed differences, with $n - 1$ degrees of freedom for
# $n$ seed pairs. TopoLip is a ratio, so it is compared on the log scale and its effect is a
# ratio (attention / convolution, a geometric-mean ratio with its interval); accuracy drops
# and AUROCs are compared raw. A seed's value already holds the variance of its own images, so
# no image resampling is added on top, except for the OOD AUROC, where every seed is scored on
# the same images and the image-resampling standard error of the paired difference is added.
# A TopoLip pair is dropped when either model's input displacement lies within the noise
# floor, and each row says how many were.
#
# **The rule.** Each claim names **one primary comparison** in `data/claims.yml`, with the
# reason for the choice written beside it; it is tested alone at $\alpha$. The claim's other comparisons are **secondary**: one
# family per claim, corrected by Holm's step-down procedure {cite:p}`holm1979simple`. A row is
# *supported* or *contradicted* only when its deciding p-value (the primary's own, a
# secondary's Holm-adjusted one) is below $\alpha$ with at least 3 seed pairs; otherwise it is
# *inconclusive* (or *not enough seeds*). The interval shown with a row is the one its
# decision uses: the t interval at coverage $1 - \alpha\,p/p_{\text{Holm}}$, which excludes no
# difference exactly when the row is decisive. The association of smoothness with robustness
# is tested within architectures (the seeds of one architecture are its models), with one
# permutation of the seeds shared by every perturbation kind, since the same models appear in
# every kind; the association of the architecture means is reported beside it, with its $n$.
# `tests/test_calibration.py` runs these rules on simulated books in the chain's table layout
# and checks, by a one-sided binomial test at 1% over 200 to 360 books, that no family decides
# more often than $\alpha$ when nothing is there: with exchangeable seeds, with architectures
# that differ in every measure, with a hard test batch shared by the architectures of a seed,
# and with noise-floor flags that fall more often on the smoother models of one family. The
# same tests fail on the errors a reviewer would suspect: a z test in place of the paired t,
# the association on raw values under a hard batch, and raw values relabelled per
# architecture instead of by whole seeds.

# %% tags=["parameters"]
results_dir = "results/quick"
alpha = 0.05

# %% tags=["remove-input"]
from pathlib import Path

from IPython.display import Markdown, display

from topolip.evidence.calibration import power_table
from topolip.evidence.claims import evaluate, load_claims, with_options
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import read_table, write_table
from topolip.report.findings import primary_choices, verdict_findings
from topolip.report.format import glue_all, show_parameters, show_table
from topolip.report.verdict_sentences import claim_findings
from topolip.report.verdict_tables import every_row_table, ladder_table, primary_table
from topolip.roster import claim_title

params = {**notebook_parameters(globals(), "08_verdict"), "claims": "data/claims.yml"}
show_parameters(params)

# %% tags=["hide-input"]
tables_dir = Path(results_dir) / "tables"
claims = with_options(load_claims("data/claims.yml"), alpha=alpha)
names = ("topolip", "topolip_summary", "smoothness", "robustness", "radius_summary",
         "ood_topolip_summary", "ood_resamples", "ood_behaviour")
tables = {name: read_table(tables_dir / f"{name}.csv") for name in names}
if (tables_dir / "radius_matched.csv").exists():  # the accuracy-matched pair (04)
    tables["radius_matched"] = read_table(tables_dir / "radius_matched.csv")
if (tables_dir / "masking.csv").exists():   # gradient-masking checks (04), flags only
    tables["masking"] = read_table(tables_dir / "masking.csv")
verdicts = evaluate(claims, tables)
_ = write_table(verdicts, tables_dir / "verdicts.csv", params)
envelope = verdicts[verdicts["claim"] == "envelope"]
assert (envelope["verdict"] == "supported").all(), "the certified envelope is a theorem: a bug"

# %% tags=["remove-input"]
verdicts = read_table(tables_dir / "verdicts.csv")
power = power_table(verdicts, alpha=alpha)
found = claim_findings(verdicts, power, alpha=alpha)
seeds = sorted(int(s) for s in tables["topolip_summary"]["seed"].unique())
_ = publish_registered("fig-verdicts", results_dir=results_dir, params=params, seeds=seeds)
_ = glue_all(verdict_findings({"verdicts": verdicts}, claims=claims, alpha=alpha,
                              n_seeds=len(seeds), power=power))

# %% [markdown]
# ## Families and the book-wide error rate
#
# With {glue:text}`headline-n-seeds` seeds per architecture, the run makes
# {glue:text}`headline-n-comparisons` tests in {glue:text}`headline-n-families` families
# ({glue:text}`headline-n-primary` primary comparisons, each a family of one, and each claim's
# family of secondaries where it can decide at this seed count). Each family keeps its chance
# of any false decisive verdict at $\alpha =$ {glue:text}`headline-alpha`; over the whole book that chance is at most
# {glue:text}`headline-error-bound` (the number of families times $\alpha$, Bonferroni's bound
# over families). A reader who wants one error rate for the whole book should read only the
# primaries, or multiply.
#
# ## The primary comparison of each claim

# %% tags=["remove-input"]
show_table(primary_table(verdicts, power),
           digits=3,
           caption="The one primary comparison of each claim, tested alone at α. Effect: "
                   "the ratio attention / convolution for TopoLip (log-scale paired t), the "
                   "difference attention − convolution otherwise (a Kendall τ for the "
                   "association). Pairs: seed pairs used; dropped: pairs left out because a "
                   "model's input displacement lies within the noise floor (the association "
                   "counts model-kind values). Detectable: the minimum detectable effect of "
                   "this design at 80% power (noncentral t, from the run's own per-seed "
                   "differences); power at target: the power for a 1.5× TopoLip ratio, a 1.3× "
                   "median-radius ratio, a 0.10 accuracy-drop or a 0.05 AUROC difference.")

# %% [markdown]
# **How each primary was chosen.** A primary is fixed by a rule written in `data/claims.yml`
# before the run that decides it; {glue:text}`vd-primaries-after`. The table gives each rule.

# %% tags=["remove-input"]
choices, choice_words = primary_choices(claims)
_ = glue_all(choice_words)
choices["claim"] = choices["claim"].map(claim_title)
show_table(choices, columns={"claim": "claim", "primary": "primary comparison",
                             "rule": "rule that chose it", "chosen": "fixed"},
           caption="How the primary comparison of each claim was chosen (data/claims.yml).")

# %% [markdown]
# ## What this run shows
#
# The paragraph below is computed from the verdicts table, not written by hand: it names the
# direction of every decisive row, with the interval the decision used, and the rows whose
# deciding p-value sits near $\alpha$, where a seed or a Monte-Carlo draw could move the
# verdict. An *inconclusive* row is absence of evidence, not evidence of no difference: the
# table above says how large a difference the design could have seen.

# %% tags=["remove-input"]
display(Markdown(found["shows"]))

# %% [markdown]
# ## The attack ladder and the rival claim
#
# *Attention is more robust* is decided on the **median minimal adversarial radius** of each
# model ({doc}`04_robustness`): the $L_\infty$ budget at which APGD-CE + APGD-T leaves half
# the images, compared as a paired ratio attention / convolution on the log scale. The median
# radii under PGD and FGSM, and the fixed-budget rungs of the attack ladder (FGSM, PGD,
# APGD-CE + APGD-T at the TopoLip budget), are secondaries, and a rung where any model of
# either side (one seed) keeps a robust accuracy of at most {glue:text}`vd-floor-low` or at
# least {glue:text}`vd-floor-high` of the images is *floor/ceiling*: at the floor that model's
# accuracy drop measures its clean accuracy, at the ceiling the attack hardly moves it, so the
# row is not tested and leaves the Holm family (dropping the floored seeds instead would pick
# the pairs by their outcome). A fixed-budget rung is flagged when its verdict differs from
# another rung's at the same budget, or when a model of the pair failed a gradient-masking
# check; the radius rows carry no such flag, since the rival claim below tests how the radius
# ratio changes with the attack. The rival claim *self-attention helps only against weak
# attacks* tests, per seed, whether attention's radius ratio to convolution is larger under
# FGSM than under APGD-CE + APGD-T (its primary, off the floor by construction), as a
# secondary whether it is larger under FGSM than under PGD (the attack the counter-result
# names), and the same two contrasts on the accuracy drops at the TopoLip budget where both
# sides are off the floor.

# %% tags=["remove-input"]
show_table(ladder_table(verdicts),
           digits=3, caption="Robustness, attention against convolution: the median-radius "
                             "ratio (attention / convolution; above 1: attention more robust), "
                             "the accuracy drop per rung of the ladder (attention − "
                             "convolution), and for the rival claim the change of attention's "
                             "advantage from the strong to the weak attack (a ratio of radius "
                             "ratios above 1, or an accuracy-drop change below 0: the advantage "
                             "is larger against the weak attack).")

# %% [markdown]
# ## Every comparison
#
# ```{glue:figure} fig-verdicts
# :name: fig-verdicts
# :alt: Forest plot, one panel per claim: for each architecture pair and perturbation or data set, the effect attention minus convolution (a log ratio for TopoLip) with the interval its verdict uses, coloured by verdict.
#
# Every architecture comparison of every claim: the effect (attention − convolution; for
# TopoLip the log of the ratio) with the interval its verdict uses (95% for a primary, the
# Holm-consistent coverage for a secondary), coloured by verdict.
# {glue:md}`fig-verdicts-provenance`
# ```
#
# Per claim, over its tested rows ({numref}`fig-verdicts`):
#
# - *Attention is smoother* (scale-free TopoLip; raw TopoLip is one secondary row):
#   {glue:text}`headline-attention-smoother`.
# - *Attention is more robust*: {glue:text}`headline-attention-more-robust`.
# - *Self-attention helps only against weak attacks* (rival claim):
#   {glue:text}`headline-attention-helps-only-weak`.
# - *Attention is smoother on out-of-distribution data*:
#   {glue:text}`headline-attention-smoother-ood`.
# - *Attention separates out-of-distribution data better*:
#   {glue:text}`headline-attention-ood-robust`.
# - *Smoothness goes with robustness* (within architectures):
#   {glue:text}`headline-smoothness-robustness`.
# - The certified envelope held on every layer (largest bottleneck/envelope ratio
#   {glue:text}`headline-envelope-ratio`); it is a theorem, and this notebook fails if it is ever
#   violated.
#
# The table lists every row; `tables/verdicts.csv` holds them with their standard errors,
# degrees of freedom, Monte-Carlo errors and details.

# %% tags=["remove-input"]
show_table(every_row_table(verdicts),
           digits=3,
           caption="Every row: its verdict, then the effect (a ratio for TopoLip, a difference "
                   "otherwise, Kendall τ for an association) with the interval its verdict "
                   "uses and that interval's coverage, the deciding p-value (primary: its own; "
                   "secondary: Holm within the claim; context: reported only), seed pairs (or "
                   "model observations), pairs dropped for the noise floor.")

# %% [markdown]
# **Caveats.** The verdicts are about this run: small capacity-matched models, short
# training, MNIST digits in the quick profile (the paper used CIFAR-10, which the paper
# profile loads). The claims are our paraphrases of the abstracts; the paper's own experiments
# may define smoothness and robustness differently. A primary that lost pairs to the noise
# floor has less power than the table's design value suggests; its row says how many it lost.
