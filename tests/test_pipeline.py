"""Runner and parameters: clear failures before anything runs, caching, atomic outputs."""

import math
import shutil
from pathlib import Path

import pytest

from topolip.cli import main
from topolip.pipeline.param_schema import ParameterError
from topolip.pipeline.params import apply_overrides, load_profile, parse_override
from topolip.pipeline.runner import chain, check_parameters, run_chain

ROOT = Path(__file__).resolve().parents[1]

GOOD = '''# %% [markdown]
# # A test notebook

# %% tags=["parameters"]
results_dir = "results/t"
n = 2

# %%
from pathlib import Path
Path(results_dir).mkdir(parents=True, exist_ok=True)
(Path(results_dir) / "n.txt").write_text(str(n * 21))
'''


def make_root(tmp_path: Path, *sources: str) -> Path:
    (tmp_path / "notebooks").mkdir()
    for i, src in enumerate(sources, start=1):
        (tmp_path / "notebooks" / f"{i:02d}_nb.py").write_text(src)
    return tmp_path


def declared_by_notebook():
    import jupytext

    from topolip.pipeline.params import declared_parameters

    return {p.stem: declared_parameters(jupytext.read(p), name=p.name) for p in chain(ROOT)}


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_profiles_hold_exactly_the_declared_parameters(profile):
    params = load_profile(profile, root=ROOT)
    check_parameters(chain(ROOT), params)  # raises on an undeclared profile key
    declared = set().union(*(d.keys() for d in declared_by_notebook().values()))
    assert sorted(declared - set(params)) == [], "a notebook parameter missing from the profile"
    assert math.isinf(params["q"]) and params["p"] == 1


def test_a_name_shared_by_notebooks_means_one_thing():
    # the namespace is flat: a name two notebooks declare gets one value from the profile, so
    # their defaults must agree too (a clash like two different `n_iter` would be caught here)
    seen = {}
    for nb, names in declared_by_notebook().items():
        for name, default in names.items():
            if name in ("archs",):  # 01_train trains all; others read models.csv
                continue
            first = seen.setdefault(name, (nb, default))
            assert " ".join(default.split()) == " ".join(first[1].split()), (
                f"{name!r}: {first[0]} defaults to {first[1]}, {nb} to {default}")


def test_a_notebook_opened_alone_defaults_to_the_quick_profile():
    # a reader who opens a notebook (Binder, Colab, the "launch" button) and runs it without
    # the runner gets the quick book's values: each parameters cell holds the profile's
    import jupytext

    from topolip.pipeline.params import declared_parameters

    quick = load_profile("quick", root=ROOT)
    stale = []
    for path in chain(ROOT):
        nb = jupytext.read(path)
        namespace: dict = {}
        exec([c for c in nb.cells if "parameters" in c.metadata.get("tags", [])][0].source,
             namespace)
        for name in declared_parameters(nb):
            if name in quick and namespace[name] != quick[name]:
                stale.append(f"{path.stem}: {name} = {namespace[name]!r}, quick {quick[name]!r}")
    assert stale == []


def test_overrides_parse_yaml_and_reject_unknown_names():
    assert parse_override("seeds=[0, 1]") == (["seeds"], [0, 1])
    assert parse_override("n_perm=null") == (["n_perm"], None)
    params = {"epochs": 5, "vit": {"num_layers": 4}}
    assert apply_overrides(params, ["vit.num_layers=6"])["vit"] == {"num_layers": 6}
    assert params["vit"] == {"num_layers": 4}, "the input is not modified"
    with pytest.raises(ParameterError, match="did you mean 'epochs'"):
        apply_overrides(params, ["epoch=2"])
    with pytest.raises(ParameterError, match="has no key 'depth'"):
        apply_overrides(params, ["vit.depth=2"])
    with pytest.raises(ParameterError, match="must look like name=value"):
        apply_overrides(params, ["epochs"])
    with pytest.raises(ParameterError, match="no profile 'nope'.*known profiles"):
        load_profile("nope", root=ROOT)


def test_missing_parameters_cell_fails_before_running(tmp_path):
    root = make_root(tmp_path, GOOD, "# %%\nprint('no parameters here')\n")
    with pytest.raises(ParameterError, match=r"02_nb.py has 0 cells tagged 'parameters'"):
        run_chain(root, {})
    assert not (root / "results").exists(), "nothing ran"


def test_unknown_parameter_fails_before_running(tmp_path):
    root = make_root(tmp_path, GOOD)
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) 'nn' \(did you mean 'n'\?\)"):
        run_chain(root, {"nn": 3})
    assert not (root / "results").exists()


DATA = '''# %% tags=["parameters"]
results_dir = "results/t"
dataset = "mnist"
data_root = "data/cifar10"

# %%
from pathlib import Path
Path(results_dir).mkdir(parents=True, exist_ok=True)
(Path(results_dir) / "root.txt").write_text(f"{dataset} {data_root}")
'''


@pytest.mark.parametrize(("dataset", "shown"), [("mnist", False), ("cifar10", True)])
def test_the_page_shows_data_root_only_for_a_data_set_read_from_it(tmp_path, dataset, shown):
    # issue 27: an MNIST page printed data_root = "data/cifar10" among the values that made it
    import nbformat

    root = make_root(tmp_path, DATA)
    run_chain(root, {"dataset": dataset, "data_root": "elsewhere"})
    cells = nbformat.read(root / "book/notebooks/01_nb.ipynb", as_version=4).cells
    (cell,) = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert f'dataset = "{dataset}"' in cell.source
    assert ("data_root" in cell.source) is shown, cell.source
    used = "elsewhere" if shown else "data/cifar10"
    assert (root / "results/t/root.txt").read_text() == f"{dataset} {used}"


def test_run_injects_parameters_caches_and_reruns_on_change(tmp_path):
    root = make_root(tmp_path, GOOD)
    logs = []
    first = run_chain(root, {"n": 3}, log=logs.append)
    assert (root / "results/t/n.txt").read_text() == "63"
    assert [r.cached for r in first] == [False]
    out = root / "book/notebooks/01_nb.ipynb"
    import nbformat

    cells = nbformat.read(out, as_version=4).cells
    injected = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 3" in injected[0].source
    defaults = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert defaults[0].metadata["tags"] == ["parameters", "remove-cell"], "book shows one cell"
    second = run_chain(root, {"n": 3}, log=logs.append)
    assert [r.cached for r in second] == [True]
    third = run_chain(root, {"n": 4}, log=logs.append)
    assert [r.cached for r in third] == [False]
    assert (root / "results/t/n.txt").read_text() == "84"
    assert not list((root / "book/notebooks").glob("*.partial.ipynb"))


def test_failing_cell_raises_and_keeps_the_partial_notebook(tmp_path):
    import papermill

    root = make_root(tmp_path, GOOD + "\n# %%\nraise ValueError('boom')\n")
    with pytest.raises(papermill.PapermillExecutionError, match="boom"):
        run_chain(root, {}, log=lambda _: None)
    assert (root / "book/notebooks/01_nb.partial.ipynb").exists()
    assert not (root / "book/notebooks/01_nb.ipynb").exists()
    # fixed: the run succeeds and the stale partial notebook goes
    (root / "notebooks/01_nb.py").write_text(GOOD)
    run_chain(root, {}, log=lambda _: None)
    assert not (root / "book/notebooks/01_nb.partial.ipynb").exists()


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(ROOT / "data" / "profiles", tmp_path / "data" / "profiles")
    assert main(["run", "--root", str(tmp_path), "epoch=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'epoch'; did you mean 'epochs'?" in err
    assert "Traceback" not in err
    assert main(["params", "--root", str(tmp_path)]) == 0
    epochs = load_profile("quick", root=ROOT)["epochs"]
    assert f"epochs = {epochs}    # 01_train\n" in capsys.readouterr().out


# --- the cache follows the data (notebooks/dependencies.yml) ---------------------------------

WRITER = '''# %% tags=["parameters"]
results_dir = "results/t"
{param} = {value}

# %%
from pathlib import Path
out = Path(results_dir) / "{out}"
out.parent.mkdir(parents=True, exist_ok=True)
inputs = [(Path(results_dir) / name).read_text() for name in {reads!r}]
out.write_text("|".join(inputs) + f"+{{{param}}}")
'''

DEPS = '''01_a: {reads: [], writes: ["{results_dir}/a.txt"]}
02_b: {reads: ["{results_dir}/a.txt"], writes: ["{results_dir}/b.txt"]}
03_c: {reads: ["{results_dir}/b.txt"], writes: ["{results_dir}/c.txt"]}
04_d: {reads: ["{results_dir}/a.txt"], writes: ["{results_dir}/d.txt"]}
05_e: {reads: [], writes: ["{results_dir}/e.txt"]}
'''


def synthetic_chain(tmp_path: Path) -> Path:
    """01_a -> 02_b -> 03_c, 01_a -> 04_d, 05_e alone; each reads only its declared inputs."""
    (tmp_path / "notebooks").mkdir()
    for stem, param, reads in (("01_a", "pa", []), ("02_b", "pb", ["a.txt"]),
                               ("03_c", "pc", ["b.txt"]), ("04_d", "pd", ["a.txt"]),
                               ("05_e", "pe", [])):
        (tmp_path / "notebooks" / f"{stem}.py").write_text(
            WRITER.format(param=param, value=1, out=f"{stem[3]}.txt", reads=reads))
    (tmp_path / "notebooks/dependencies.yml").write_text(DEPS)
    return tmp_path


def executed(runs):
    return [r.name for r in runs if not r.cached]


def test_a_parameter_of_02_reexecutes_02_and_its_dependents_only(tmp_path):
    root = synthetic_chain(tmp_path)
    params = {"pa": 1, "pb": 1, "pc": 1, "pd": 1, "pe": 1}
    quiet = {"log": lambda _: None}
    assert executed(run_chain(root, params, **quiet)) == ["01_a", "02_b", "03_c", "04_d", "05_e"]
    assert executed(run_chain(root, params, **quiet)) == []
    assert (root / "results/t/c.txt").read_text() == "+1+1+1"
    # dry run: says what would run and why, and runs nothing
    logs = []
    dry = run_chain(root, {**params, "pb": 2}, dry_run=True, log=logs.append)
    assert executed(dry) == ["02_b", "03_c"]
    assert dry[1].reason == "parameter(s) changed: pb"
    assert dry[2].reason.startswith("input(s) an earlier notebook would rewrite: "
                                    "{results_dir}/b.txt (rewritten by 02_b)")
    assert "[topolip] 04_d: unchanged, cached" in "\n".join(logs)
    assert (root / "results/t/b.txt").read_text() == "+1+1", "a dry run executes nothing"
    # the real run: exactly 02 and its dependent 03
    runs = run_chain(root, {**params, "pb": 2}, **quiet)
    assert executed(runs) == ["02_b", "03_c"]
    assert runs[2].reason == "input(s) changed: {results_dir}/b.txt"
    assert (root / "results/t/c.txt").read_text() == "+1+2+1"
    # a parameter of the root notebook: everything reading a.txt, not 05_e
    assert executed(run_chain(root, {**params, "pb": 2, "pa": 3}, **quiet)) == [
        "01_a", "02_b", "03_c", "04_d"]
    # an upstream re-execution that writes the same bytes does not cascade
    (root / "notebooks/02_b.py").write_text(
        (root / "notebooks/02_b.py").read_text() + "\n# %%\n# a comment\n")
    assert executed(run_chain(root, {**params, "pb": 2, "pa": 3}, **quiet)) == ["02_b"]


def test_declaration_must_match_the_chain(tmp_path):
    from topolip.pipeline.notebook_cache import DependencyError

    root = synthetic_chain(tmp_path)
    deps = root / "notebooks/dependencies.yml"
    deps.write_text(DEPS.replace('05_e: {reads: [], writes: ["{results_dir}/e.txt"]}\n', ""))
    with pytest.raises(DependencyError, match=r"does not declare notebook\(s\) \['05_e'\]"):
        run_chain(root, {}, log=lambda _: None)
    deps.write_text(DEPS + '09_measures: {reads: ["{results_dir}/b.txt"], writes: []}\n')
    with pytest.raises(DependencyError, match=r"declares \['09_measures'\], which are not "
                                              r"notebooks of the chain"):
        run_chain(root, {}, log=lambda _: None)
    deps.write_text(DEPS.replace('02_b: {reads: ["{results_dir}/a.txt"]',
                                 '02_b: {reads: ["{results_dir}/c.txt"]'))
    with pytest.raises(DependencyError, match=r"02_b reads \{results_dir\}/c.txt, which no "
                                              r"earlier notebook writes"):
        run_chain(root, {}, log=lambda _: None)
    deps.write_text(DEPS.replace("01_a: {reads: []", "01_a: {read: []"))
    with pytest.raises(DependencyError, match="01_a must be a mapping with keys reads and writes"):
        run_chain(root, {}, log=lambda _: None)
    assert not (root / "results").exists(), "nothing ran"


def test_repository_declaration_matches_the_notebooks():
    """Every table a notebook declares it reads or writes is named in its source."""
    from topolip.pipeline.notebook_cache import load_dependencies

    deps = load_dependencies(ROOT, chain(ROOT))
    assert deps is not None and list(deps) == [p.stem for p in chain(ROOT)]
    for path in chain(ROOT):
        source = path.read_text()
        for entry in (*deps[path.stem].reads, *deps[path.stem].writes):
            stem = Path(entry).stem
            assert f'"{stem}' in source or f"'{stem}" in source, (path.stem, entry)
    assert "{results_dir}/tables/sweeps.csv" not in deps["02_topolip"].reads
    assert deps["03_compare"].reads and not deps["07_sweeps"].reads


def test_cli_dry_run_prints_what_would_run_and_why(tmp_path, capsys, monkeypatch):
    import topolip.cli
    from topolip.pipeline.params import load_profile

    # the synthetic notebooks' parameters (pa..pe) are not in the project's schema
    monkeypatch.setattr(topolip.cli, "load_params",
                        lambda profile, _overrides, root: (load_profile(profile, root=root), {}))
    root = synthetic_chain(tmp_path)
    (root / "data/profiles").mkdir(parents=True)
    (root / "data/profiles/quick.yml").write_text(
        "results_dir: results/t\npa: 1\npb: 1\npc: 1\npd: 1\npe: 1\n")
    assert main(["run", "--root", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[topolip] 01_a: would execute (never executed)" in out
    assert not (root / "results").exists() and not (root / "book").exists()


# --- the book reads only its table of contents ------------------------------------------------

DECOY = "# Decoy\n\nSee [missing](./nowhere.txt) and {cite}`no_such_key`.\n"


def tiny_book(tmp_path: Path) -> Path:
    """A repository root with a two-page book (a Markdown page and an executed notebook) and
    decoys where a newcomer's tree has them: pytest's cache, a virtual environment, results."""
    import nbformat

    (tmp_path / "book/notebooks").mkdir(parents=True)
    (tmp_path / "book/intro.md").write_text("# Intro\n\nA tiny book with $x^2$.\n")
    (tmp_path / "book/figure.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>\n')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter\n\nText.")])
    nbformat.write(nb, tmp_path / "book/notebooks/01_nb.ipynb")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/notebooks/01_nb\n")
    (tmp_path / "book/references.bib").write_text("")
    shutil.copy2(ROOT / "_config.yml", tmp_path / "_config.yml")
    for decoy in (".pytest_cache/README.md", ".venv/lib/pkg/README.md", "results/q/notes.md",
                  "book/notebooks/.ipynb_checkpoints/x.md", "stray.md", "book/draft.md"):
        (tmp_path / decoy).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / decoy).write_text(DECOY)
    return tmp_path


def test_staging_copies_only_the_toc_documents_and_their_assets(tmp_path):
    import nbformat

    from topolip.pipeline.book import stage_book, toc_documents

    root = tiny_book(tmp_path / "repo")
    assert toc_documents(root) == [Path("book/intro.md"), Path("book/notebooks/01_nb.ipynb")]
    dest = stage_book(root, tmp_path / "staged")
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == ["_config.yml", "_toc.yml", "book/figure.svg", "book/intro.md",
                     "book/notebooks/01_nb.ipynb", "book/references.bib"]
    first = nbformat.read(dest / "book/notebooks/01_nb.ipynb", as_version=4).cells[0]
    assert first.metadata["tags"] == ["remove-cell"]
    assert "git\", \"clone\", \"--depth\", \"1\", \"https://github.com/topolip/" in first.source
    assert "pip\", \"install\"" in first.source
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                   "  - file: book/notebooks/02_missing\n")
    with pytest.raises(FileNotFoundError, match="_toc.yml lists 'book/notebooks/02_missing'"):
        stage_book(root, tmp_path / "staged")


def test_book_build_ignores_stray_markdown_in_dot_folders(tmp_path):
    from topolip.pipeline.book import build_book

    root = tiny_book(tmp_path)
    html = build_book(root)
    assert (html / "book/intro.html").exists() and (html / "book/notebooks/01_nb.html").exists()
    assert not list(html.rglob("README.html")) and not (html / "stray.html").exists()
    download = html / "_sources/book/notebooks/01_nb.ipynb"
    assert "topolip-companion" in download.read_text(), "the download has the install cell"
    assert "topolip-companion" not in (html / "book/notebooks/01_nb.html").read_text().split(
        '<article')[-1], "the page does not show it"


def test_citation_and_the_one_repository_link():
    import yaml

    from topolip.pipeline.book import repository_url

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    paper = cff["preferred-citation"]
    assert paper["type"] == "article" and paper["year"] == 2024
    assert paper["authors"] == [{"family-names": "Chen", "given-names": "B."}]
    assert paper["title"].startswith("Is Smoothness the Key to Robustness?")
    assert paper["identifiers"][0]["value"] == "arXiv:2410.17628"
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cff["repository-code"] == config["repository"]["url"] == repository_url(ROOT)
    assert config["html"]["use_repository_button"] is True
    assert {"binderhub_url", "colab_url"} <= set(config["launch_buttons"])
    reproduce = (ROOT / "book/reproduce.md").read_text()
    assert reproduce.count("## How to cite") == 1 and "arXiv:2410.17628" in reproduce


def test_notebook_parameters_follow_the_parameters_cell():
    """Every notebook of the chain records exactly its declared parameters, locations and where
    the work runs (scheduler, n_workers) left out."""
    import jupytext

    from topolip.pipeline.param_schema import ParameterError
    from topolip.pipeline.params import declared_parameters, notebook_parameters
    from topolip.pipeline.runner import chain

    for path in chain("."):
        nb = jupytext.read(path)
        declared = declared_parameters(nb)
        namespace: dict = {}
        exec([c for c in nb.cells if "parameters" in c.metadata.get("tags", [])][0].source,
             namespace)
        got = notebook_parameters(namespace, path.stem)
        assert list(got) == [n for n in declared if n not in ("results_dir", "data_root",
                                                              "scheduler", "n_workers")]
        assert all(got[n] is namespace[n] for n in got)  # recorded as given
        if path.stem == "02_topolip":
            topolip_cell = namespace
    # a notebook run alone refuses what the schema and its rules refuse, in their words
    with pytest.raises(ParameterError, match=r"parameter alpha = 0.7 \(from notebook "
                                             r"09_measures's parameters"):
        notebook_parameters({"n_boot": 100, "alpha": 0.7, "min_accuracy": 0.5}, "09_measures")
    with pytest.raises(ParameterError, match=r"2 \* n_points must be <= n_test \(100\)"):
        notebook_parameters({**topolip_cell, "n_test": 100, "n_points": 60}, "02_topolip")
    with pytest.raises(ParameterError, match=r"\['alpha', 'min_accuracy'\] are declared"):
        notebook_parameters({"n_boot": 10}, "09_measures")
    with pytest.raises(ParameterError, match="no notebook source"):
        notebook_parameters({}, "99_missing")
