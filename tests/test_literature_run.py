"""The chapter "Against the literature" on one real quick run's tables.

``tests/expect/literature/`` holds the tables ``10_literature`` wrote (and the APGD radii and
robust-accuracy curve of ``04_robustness`` it reads, trimmed to APGD-CE + APGD-T) with the text
the executed notebook glued (``glued.json``); ``refresh.py`` there refreshes them from a run. So
these tests prove that the verdicts and the chapter's sentences follow from the saved tables
through the library, and that a planted change of a table flips its row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from topolip.evidence.literature import evaluate_literature, load_literature
from topolip.report.literature import literature_findings

ROOT = Path(__file__).resolve().parents[1]
EXPECT = ROOT / "tests/expect/literature"
NAMES = ("lit_attention_growth", "lit_castin", "lit_castin_real", "lit_betti",
         "lit_confidence", "lit_ood_h0", "lit_adv_share", "radii", "robust_curve")


@pytest.fixture(scope="module")
def run():
    tables = {n: pd.read_csv(EXPECT / f"{n}.csv") for n in NAMES}
    return tables, load_literature(ROOT / "data/literature.yml")


def test_every_verdict_follows_from_the_saved_tables(run):
    tables, rows = run
    saved = pd.read_csv(EXPECT / "literature.csv")
    got = evaluate_literature(tables, rows)
    assert list(got["id"]) == [r["id"] for r in rows]
    assert list(got["verdict"]) == list(saved["verdict"])
    assert list(got["reason"]) == list(saved["reason"])
    pd.testing.assert_series_equal(got["our_number"], saved["our_number"], rtol=1e-9)


def test_the_chapters_sentences_are_the_glued_text(run):
    tables, rows = run
    glued = json.loads((EXPECT / "glued.json").read_text())
    found = literature_findings({**tables, "literature": evaluate_literature(tables, rows)})
    assert found == glued


def test_a_lowered_bound_flips_kims_row_and_the_sentence(run):
    tables, rows = run
    t = dict(tables)
    growth = t["lit_attention_growth"].copy()
    growth.loc[growth.index[0], "bound"] = 0.5 * growth.loc[growth.index[0], "measured"]
    t["lit_attention_growth"] = growth
    v = evaluate_literature(t, rows).set_index("id")
    assert v.loc["kim-dot-product-not-lipschitz", "verdict"] == "inconsistent"
    found = literature_findings({**t, "literature": v.reset_index()})
    assert "(failing: Dot-product attention is not Lipschitz)" in found["lit-sentence"]
    assert "exceeds our bound in 1 of them" in found["lit-attention-text"]


def test_relu_models_of_the_run_are_the_piecewise_affine_ones(run):
    tables, _ = run
    conf = tables["lit_confidence"]
    assert set(conf.loc[conf["relu"], "arch"]) == {"resnet", "conv_stack"}
    assert set(conf.loc[~conf["relu"], "arch"]) == {"vit", "attention_stack"}
