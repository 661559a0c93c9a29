"""``topolip diff A B``: the verdicts, glued numbers and tables that changed between two results
folders, on hand-made folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topolip.cli import main
from topolip.report.diff import diff_results, format_diff

VERDICTS_A = """claim,comparison,group,measure,verdict,effect,low,high,pvalue,p_adjusted
smooth,vit_vs_resnet,fgsm,end_to_end,supported,-0.50,-0.80,-0.20,0.004,0.012
smooth,vit_vs_resnet,pgd,end_to_end,inconclusive,-0.10,-0.40,0.20,0.30,0.60
robust,vit_vs_resnet,autoattack,accuracy_drop,supported,-0.20,-0.30,-0.10,0.001,0.001
envelope,all,,bottleneck,supported,,,,,
"""


def _folder(root: Path, name: str, verdicts: str, glue: dict | None = None,
            summary: str = "arch,seed,acc\nvit,0,0.916\nresnet,0,0.900\n") -> Path:
    tables = root / name / "tables"
    tables.mkdir(parents=True)
    (tables / "verdicts.csv").write_text(verdicts)
    (tables / "summary.csv").write_text(summary)
    (tables / "verdicts.json").write_text("{}")  # sidecars are not compared
    if glue is not None:
        (root / name / "glue.json").write_text(json.dumps(glue))
    return root / name


def test_identical_folders_have_no_change(tmp_path):
    a = _folder(tmp_path, "a", VERDICTS_A, {"acc-vit": "0.916"})
    b = _folder(tmp_path, "b", VERDICTS_A, {"acc-vit": "0.916"})
    d = diff_results(a, b)
    assert not d.verdict_changed and d.verdicts == [] and d.glue == [] and d.tables == []
    assert d.n_verdicts == 4 and d.n_tables_equal == 2
    assert main(["diff", str(a), str(b)]) == 0


def test_a_flipped_verdict_its_interval_and_p(tmp_path, capsys):
    flipped = (VERDICTS_A
               .replace("supported,-0.50,-0.80,-0.20,0.004,0.012",
                        "inconclusive,-0.45,-0.85,0.05,0.04,0.08")
               .replace("-0.10,-0.40,0.20,0.30,0.60", "-0.10,-0.40,0.20,0.30,0.62"))
    a = _folder(tmp_path, "a", VERDICTS_A, {"acc-vit": "0.916", "n-models": "20"})
    b = _folder(tmp_path, "b", flipped, {"acc-vit": "0.921", "n-models": "20"},
                summary="arch,seed,acc\nvit,0,0.921\nresnet,0,0.900\n")
    d = diff_results(a, b)
    assert d.verdict_changed
    first, second = d.verdicts
    assert first.key == ("smooth", "vit_vs_resnet", "fgsm", "end_to_end")
    assert first.decision_changed
    assert first.changed[0] == "verdict"
    assert set(first.changed) == {"verdict", "effect", "low", "high", "pvalue", "p_adjusted"}
    assert second.key == ("smooth", "vit_vs_resnet", "pgd", "end_to_end")
    assert not second.decision_changed
    assert second.changed == ("p_adjusted",)
    assert d.glue == [("acc-vit", "0.916", "0.921")]
    assert d.tables == [("summary.csv", "1 of 4 numeric cells moved (most: row 0 acc 0.916 "
                                        "-> 0.921)"),
                        ("verdicts.csv", "6 of 20 numeric cells moved (most: row 0 pvalue "
                                         "0.004 -> 0.04); 1 text cells differ")]
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert ("smooth / vit_vs_resnet [fgsm] (end_to_end): supported -> inconclusive; "
            "interval [-0.8, -0.2] -> [-0.85, 0.05]; effect -0.5 -> -0.45; pvalue 0.004 -> 0.04; "
            "p_adjusted 0.012 -> 0.08") in out
    assert "verdicts: 1 of 4 changed, 1 more moved with the same decision" in out
    assert "acc-vit: 0.916 -> 0.921" in out


def test_the_tolerance_and_the_new_columns_of_a_redesigned_table(tmp_path):
    # b has the new columns role/family (compared only where both have them) and a p that
    # moved by 0.05% (inside the default relative tolerance 1e-3)
    redesigned = "role,family," + VERDICTS_A.replace("\n", "\nprimary,smooth,")[:-len(
        "primary,smooth,")]
    redesigned = redesigned.replace("0.30,0.60", "0.30,0.6003")
    a = _folder(tmp_path, "a", VERDICTS_A)
    b = _folder(tmp_path, "b", redesigned.replace("role,family,claim", "role,family,claim", 1))
    d = diff_results(a, b)
    assert not d.verdict_changed and d.verdicts == []
    assert d.tables[0][0] == "verdicts.csv" and "columns" in d.tables[0][1]
    assert diff_results(a, b, rtol=1e-6).verdicts[0].changed == ("p_adjusted",)


def test_added_and_removed_rows_and_tables(tmp_path):
    a = _folder(tmp_path, "a", VERDICTS_A)
    b = _folder(tmp_path, "b", VERDICTS_A.replace(
        "robust,vit_vs_resnet,autoattack", "robust,vit_vs_resnet,square"))
    (b / "tables/masking.csv").write_text("arch,check,passed\nvit,all,True\n")
    d = diff_results(a, b)
    assert d.verdict_changed
    kinds = [(v.key[2], v.before is None, v.after is None) for v in d.verdicts]
    assert kinds == [("autoattack", False, True), ("square", True, False)]
    assert ("masking.csv", f"only in {b}") in d.tables
    text = "\n".join(format_diff(d))
    assert "robust / vit_vs_resnet [autoattack] (accuracy_drop): removed (was supported)" in text
    assert "robust / vit_vs_resnet [square] (accuracy_drop): new, supported" in text


def test_secondaries_of_one_pair_are_told_apart_by_their_measure(tmp_path):
    # three detectors of one claim at one pair and group: a change in the last is its own
    three = ("claim,comparison,group,measure,verdict,effect\n"
             "ood,vit_vs_resnet,photo,auroc,supported,0.53\n"
             "ood,vit_vs_resnet,photo,auroc_max_logit,supported,0.69\n"
             "ood,vit_vs_resnet,photo,auroc_energy,supported,0.70\n")
    a = _folder(tmp_path, "a", three)
    b = _folder(tmp_path, "b", three.replace("supported,0.70", "inconclusive,0.10"))
    (change,) = diff_results(a, b).verdicts
    assert change.key == ("ood", "vit_vs_resnet", "photo", "auroc_energy")
    assert change.changed == ("verdict", "effect")
    # a row added before the others does not shift them: only the new one is new
    c = _folder(tmp_path, "c", three.replace(
        "measure,verdict,effect\n", "measure,verdict,effect\nood,vit_vs_resnet,photo,"
        "auroc_knn,inconclusive,0.01\n"))
    (added,) = diff_results(a, c).verdicts
    assert added.before is None and added.key[3] == "auroc_knn"
    assert ("  ood / vit_vs_resnet [photo] (auroc_knn): new, inconclusive"
            in format_diff(diff_results(a, c)))
    # an older table without the measure column still compares, by claim, pair and group
    old = _folder(tmp_path, "old", "claim,comparison,group,verdict\nood,vit_vs_resnet,photo,"
                  "supported\n")
    keys = [v.key for v in diff_results(old, a).verdicts]
    assert keys == [("ood", "vit_vs_resnet", "photo #2", ""), ("ood", "vit_vs_resnet",
                                                             "photo #3", "")]


def test_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results folder"):
        diff_results(tmp_path / "missing", tmp_path)
    with pytest.raises(ValueError, match="rtol"):
        diff_results(tmp_path, tmp_path, rtol=-1)
    assert main(["diff", str(tmp_path / "missing"), str(tmp_path)]) == 2


def test_folders_without_glue_say_not_compared(tmp_path):
    a = _folder(tmp_path, "a", VERDICTS_A, {"acc-vit": "0.916"})
    b = _folder(tmp_path, "b", VERDICTS_A)  # no glue.json
    lines = format_diff(diff_results(a, b))
    assert f"glued numbers: not compared (no glue.json in {b})" in lines
    same = format_diff(diff_results(a, _folder(tmp_path, "c", VERDICTS_A, {"acc-vit": "0.916"})))
    assert "glued numbers: none moved" in same


GLUER = '''# %% tags=["parameters"]
results_dir = "results/t"
acc = 0.916

# %%
from pathlib import Path
from myst_nb import glue
(Path(results_dir) / "tables").mkdir(parents=True, exist_ok=True)
(Path(results_dir) / "tables" / "summary.csv").write_text(f"arch,acc\\nvit,{acc}\\n")
glue("acc-vit", f"{acc:.3f}", display=False)
'''


def test_the_chain_writes_glue_json_that_diff_compares(tmp_path):
    from topolip.pipeline.runner import run_chain

    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "01_glue.py").write_text(GLUER)
    run_chain(root, {}, log=lambda _: None)
    glue = root / "results/t/glue.json"
    assert json.loads(glue.read_text()) == {"01_glue::acc-vit": "0.916"}
    before = tmp_path / "before"
    (root / "results/t").rename(before)
    run_chain(root, {"acc": 0.921}, log=lambda _: None)
    d = diff_results(before, root / "results/t")
    assert d.no_glue == ()
    assert d.glue == [("01_glue::acc-vit", "0.916", "0.921")]
    assert "glued numbers: 1 moved" in format_diff(d)
