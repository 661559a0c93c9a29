"""The prepared GPU script's TopoLip part (benchmarks/paper_topolip.py) runs every paper-profile
architecture on CIFAR-shaped input: a machine with a GPU gets one try, so it must not fail there
on something a CPU run would have caught."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from topolip.topology.spec import TopoLipSpec

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper_topolip():
    spec = importlib.util.spec_from_file_location(
        "paper_topolip", ROOT / "benchmarks" / "paper_topolip.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("arch", yaml.safe_load((ROOT / "data/profiles/paper.yml").read_text())
                         ["archs"])
def test_paper_size_models_time_every_phase(paper_topolip, arch):
    paper = yaml.safe_load((ROOT / "data/profiles/paper.yml").read_text())
    row = paper_topolip.time_model(arch, paper[arch], 12, TopoLipSpec(), "cpu")
    assert row["arch"] == arch and row["n_points"] == 12 and row["probe_points"] >= 3
    phases = ("forward_s", "distance_matrices_s", "clean_diagrams_s", "table_s")
    assert all(row[k] > 0 for k in phases)
    assert 0 < row["cpu_share"] < 1
