"""Hostile inputs to the parameters, the runner and the command line (issue 11).

Every bad value is refused before anything runs, in one line naming the parameter, the value,
what is allowed and where it came from; a failed notebook leaves no partial table and names
its cell; the command line never prints a traceback for a user's mistake.
"""

import math
import shutil
from pathlib import Path

import pytest
import yaml

from topolip import roster
from topolip.cli import main
from topolip.pipeline.param_schema import (
    SCHEMA,
    ParameterError,
    describe_schema,
    schema_defaults,
    validate_params,
)
from topolip.pipeline.params import load_params, load_profile
from topolip.pipeline.runner import NotebookFailed, run_chain

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    shutil.copytree(ROOT / "data" / "profiles", root / "data" / "profiles")
    return root


# --------------------------------------------------------------------------- the schema


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_schema_describes_every_profile_parameter(profile):
    params = load_profile(profile, root=ROOT)
    assert sorted(set(params) - set(SCHEMA)) == []
    validated, sources = load_params(profile, root=ROOT)
    assert validated == params  # the shipped profiles are valid and unchanged
    assert set(sources.values()) == {f"profile {ROOT / 'data' / 'profiles' / profile}.yml"}


def test_schema_defaults_of_the_statistics_parameters():
    assert schema_defaults() == {"n_boot": 2000, "min_accuracy": 0.5, "n_image_resamples": 20,
                                 "alpha": 0.05,
                                 "scheduler": "local", "n_workers": None,
                                 "scheduler_timeout": 20.0,
                                 # 10_literature's settings (topolip.experiments.literature)
                                 "lit_token_sets": 8, "lit_radii": [1.0, 2.0, 4.0, 8.0, 16.0],
                                 "lit_n_values": [2, 5, 9, 17, 33, 65], "lit_castin_radius": 4.0,
                                 "lit_alphas": [1.0, 10.0, 100.0, 1000.0], "lit_images": 64,
                                 "lit_n_iter": 5, "lit_n_points": 100, "lit_seeds": 5,
                                 "lit_mlp_epochs": 30, "lit_eps_adv": 0.15}
    for name in ("n_boot", "n_image_resamples", "alpha", "seeds"):
        assert any(line.startswith(f"{name}: ") for line in describe_schema())


def test_schema_kinds_match_the_library():
    from topolip.nets.models import ARCHITECTURES
    from topolip.perturbations.attacks import ATTACKS
    from topolip.perturbations.corruptions import CORRUPTIONS
    from topolip.perturbations.ood_sets import OOD_SETS
    from topolip.pipeline.param_schema import _MODEL_GROUPS

    assert set(_MODEL_GROUPS) == set(ARCHITECTURES)
    assert roster.ood_names() == tuple(OOD_SETS)
    assert validate_params({"topolip_strengths": {"pgd": 0.1, **{k: 1 for k in CORRUPTIONS}}})
    assert validate_params({"sweep_perturbations": {k: 0.1 for k in ATTACKS}})


BAD = [  # (override, words the one-line message must hold)
    ("epochs=abc", "parameter epochs = 'abc' (from override 'epochs=abc')"),
    ("epochs=-1", "expected an integer >= 1"),
    ("epochs=0", "expected an integer >= 1"),
    ("epochs=2.5", "expected an integer >= 1"),
    ("epochs=true", "parameter epochs = True"),
    ("epochs=", "parameter epochs = ''"),
    ("seeds=[]", "seeds = [] (from override 'seeds=[]')"),
    ("seeds=[1, 1]", "the values repeat"),
    ("seeds=[-1]", "item 0 = -1"),
    ("seeds=3", "parameter seeds = 3"),
    ("p=0.5", "p: expected the order p >= 1"),
    ("p=nan", "parameter p = 'nan'"),
    ("p=-inf", "parameter p"),
    ("q=3", "expected the ground metric l_q with q in {1, 2, math.inf}, got 3"),
    ("q=0", "parameter q = 0"),
    ("lr=-1", "parameter lr = -1"),
    ("lr=0", "expected a finite number > 0"),
    ("lr=abc", "parameter lr = 'abc'"),
    ("weight_decay=-0.1", "parameter weight_decay"),
    ("batch_size=0", "parameter batch_size"),
    ("n_points=1", "parameter n_points"),
    ("n_points=2000", "2 * n_points must be <= n_test (1000)"),
    ("n_points=501", "the noise floor compares the clean batch with a disjoint one"),
    ("topolip_strengths={pgd: 0.05}", "bound_kinds: fgsm is not measured"),
    ("bound_kinds=[fgsm, blur]", "parameter bound_kinds"),
    ("n_robust=1001", "n_robust must be <= n_test"),
    ("n_train=4500", "n_train + n_test must be <= 5000"),
    ("dataset=cifar", "expected one of 'mnist', 'cifar10'"),
    ("archs=[vit, vitt]", "item 1 = 'vitt'"),
    ("archs=[]", "parameter archs"),
    ("degrees=[0.5, 1.7]", "degrees: expected non-negative ints such as (0, 1), got (0.5, 1.7)"),
    ("degrees=[-1]", "parameter degrees"),
    ("n_perm=1", "n_perm: expected None or an int >= 2, got 1"),
    ("persistence_backend=giotto", "backend: expected one of ['ripser', 'gudhi']"),
    ("topolip_strengths={fgsm: 2}", "fgsm = 2 is not a finite number in [0, 1]"),
    ("topolip_strengths={blur: 1}", "unknown kind 'blur'"),
    ("sweep_perturbations={gaussian_noise: 6}", "gaussian_noise = 6"),
    ("topolip_strengths={}", "parameter topolip_strengths"),
    ("topolip_strengths={fgsm: 0.05}", "topolip_strengths must hold pgd: its eps is the TopoLip"),
    ("topolip_strengths.fgsm=0.07", "topolip_strengths.fgsm = 0.07 must be on the grid"),
    ("topolip_strengths.contrast=1.5", "contrast = 1.5"),
    ("severities=[0, 1]", "topolip_strengths.gaussian_noise = 3 must be on the grid"),
    ("attack_eps=[0.0, 1.5]", "item 1 = 1.5"),
    ("vit.patch_size=5", "vit.patch_size = 5 must divide the image side 28"),
    ("vit.hidden_dim=30", "vit.hidden_dim must be a multiple of vit.num_heads"),
    ("vit={patch_size: 7, depth: 3}", "unknown key 'depth'"),
    ("resnet.blocks=[1, 1]", "parameter resnet"),
    ("sweeps.vit.grid.patch_size=[3]", "patch_size 3 must divide the image side 28"),
    ("sweeps.vit.grid.num_heads=[3]", "hidden_dim 32 is not a multiple of num_heads 3"),
    ("sweep_perturbations={}", "parameter sweep_perturbations"),
    ("ood_sets=[mnist]", "parameter ood_sets"),
    ("n_ood=5000", "n_ood must be <= 1797"),
    ("theory_heads=5", "token_dim must be a multiple of theory_heads"),
    ("radius_grid=[0]", "parameter radius_grid"),
    ("n_boot=10", "parameter n_boot = 10"),
    ("n_image_resamples=1", "parameter n_image_resamples"),
    ("alpha=0.5", "expected a finite number in (0, 0.5)"),
    ("alpha=0", "parameter alpha = 0"),
    ("results_dir=''", "parameter results_dir"),
    ("epoch=1", "unknown parameter 'epoch'; did you mean 'epochs'?"),
    ("vit.depth=3", "parameter 'vit' has no key 'depth'"),
    ("=3", "must look like name=value"),
    ("epochs", "must look like name=value"),
]


@pytest.mark.parametrize("override, words", BAD, ids=[b[0] for b in BAD])
def test_bad_values_are_refused_before_anything_runs(override, words):
    with pytest.raises(ParameterError) as err:
        load_params("quick", [override], root=ROOT)
    text = str(err.value)
    assert words in text
    assert "\n" not in text


GOOD = [("lr=1e-3", "lr", 0.001), ("epochs=2.0", "epochs", 2), ("q=inf", "q", math.inf),
        ("p=inf", "p", math.inf), ("n_perm=null", "n_perm", None), ("seeds=[7]", "seeds", [7]),
        ("alpha=0.01", "alpha", 0.01), ("n_boot=100", "n_boot", 100),
        ("n_points=500", "n_points", 500)]


@pytest.mark.parametrize("override, name, value", GOOD, ids=[g[0] for g in GOOD])
def test_good_values_pass_normalised(override, name, value):
    params, sources = load_params("quick", [override], root=ROOT)
    assert params[name] == value and type(params[name]) is type(value)
    assert sources[name] == f"override {override!r}"


def test_the_message_names_the_profile_a_bad_value_came_from(tmp_path):
    profile = tmp_path / "mine.yml"
    data = load_profile("quick", root=ROOT)
    data["epochs"] = -3
    profile.write_text(yaml.safe_dump(data))
    with pytest.raises(ParameterError, match=r"epochs = -3 \(from profile .*mine.yml\)"):
        load_params(profile)
    data["epochs"], data["colour"] = 3, "red"
    profile.write_text(yaml.safe_dump(data))
    with pytest.raises(ParameterError, match=r"unknown parameter 'colour' \(from profile"):
        load_params(profile)


@pytest.mark.parametrize("content, match", [
    (b"epochs: [1\n", r"is not valid YAML at line 2, column 1"),
    (b"epochs: 1\n\xff\xfe\n", r"is not valid UTF-8 text \(byte 0xff on line 2\)"),
    (b"- 1\n- 2\n", "must be a YAML mapping"),
    (b"", "must be a YAML mapping"),
    (b"1: 2\n", "parameter names must be text"),
    (b"epochs: 1\nepochs: [\n", "is not valid YAML"),
])
def test_unreadable_profiles_give_one_line(tmp_path, content, match):
    path = tmp_path / "p.yml"
    path.write_bytes(content)
    with pytest.raises(ParameterError, match=match) as err:
        load_profile(path)
    assert "\n" not in str(err.value)


def test_runner_validates_before_anything_runs(repo):
    params = load_profile("quick", root=ROOT)
    with pytest.raises(ParameterError, match="parameter p = 0.5"):
        run_chain(repo, {**params, "p": 0.5}, log=lambda _: None)
    with pytest.raises(ParameterError, match="parameter seeds = \\[\\]"):
        run_chain(repo, {**params, "seeds": []}, log=lambda _: None)
    assert not (repo / "results").exists() and not (repo / "book").exists()


# --------------------------------------------------------------------------- failed notebooks

WRITER = '''# %% tags=["parameters"]
results_dir = "results/t"
n = 2

# %%
from pathlib import Path
out = Path(results_dir)
out.mkdir(parents=True, exist_ok=True)
(out / "models").mkdir(exist_ok=True)
(out / "models" / "m.pt").write_text("checkpoint")
(out / "kept.csv").write_text("old,table\\n") if n == 2 else None
(out / "table.csv").write_text("a,b\\n")
(out / "kept.csv").write_text("half,written\\n")

# %%
if n == 3:
    raise KeyError("seed 7")
'''


def test_failed_notebook_leaves_no_partial_table_and_names_the_cell(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_writer.py").write_text(WRITER)
    out = tmp_path / "results" / "t"
    run_chain(tmp_path, {"n": 2}, log=lambda _: None)
    assert (out / "kept.csv").read_text() == "half,written\n"
    (out / "table.csv").unlink()
    (out / "kept.csv").write_text("good\n")
    logs = []
    with pytest.raises(NotebookFailed) as err:
        run_chain(tmp_path, {"n": 3}, log=logs.append)
    text = str(err.value)
    assert text.startswith("notebook 01_writer failed in cell 4 (`if n == 3:`): KeyError:")
    assert "seed 7" in text and "\n" not in text
    assert not (out / "table.csv").exists(), "a table of the failed notebook was left behind"
    assert (out / "kept.csv").read_text() == "good\n", "the previous table is restored"
    assert (out / "models" / "m.pt").exists(), "checkpoints are kept (verified on load)"
    assert any("01_writer failed in cell 4" in line for line in logs)  # [4]: after injection
    import papermill

    assert isinstance(err.value, papermill.PapermillExecutionError)


def test_failed_first_run_leaves_an_empty_results_folder(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_writer.py").write_text(WRITER)
    with pytest.raises(NotebookFailed):
        run_chain(tmp_path, {"n": 3}, log=lambda _: None)
    left = sorted(p.name for p in (tmp_path / "results" / "t").rglob("*") if p.is_file())
    assert left == ["m.pt"]


# --------------------------------------------------------------------------- command line

CLI_BAD = [
    (["params", "epochs=abc"], 2, "parameter epochs = 'abc'"),
    (["params", "seeds=[]"], 2, "parameter seeds = []"),
    (["params", "p=0.5"], 2, "parameter p = 0.5"),
    (["params", "q=3"], 2, "parameter q = 3"),
    (["params", "lr=-1"], 2, "parameter lr = -1"),
    (["params", "epochs=-1"], 2, "parameter epochs = -1"),
    (["params", "--profile", "nope"], 2, "no profile 'nope'"),
    (["params", "--profile", "bad"], 2, "is not valid YAML"),
    (["params", "--profile", "binary"], 2, "is not valid UTF-8"),
    (["run", "--only", "99_nope"], 2, "no notebook named ['99_nope']"),
    (["run", "seeds=[]"], 2, "parameter seeds = []"),
    (["run", "p=0.5"], 2, "parameter p = 0.5"),
    (["book", "n_points=5000"], 2, "2 * n_points must be <= n_test"),
]


@pytest.mark.parametrize("argv, status, words", CLI_BAD, ids=[" ".join(a) for a, _, _ in CLI_BAD])
def test_cli_one_line_no_traceback(repo, capsys, argv, status, words):
    (repo / "data" / "profiles" / "bad.yml").write_text("epochs: [1\n")
    (repo / "data" / "profiles" / "binary.yml").write_bytes(b"epochs: 1\n\xff\n")
    assert main([*argv[:1], "--root", str(repo), *argv[1:]]) == status
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith("topolip: error: ")
    assert words in lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert not (repo / "results").exists(), "nothing ran"


def test_cli_debug_shows_the_traceback(repo):
    with pytest.raises(ParameterError, match="parameter epochs = 'abc'"):
        main(["--debug", "params", "--root", str(repo), "epochs=abc"])
    with pytest.raises(ParameterError):
        main(["params", "--debug", "--root", str(repo), "epochs=abc"])


def test_cli_reports_a_failed_notebook_in_one_line(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_writer.py").write_text(WRITER.replace("n = 2", "n = 3"))
    (tmp_path / "data" / "profiles").mkdir(parents=True)
    (tmp_path / "data" / "profiles" / "t.yml").write_text("results_dir: results/t\n")
    assert main(["run", "--root", str(tmp_path), "--profile", "t"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("topolip: error: notebook 01_writer failed in cell 4")
    assert not (tmp_path / "results" / "t" / "table.csv").exists()


def test_cli_schema_lists_every_parameter(repo, capsys):
    assert main(["params", "--schema", "--root", str(repo)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == list(SCHEMA)


@pytest.mark.parametrize("name", ["digits", "inverted_mnist"])
def test_the_schema_and_the_loader_share_an_ood_set_s_size(name):
    """One size per OOD set (roster.OODSet.size): the loader refuses one image more, and so does
    the schema, before anything runs."""
    from topolip.perturbations.ood_sets import load_ood

    size = roster.ood_set(name).size
    assert len(load_ood(name, n=size)[0]) == size
    with pytest.raises(ValueError, match=rf"n must be an integer in 1..{size} for '{name}'"):
        load_ood(name, n=size + 1)
    with pytest.raises(ParameterError, match=rf"n_ood must be <= {size}"):
        validate_params({"n_ood": size + 1, "ood_sets": [name, "photo_patches"]})
    assert validate_params({"n_ood": size, "ood_sets": [name]})["n_ood"] == size


def test_the_schema_reads_the_data_sets_sizes_from_the_roster():
    from topolip.nets.data import DATASETS
    from topolip.nets.data.mnist import N_EMBEDDED

    assert DATASETS == roster.dataset_names()
    assert N_EMBEDDED == roster.dataset("mnist").train_images
    with pytest.raises(ParameterError, match=r"n_train \+ n_test must be <= 5000"):
        validate_params({"dataset": "mnist", "n_train": 4000, "n_test": 1001})
    with pytest.raises(ParameterError, match="cifar10 has 50000 train and 10000 test images"):
        validate_params({"dataset": "cifar10", "n_train": 100, "n_test": 10_001})
