"""The roster (topolip.roster): one declaration of the architectures, perturbation kinds and
out-of-distribution sets, that the models, attacks, corruptions, sets, parameters, labels,
palette and claims all agree with."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from topolip import roster

ROOT = Path(__file__).resolve().parents[1]


def test_every_buildable_architecture_is_in_the_roster_in_order():
    from topolip.nets.models import ARCHITECTURES, build_model

    assert tuple(ARCHITECTURES) == roster.arch_names()
    for name in roster.arch_names():
        assert build_model(name).arch == name  # the built model carries its roster name


def test_kinds_and_sets_match_the_modules_that_implement_them():
    from topolip.perturbations.attacks import ATTACKS, PERTURBATIONS
    from topolip.perturbations.corruptions import CORRUPTIONS
    from topolip.perturbations.ood_sets import OOD_SETS
    from topolip.roster import LADDER

    assert tuple(ATTACKS) == roster.kind_names("adversarial")
    assert tuple(CORRUPTIONS) == roster.kind_names("corruption")
    assert tuple(PERTURBATIONS) == roster.kind_names()
    assert {k: roster.kind(k).strength for k in PERTURBATIONS} == PERTURBATIONS
    assert tuple(OOD_SETS) == roster.ood_names()
    assert LADDER == roster.LADDER and set(LADDER) <= set(roster.kind_names("adversarial"))


def test_labels_are_unique_and_names_distinct():
    entries = [*roster.ARCHS, *roster.KINDS, *roster.OOD_SETS, *roster.GROUPS]
    names = [e.name for e in entries]
    labels = [e.label for e in entries]
    assert len(set(names)) == len(names)
    assert len(set(labels)) == len(labels)
    assert all(e.label and e.label == e.label.strip() for e in entries)


def test_styles_tell_the_families_apart():
    for a in roster.ARCHS:
        assert a.family in roster.ARCH_FAMILIES
        assert a.color.startswith("#") and len(a.color) == 7
        assert a.dashes == ((4, 2) if a.plain else ())
    assert len({a.color for a in roster.ARCHS}) == len(roster.ARCHS)
    for family in roster.ARCH_FAMILIES:
        assert len({roster.arch(a).marker for a in roster.arch_names(family)}) == 1
    assert len({roster.arch(roster.arch_names(f)[0]).marker for f in roster.ARCH_FAMILIES}) == 2
    assert all(k.family in roster.KIND_FAMILIES for k in roster.KINDS)


def test_family_pairs_pair_like_with_like():
    pairs = roster.family_pairs()
    assert pairs == (("vit", "resnet"), ("attention_stack", "conv_stack"))
    for att, conv in pairs:
        a, c = roster.arch(att), roster.arch(conv)
        assert (a.family, c.family) == ("attention", "convolution") and a.plain == c.plain


@pytest.mark.parametrize("lookup, what", [
    (roster.arch, "architecture"), (roster.kind, "perturbation kind"),
    (roster.ood_set, "out-of-distribution set"), (roster.group, "group"),
    (roster.arch_label, "architecture"), (roster.kind_label, "kind, set or group"),
])
def test_unknown_names_raise_naming_the_name_and_the_known_ones(lookup, what):
    with pytest.raises(KeyError, match=rf"unknown {what} 'nope'; known: \[") as err:
        lookup("nope")
    assert isinstance(err.value, roster.UnknownName)
    with pytest.raises(KeyError, match="unknown"):
        lookup(["not", "hashable"])


def test_kind_label_refuses_an_architecture_and_families_are_checked():
    with pytest.raises(KeyError, match="'vit' is an architecture"):
        roster.kind_label("vit")
    with pytest.raises(ValueError, match="unknown architecture family 'mlp'"):
        roster.arch_names("mlp")
    with pytest.raises(ValueError, match="unknown kind family 'x'"):
        roster.kind_names("x")


def test_display_label_falls_back_for_pooled_groups_and_columns():
    assert roster.label("autoattack") == "APGD-CE + APGD-T"
    assert roster.label("inverted_mnist") == "inverted MNIST"
    assert roster.label("pooled") == "pooled" and roster.label("end_to_end") == "end to end"
    assert roster.label(0.5) == "0.5"


def test_report_figures_claims_and_parameters_read_the_roster():
    from topolip.evidence import claims
    from topolip.pipeline import param_schema as params
    from topolip.report import figures
    from topolip.report import format as report

    assert report.ARCH_LABELS == {a.name: a.label for a in roster.ARCHS}
    assert report.ARCH_COLORS == {a.name: a.color for a in roster.ARCHS}
    assert report.ARCH_MARKERS == {a.name: a.marker for a in roster.ARCHS}
    assert report.ARCH_DASHES == {a.name: a.dashes for a in roster.ARCHS}
    assert report.KIND_LABELS["gaussian_noise"] == roster.kind_label("gaussian_noise")
    assert report.arch_label("vit") == "ViT" and roster.label("new_kind") == "new kind"
    assert figures._name("autoattack") == roster.label("autoattack")
    assert not hasattr(report, "kind_label")  # one lenient label: roster.label
    assert figures._order(pd.Series(["conv_stack", "resnet", "vit", "attention_stack"])) == [
        "vit", "attention_stack", "resnet", "conv_stack"]
    assert claims.FAMILY_PAIRS == roster.family_pairs()
    assert tuple(params._MODEL_GROUPS) == roster.arch_names()
    assert params._archs() == roster.arch_names()
    assert params._ood_sets() == roster.ood_names()


#: every module of the torch-free evidence and report layers (a new file is checked too)
_TORCH_FREE_MODULES = sorted(str(p.relative_to(ROOT / "topolip"))
                             for layer in ("evidence", "report")
                             for p in (ROOT / "topolip" / layer).glob("[!_]*.py"))


def test_the_layers_checked_for_spelled_names_are_found():
    assert {"evidence/claims.py", "report/figures.py", "report/format.py"} <= set(
        _TORCH_FREE_MODULES)


@pytest.mark.parametrize("module", _TORCH_FREE_MODULES)
def test_the_torch_free_layers_do_not_spell_the_roster_out(module):
    """No table of architecture names outside the roster: the four names appear at most in
    docstrings' examples, never as a literal of the code."""
    tree = ast.parse((ROOT / "topolip" / module).read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                and isinstance(n.value, str) and id(n) not in docstrings]
    assert not set(literals) & set(roster.arch_names()), module


def test_the_roster_is_torch_free_and_imports_nothing_of_topolip():
    imports = [n for n in ast.walk(ast.parse((ROOT / "topolip" / "roster.py").read_text()))
               if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name for n in imports if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module for n in imports if isinstance(n, ast.ImportFrom)}
    assert modules <= {"__future__", "dataclasses"}, modules
