# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Against the literature
#
# **Question.** Does this companion's machinery (local Lipschitz estimates, closed-form bounds,
# attacks, confidence) reproduce what others have published with the same tools? If it does,
# its verdicts on the paper mean more; if one row fails, the reader must know.
#
# {glue:text}`lit-summary:s`
#
# **Method.** Every row is a registered external claim in `data/literature.yml`: its source
# (authors, year, arXiv id, theorem), the claim in our words, its setting beside ours and a
# consistency rule fixed before the run. {func}`topolip.evidence.literature.evaluate_literature`
# computes each verdict (*consistent*, *inconsistent* or *not comparable*, with its reason) from
# a saved table; this notebook only measures the tables the other chapters do not save.
# Rows 1 and 2 ({cite:t}`kim2021lipschitz`, {cite:t}`castin2024smooth`) use the ViTs' attention
# blocks (machinery of {doc}`00_theory` and {doc}`05_bounds_vs_measured`); row 4 (Hein et al.
# 2019) the models' softmax on scaled test images (it explains why the OOD AUROC of
# {doc}`06_ood` can fall below 0.5: a ReLU model grows more confident the further an input is
# from the data); rows 7 and 8 the saved radii and robust-accuracy curves of
# {doc}`04_robustness`. Our APGD-CE + APGD-T is "AutoAttack without FAB-T" wherever it stands
# beside RobustBench's numbers.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
lit_token_sets = 8
lit_radii = [1.0, 2.0, 4.0, 8.0, 16.0]
lit_n_values = [2, 5, 9, 17, 33, 65]
lit_castin_radius = 4.0
lit_alphas = [1.0, 10.0, 100.0, 1000.0]
lit_images = 64
lit_n_iter = 5

# %% tags=["remove-input"]
import time
from pathlib import Path

import torch
from torch import nn

from topolip.evidence.literature import (
    evaluate_literature,
    literature_sentence,
    literature_summary,
    load_literature,
)
from topolip.experiments.literature import (
    attention_growth_table,
    castin_table,
    confidence_table,
)
from topolip.nets.data import load_dataset
from topolip.nets.train import load_trained
from topolip.pipeline import notebook_parameters, read_table, write_table
from topolip.report.format import glue_all, show_parameters, show_table

params = notebook_parameters(globals(), "10_literature")
show_parameters(params)

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
models_table = read_table(tables / "models.csv")
data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
models = {(r.arch, int(r.seed)): load_trained(r.checkpoint).model
          for r in models_table.itertuples()}
x = data.x_test[:lit_images]
vits = {k: m for k, m in models.items() if k[0] == "vit"}
seconds = {}


def block_inputs(model, images):
    """The input tokens of every attention block, shape (m, n, D), by forward pre-hooks."""
    store = {}
    hooks = [m.register_forward_pre_hook(
        lambda _mod, args, kwargs, name=n: store.__setitem__(
            name, (args[0] if args else kwargs["query"]).detach().clone()), with_kwargs=True)
        for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]
    with torch.no_grad():
        model(images)
    for h in hooks:
        h.remove()
    return store


t0 = time.perf_counter()
tokens = {k: block_inputs(m, x[:lit_token_sets]) for k, m in vits.items()}
growth = attention_growth_table(vits, tokens, lit_radii, steps=lit_n_iter)
_ = write_table(growth, tables / "lit_attention_growth.csv", params)
seconds["row 1"] = time.perf_counter() - t0

t0 = time.perf_counter()
castin = castin_table(vits, lit_castin_radius, lit_n_values, steps=lit_n_iter)
_ = write_table(castin, tables / "lit_castin.csv", params)
seconds["row 2"] = time.perf_counter() - t0

t0 = time.perf_counter()
relu = {"resnet": True, "conv_stack": True, "vit": False, "attention_stack": False}
confidence = confidence_table(models, x, relu, lit_alphas)
_ = write_table(confidence, tables / "lit_confidence.csv", params)
seconds["row 4"] = time.perf_counter() - t0

t0 = time.perf_counter()
saved = {n: read_table(tables / f"{n}.csv") for n in ("radii", "robust_curve")}
saved.update(lit_attention_growth=growth, lit_castin=castin, lit_confidence=confidence)
rows = load_literature("data/literature.yml")
verdicts = evaluate_literature(saved, rows)
_ = write_table(verdicts, tables / "literature.csv", params)
seconds["rows 7, 8 and verdicts"] = time.perf_counter() - t0
print({k: round(v, 1) for k, v in seconds.items()})

_ = glue_all({"lit-summary": literature_summary(verdicts),
              "lit-sentence": literature_sentence(verdicts)})

# %% [markdown]
# ## The rows
#
# Each row names its source, the rule fixed before the run, our number with its interval and
# the verdict with its reason. Rows 1 and 2 report log-log slopes (in R and in n); row 4 the
# smallest confidence of a ReLU model at the largest scale; row 7 the largest robust accuracy;
# row 8 the paired ViT − ResNet robust accuracy.

# %% tags=["remove-input"]
show_table(verdicts[["title", "source", "rule", "our_number", "low", "high", "verdict",
                     "reason", "chapter"]],
           columns={"title": "claim", "our_number": "our number"},
           na_reason="no interval for this row")

# %% [markdown]
# ## Settings beside theirs
#
# The rows' settings differ from the sources' (MNIST, models of about 80k parameters, one
# shared recipe); every row of `data/literature.yml` states both. Row 4 applies to
# piecewise-affine models only: our ViT (GELU, softmax) is outside the theorem; its confidence
# is shown beside the ReLU models'.

# %% tags=["remove-input"]
show_table(confidence.groupby(["arch", "alpha"], as_index=False)["confidence"].mean(),
           columns={"confidence": "mean max-softmax confidence"})

# %% tags=["remove-input"]
assert set(verdicts["verdict"]) <= {"consistent", "inconsistent", "not comparable"}
assert (verdicts["reason"].str.len() > 0).all()
