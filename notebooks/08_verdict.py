# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # What our runs show about the paper's claims
#
# The registry `data/claims.yml` lists the paper's claims as we read them in its abstracts (our
# paraphrase, not quotations) and our own theoretical claim, each with a check
# (`topolip.claims.CHECKS`). Each check reads this run's tables and gives a verdict per
# comparison: *supported*, *contradicted*, or *inconclusive* when the two architectures' seed
# means lie within one pooled standard deviation of each other. Attention-based models are
# compared with convolution-based ones in two pairs: ViT against ResNet, and the plain
# attention-only stack against the plain convolution-only stack. Nothing here is written by
# hand: change the parameters and the verdicts follow the numbers.

# %% tags=["parameters"]
results_dir = "results/quick"

# %%
from pathlib import Path

import pandas as pd

from topolip.claims import evaluate, load_claims
from topolip.pipeline import read_table, write_table

tables_dir = Path(results_dir) / "tables"
claims = load_claims("data/claims.yml")
tables = {name: read_table(tables_dir / f"{name}.csv")
          for name in ("topolip", "topolip_summary", "robust_topolip_summary",
                       "topolip_vs_accuracy", "topolip_accuracy_correlations",
                       "ood_topolip_summary", "ood_behaviour")}
verdicts = evaluate(claims, tables)
_ = write_table(verdicts, tables_dir / "verdicts.csv",
                {"results_dir": results_dir, "claims": "data/claims.yml"})

# %% [markdown]
# ## The claims

# %%
pd.DataFrame([{"id": c.id, "statement": c.statement, "source": c.source} for c in claims]).style.hide(axis="index")

# %% [markdown]
# ## Verdicts
#
# `attention` and `convolution` are the seed means of the compared quantity (the claim predicts
# the lower value for attention, except for the AUROC, where it predicts the higher one),
# `spread` the pooled standard deviation over seeds.

# %%
verdicts.style.format(precision=4, na_rep="").hide(axis="index")

# %%
counts = verdicts.groupby(["claim", "verdict"]).size().unstack(fill_value=0)
counts

# %% [markdown]
# The certified envelope is a theorem, not an empirical claim: a violation is a bug in the
# diagram or distance code, so this notebook fails if it is ever contradicted.

# %%
envelope = verdicts[verdicts["claim"] == "envelope"]
assert (envelope["verdict"] == "supported").all(), envelope
for claim_id, row in counts.iterrows():
    parts = ", ".join(f"{n} {v}" for v, n in row.items() if n)
    print(f"{claim_id}: {parts}")
