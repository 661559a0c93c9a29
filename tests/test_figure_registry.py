"""publish_figure: byte-stable PNG and SVG, a provenance sidecar, stable ids; redraw by id."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from topolip.cli import main
from topolip.pipeline.figure_registry import (
    FIGURES,
    figure_provenance_text,
    publish_figure,
    publish_registered,
    redraw_figure,
    register_figure,
)
from topolip.pipeline.runner import chain

ROOT = Path(__file__).resolve().parents[1]


def _table(root: Path) -> Path:
    path = root / "results/quick/tables/xy.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame({"x": [0, 1, 2, 3], "y": [1.0, 0.5, 0.25, 0.125]}).to_csv(path, index=False)
    return path


def _declare_xy(monkeypatch) -> None:
    """A redraw reads its tables through their declared schemas: declare the test's table."""
    from topolip.schema import SCHEMAS, Column, TableSchema

    monkeypatch.setitem(SCHEMAS, "xy", TableSchema("xy", (Column("x", "int"),
                                                          Column("y", "float")), "03_compare"))


def _draw(frame: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(frame["x"], frame["y"], "o-", label="y")
    ax.set(yscale="log", title="halving")
    ax.legend()
    return fig


def test_same_figure_same_bytes_and_a_complete_sidecar(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.lock").write_text("numpy==2.0.0\n")
    table = _table(tmp_path)
    files = []
    for _ in range(2):
        fig = _draw(pd.read_csv(table))
        png = publish_figure(fig, "fig-halving", results_dir="results/quick",
                             notebook="03_compare", tables=["results/quick/tables/xy.csv"],
                             params={"eps": 0.1, "q": float("inf")}, seeds=[0, 1])
        plt.close(fig)
        files.append({s: png.with_suffix(s).read_bytes() for s in (".png", ".svg", ".json")})
    assert png == Path("results/quick/figures/fig-halving.png")
    assert files[0] == files[1], "two runs of the same figure give the same bytes"
    assert files[0][".png"].startswith(b"\x89PNG")
    svg = files[0][".svg"].decode()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg and "matplotlib.org" not in svg
    assert b"Software" not in files[0][".png"] and b"Matplotlib" not in files[0][".png"]
    side = json.loads(files[0][".json"])
    import hashlib

    assert side["figure"] == "fig-halving" and side["profile"] == "quick"
    assert side["notebook"] == "03_compare"
    assert side["parameters"] == {"eps": 0.1, "q": "inf"}
    assert side["seeds"] == [0, 1]
    assert side["tables"] == ["tables/xy.csv"], "relative to results_dir"
    assert side["lock_sha256"] == hashlib.sha256(b"numpy==2.0.0\n").hexdigest()
    assert side["command"] == "topolip figure fig-halving --profile quick"
    assert side["files"]["png"]["sha256"] == hashlib.sha256(files[0][".png"]).hexdigest()
    assert {"git_commit", "git_dirty", "data_sha256"} <= set(side)
    # the data hash follows the table's content
    table.write_text("x,y\n0,1\n")
    fig = _draw(pd.read_csv(table))
    publish_figure(fig, "fig-halving", results_dir="results/quick", notebook="03_compare",
                   tables=["tables/xy.csv"])
    assert json.loads(png.with_suffix(".json").read_text())["data_sha256"] != side["data_sha256"]


@pytest.mark.parametrize("bad", ["fig_halving", "halving", "fig-Halving", "fig--x", "fig-x-",
                                 "fig-sweep-attention_stack", ""])
def test_malformed_ids_are_rejected(tmp_path, bad):
    fig = plt.figure()
    with pytest.raises(ValueError, match="fig_id must be 'fig-' followed by lowercase words"):
        publish_figure(fig, bad, results_dir=tmp_path, notebook="03_compare")
    plt.close(fig)
    assert not (tmp_path / "figures").exists()


def test_missing_table_is_an_error_naming_it(tmp_path):
    fig = plt.figure()
    with pytest.raises(FileNotFoundError, match="table 'tables/none.csv'"):
        publish_figure(fig, "fig-x", results_dir=tmp_path, notebook="03_compare",
                       tables=["tables/none.csv"])
    plt.close(fig)


def test_registry_holds_the_book_figures_and_rejects_duplicates():
    expected = {"fig-train-curves", "fig-noise-floor", "fig-compare-end-to-end",
                "fig-compare-by-layer", "fig-robustness-curves", "fig-topolip-vs-drop",
                "fig-ood-topolip", "fig-ood-behaviour", "fig-ood-detectors", "fig-verdicts",
                "fig-measure-study",
                "fig-sweep-vit", "fig-sweep-resnet", "fig-sweep-attention-stack",
                "fig-sweep-conv-stack", "fig-theory-attention", "fig-theory-conv",
                "fig-bounds-vs-measured"}
    assert expected <= set(FIGURES)
    # every figure a notebook publishes from saved tables is registered, and only those
    published = set()
    for path in chain(ROOT):
        published |= set(re.findall(r'"(fig-[a-z0-9-]+)"', path.read_text()))
        published |= {f"fig-sweep-{a}" for a in ("vit", "resnet", "attention-stack",
                                                 "conv-stack") if path.stem == "07_sweeps"}
    assert set(FIGURES) == published
    assert FIGURES["fig-bounds-vs-measured"].tables == ("tables/bounds.csv",
                                                        "tables/topolip.csv")
    assert FIGURES["fig-theory-conv"].notebook == "00_theory"
    assert FIGURES["fig-sweep-vit"].tables == ("tables/sweeps.csv",)
    assert FIGURES["fig-ood-behaviour"].notebook == "06_ood"
    with pytest.raises(ValueError, match="already registered.*03_compare"):
        register_figure("fig-compare-by-layer", _draw, tables=["tables/x.csv"], notebook="x")
    with pytest.raises(ValueError, match="tables must be paths relative to results_dir"):
        register_figure("fig-new-one", _draw, tables=[], notebook="x")


def test_cli_redraws_a_registered_figure_byte_identically(tmp_path, capsys, monkeypatch):
    _declare_xy(monkeypatch)
    shutil.copytree(ROOT / "data" / "profiles", tmp_path / "data" / "profiles")
    _table(tmp_path)
    register_figure("fig-halving-test", _draw, tables=["tables/xy.csv"], notebook="03_compare")
    try:
        first = redraw_figure("fig-halving-test", results_dir="results/quick", root=tmp_path)
        before = {s: (tmp_path / first).with_suffix(s).read_bytes() for s in (".png", ".svg")}
        (tmp_path / first).unlink()
        assert main(["figure", "fig-halving-test", "--profile", "quick",
                     "--root", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "results/quick/figures/fig-halving-test.png" in out
        after = {s: (tmp_path / first).with_suffix(s).read_bytes() for s in (".png", ".svg")}
        assert before == after
        assert main(["figure", "fig-nope", "--root", str(tmp_path)]) == 2
        assert "no figure registered as 'fig-nope'" in capsys.readouterr().err
    finally:
        FIGURES.pop("fig-halving-test", None)


def test_a_notebook_publishes_a_registered_figure_by_id(tmp_path, monkeypatch):
    _declare_xy(monkeypatch)
    # what the notebook used to restate (read the table, draw, publish with its name and
    # tables) gives the same files as the call by id
    monkeypatch.chdir(tmp_path)
    _table(tmp_path)

    def draw(frame, *, title="halving"):  # takes a keyword, as the registry's drawings do
        fig = _draw(frame)
        fig.axes[0].set_title(title)
        return fig

    register_figure("fig-halving-test", draw, tables=["tables/xy.csv"], notebook="03_compare")
    try:
        fig = _draw(pd.read_csv("results/quick/tables/xy.csv"))
        by_hand = publish_figure(fig, "fig-halving-test", results_dir="results/quick",
                                 notebook="03_compare", tables=("xy.csv",),
                                 params={"eps": 0.1}, seeds=[0, 1])
        plt.close(fig)
        before = {s: by_hand.with_suffix(s).read_bytes() for s in (".png", ".svg", ".json")}
        path = publish_registered("fig-halving-test", results_dir="results/quick",
                                  params={"eps": 0.1}, seeds=[0, 1], title="halving")
        assert path == by_hand
        assert {s: path.with_suffix(s).read_bytes() for s in (".png", ".svg", ".json")} == before
        with pytest.raises(KeyError, match="no figure registered as 'fig-nope'"):
            publish_registered("fig-nope", results_dir="results/quick")
    finally:
        FIGURES.pop("fig-halving-test", None)
        plt.close("all")


def test_provenance_text_names_id_profile_commit_and_command():
    text = figure_provenance_text({"figure": "fig-a", "profile": "paper", "git_commit": None,
                                   "git_dirty": None, "command": "topolip figure fig-a"})
    assert text == "fig-a · profile paper · commit unknown · regenerate: topolip figure fig-a"


NOTEBOOK = '''# %% [markdown]
# # Glue check

# %% tags=["parameters"]
results_dir = "results/quick"

# %%
import matplotlib.pyplot as plt
import pandas as pd
from topolip.pipeline.figure_registry import publish_figure

fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1], [1, 2])
_ = publish_figure(fig, "fig-glue-check", results_dir=results_dir, notebook="01_nb")

# %% [markdown]
# ```{glue:figure} fig-glue-check
# :name: fig-glue-check
# :alt: a rising line
#
# A rising line. {glue:md}`fig-glue-check-provenance`
# ```
#
# ```{glue:figure} fig-glue-check
# :name: fig-glue-check-text
#
# The same with text. {glue:text}`fig-glue-check-provenance`
# ```
#
# See {numref}`fig-glue-check`.
'''


def test_glued_figure_and_provenance_render_in_a_book(tmp_path):
    """The caption's {glue:text} renders with the pinned myst-nb and Jupyter Book 1."""
    import re

    from topolip.pipeline.book import build_book
    from topolip.pipeline.runner import run_chain

    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks/01_nb.py").write_text(NOTEBOOK)
    (tmp_path / "book").mkdir()
    (tmp_path / "book/intro.md").write_text("# Intro\n\nA tiny book.\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/notebooks/01_nb\n")
    (tmp_path / "book/references.bib").write_text("")
    shutil.copy2(ROOT / "_config.yml", tmp_path / "_config.yml")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    run_chain(tmp_path, {}, log=lambda _: None)
    html = (build_book(tmp_path) / "book/notebooks/01_nb.html").read_text()
    assert re.search(r'<figure[^>]*id="fig-glue-check"', html)
    assert re.search(r'<img[^>]+alt="a rising line"', html)
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html, flags=re.S)
    assert len(captions) == 2
    for caption in captions:  # {glue:md} and {glue:text} both render the provenance line
        assert "fig-glue-check · profile quick · commit unknown · regenerate:" in caption
        assert "&#39;" not in caption and "'fig-glue-check" not in caption, "no quotes"
    # {glue:md} shows the command as code, exactly; in {glue:text}, Sphinx's smart quotes turn
    # "--" into an en dash (why publish_figure's docstring recommends {glue:md})
    code = re.search(r"<code[^>]*>(.*?)</code>", captions[0], flags=re.S)
    assert re.sub(r"<[^>]+>", "", code.group(1)) == "topolip figure fig-glue-check --profile quick"
    assert "fig-glue-check –profile quick" in captions[1]
    assert (tmp_path / "results/quick/figures/fig-glue-check.json").exists()
    # the page shows the 120-dpi file the sidecar describes, pixel for pixel
    from PIL import Image

    img = re.search(r'<img[^>]+alt="a rising line"[^>]*>', html).group(0)
    src = re.search(r'src="([^"]+)"', img).group(1)
    shown = tmp_path / "_build/html/book/notebooks" / src
    saved = tmp_path / "results/quick/figures/fig-glue-check.png"
    assert Image.open(shown).size == Image.open(saved).size


def test_the_glued_image_is_the_saved_120_dpi_file(tmp_path, monkeypatch):
    """In a kernel the book shows the PNG the sidecar describes, not a render at figure.dpi."""
    import base64
    import io

    import myst_nb
    from IPython.core.formatters import format_display_data
    from PIL import Image

    from topolip.pipeline import figure_registry as figures_io

    monkeypatch.chdir(tmp_path)
    table = _table(tmp_path)
    glued = {}
    monkeypatch.setattr(figures_io, "_in_kernel", lambda: True)
    monkeypatch.setattr(myst_nb, "glue", lambda name, obj, **_: glued.update({name: obj}))
    fig = _draw(pd.read_csv(table))
    fig.set_dpi(100)  # matplotlib-inline's figure.dpi
    png = publish_figure(fig, "fig-halving", results_dir="results/quick", notebook="03_compare",
                         tables=["tables/xy.csv"])
    data, _ = format_display_data(glued["fig-halving"])
    shown = data["image/png"]
    shown = shown if isinstance(shown, bytes) else base64.b64decode(shown)
    saved = png.read_bytes()
    assert Image.open(io.BytesIO(shown)).size == Image.open(io.BytesIO(saved)).size
    assert shown == saved, "the very bytes of figures/fig-halving.png"
    assert figures_io.DPI == 120
    assert plt.fignum_exists(fig.number) is False, "closed so the cell does not show it again"
