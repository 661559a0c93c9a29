"""The downloadable Markdown sources of the built book hold the glued text, not glue roles
(issue 27): :func:`topolip.pipeline.book.paste_sources` on a small fake build, its errors, and
the real built book when ``_build/html`` exists."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from topolip.pipeline.book import paste_glue, paste_sources

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
STAGED = ROOT / "_build" / ".book"
PREFIX = "application/papermill.record/"


def _glue(name: str, **data: str):
    """A glue output as ``myst_nb.glue`` records it in an executed notebook."""
    return nbformat.v4.new_output("display_data", data={PREFIX + k: v for k, v in data.items()},
                                  metadata={"scrapbook": {"name": name, "mime_prefix": PREFIX}})


def _notebook(*outputs) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("glue", outputs=list(outputs))
    return nbformat.v4.new_notebook(cells=[cell])


INTRO = """# Intro

Of {glue:text}`notebooks/01_train.ipynb::n-models:s` models the ViT scored
{glue:text}`01_train.ipynb::acc-vit` ({glue:text}`notebooks/01_train.ipynb::acc-vit:.1%`),
trained on {glue:text}`notebooks/01_train.ipynb::train-data:s`; the ResNet
{glue:text}`notebooks/02_x.ipynb::acc-resnet:.2f`. Provenance:
{glue:md}`notebooks/01_train.ipynb::prov`. Write ``{glue:text}`nb.ipynb::key` `` to paste.

```markdown
{glue:text}`notebooks/01_train.ipynb::not-glued`
```

````{note}
Inside a note, {glue:text}`notebooks/01_train.ipynb::n-models:d` models.
```python
x = "{glue:text}`a::b`"
```
````
"""

PASTED = """# Intro

Of 20 models the ViT scored
0.916 (91.6%),
trained on MNIST (4,000 training images); the ResNet
0.98. Provenance:
commit `1a2b3c4`. Write ``{glue:text}`nb.ipynb::key` `` to paste.

```markdown
{glue:text}`notebooks/01_train.ipynb::not-glued`
```

````{note}
Inside a note, 20 models.
```python
x = "{glue:text}`a::b`"
```
````
"""


def _fake_build(tmp_path: Path, intro: str = INTRO) -> tuple[Path, Path]:
    """A staged source folder (toc, intro, two executed notebooks) and its ``_build/html``."""
    source, html = tmp_path / "src", tmp_path / "html"
    (source / "book/notebooks").mkdir(parents=True)
    (source / "_toc.yml").write_text("root: book/intro\nchapters:\n"
                                     "  - file: book/notebooks/01_train\n"
                                     "  - file: book/notebooks/02_x\n  - file: book/method\n")
    (source / "book/intro.md").write_text(intro)
    (source / "book/method.md").write_text("# Method\n\nNo glue here.\n")
    nbformat.write(_notebook(_glue("n-models", **{"text/plain": "'20'"}),
                             _glue("acc-vit", **{"text/plain": "0.916"}),
                             _glue("train-data", **{"text/plain":
                                                    "'MNIST (4,000 training images)'"}),
                             _glue("prov", **{"text/plain": "commit 1a2b3c4",
                                              "text/markdown": "commit `1a2b3c4`"})),
                   source / "book/notebooks/01_train.ipynb")
    nbformat.write(_notebook(_glue("acc-resnet", **{"text/plain": "0.9843"})),
                   source / "book/notebooks/02_x.ipynb")
    for rel in ("book/intro.md", "book/method.md", "book/notebooks/01_train.ipynb"):
        (html / "_sources" / rel).parent.mkdir(parents=True, exist_ok=True)
        (html / "_sources" / rel).write_bytes((source / rel).read_bytes())
    return source, html


def test_paste_sources_rewrites_the_downloaded_markdown(tmp_path):
    source, html = _fake_build(tmp_path)
    notebook = (html / "_sources/book/notebooks/01_train.ipynb").read_bytes()
    method = html / "_sources/book/method.md"
    before = method.stat().st_mtime_ns
    changed = paste_sources(html, source)
    assert changed == [html / "_sources/book/intro.md"]
    assert (html / "_sources/book/intro.md").read_text() == PASTED
    assert method.read_text() == "# Method\n\nNo glue here.\n"
    assert method.stat().st_mtime_ns == before  # a file without roles is not rewritten
    # the notebook keeps its roles: it is a notebook, its glue runs again when executed
    assert (html / "_sources/book/notebooks/01_train.ipynb").read_bytes() == notebook
    assert not list(html.rglob("*.tmp"))  # the atomic write left no temporary behind
    assert paste_sources(html, source) == []  # a second pass finds nothing to paste


@pytest.mark.parametrize("role, message", [
    ("{glue:text}`notebooks/01_train.ipynb::missing:s`",
     r"_sources/book/intro\.md: line 3: \{glue:text\}`notebooks/01_train\.ipynb::missing:s`: "
     r"no notebook glued 'missing'"),
    ("{glue:text}`notebooks/09_gone.ipynb::n-models`", r"no notebook glued 'n-models'"),
    ("{glue:text}`n-models`", r"glued 'n-models' \(a Markdown page names the notebook"),
    ("{glue:md}`notebooks/01_train.ipynb::acc-vit`", r"'acc-vit' was glued without Markdown"),
    ("{glue:text}`notebooks/01_train.ipynb::train-data:.2f`",
     r"the format '\.2f' does not apply to \"'MNIST"),
    ("{glue:figure}`notebooks/01_train.ipynb::prov`", r"a glue role the download cannot paste"),
])
def test_paste_sources_names_the_role_it_cannot_paste(tmp_path, role, message):
    source, html = _fake_build(tmp_path, intro=f"# Intro\n\nA number: {role}.\n")
    with pytest.raises(ValueError, match=message):
        paste_sources(html, source)
    # nothing half-written: the file keeps its roles
    assert (html / "_sources/book/intro.md").read_text() == f"# Intro\n\nA number: {role}.\n"


def test_paste_glue_refuses_a_glue_directive():
    text = "# A\n\n```{glue:figure} fig-a\n:name: fig-a\n\nCaption.\n```\n"
    with pytest.raises(ValueError, match=r"intro\.md: line 3: a \{glue:figure\} directive"):
        paste_glue(text, {}, name="intro.md")
    # shown as code, it is left alone
    code = "# A\n\n````markdown\n" + text + "````\n"
    assert paste_glue(code, {}) == code


def test_paste_glue_formats_as_the_page_does():
    """MyST-NB formats the glued literal's value: a quoted number takes a numeric format."""
    glued = {"a": {"x": {"text/plain": "'0.9163'"}, "n": {"text/plain": "1329600"},
                   "s": {"text/plain": "'it\\'s'"}}}
    assert paste_glue("{glue:text}`a.ipynb::x:.2f` {glue:text}`a.ipynb::n:,d` "
                      "{glue:text}`a.ipynb::s` {glue}`a.ipynb::x`", glued) == \
        "0.92 1,329,600 it's 0.9163"


@pytest.mark.skipif(not (HTML / "_sources").is_dir(), reason="no built book (_build/html)")
def test_built_book_sources_hold_no_glue_roles():
    left = {p.relative_to(HTML).as_posix(): re.findall(r"\{glue[^`]*`[^`]*`", p.read_text())[:3]
            for p in sorted((HTML / "_sources").rglob("*.md"))
            if "{glue:" in p.read_text(encoding="utf-8")}
    assert not left, f"downloadable sources still hold glue roles: {left}"


@pytest.mark.skipif(not ((HTML / "book/intro.html").is_file()
                         and (STAGED / "book/intro.md").is_file()),
                    reason="no built book with its staged sources (_build/html, _build/.book)")
def test_pasted_text_is_what_the_built_page_shows(tmp_path):
    """An independent oracle: every role of the intro's staged source, pasted, reads exactly as
    the built page's pasted text, in order."""
    bs4 = pytest.importorskip("bs4")
    text = (STAGED / "book/intro.md").read_text(encoding="utf-8")
    parts = re.split(r"\{glue:text\}`[^`]*`", text)
    assert len(parts) > 1, "the intro glues no number"
    html = tmp_path / "html"
    (html / "_sources/book").mkdir(parents=True)
    (html / "_sources/book/intro.md").write_text(text, encoding="utf-8")
    paste_sources(html, STAGED)
    pasted = (html / "_sources/book/intro.md").read_text(encoding="utf-8")
    # the text between the roles is unchanged; what stands in each role's place, in order
    found = re.fullmatch("(.*?)".join(map(re.escape, parts)), pasted, re.S)
    assert found is not None
    page = bs4.BeautifulSoup((HTML / "book/intro.html").read_text(encoding="utf-8"),
                             "html.parser")
    shown = [s.get_text() for s in page.select("article .pasted-text")]
    assert list(found.groups()) == shown


def test_build_book_pastes_the_downloaded_intro(tmp_path):
    """Through a real build (a tiny book): the page shows the glued number and the downloaded
    intro holds it, where the book's source has the role."""
    from test_pipeline import tiny_book

    from topolip.pipeline.book import build_book

    root = tiny_book(tmp_path)
    nb = nbformat.read(root / "book/notebooks/01_nb.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("glue", outputs=[
        _glue("n-models", **{"text/plain": "'20'"})]))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, root / "book/notebooks/01_nb.ipynb")
    (root / "book/intro.md").write_text(
        "# Intro\n\nA tiny book of {glue:text}`notebooks/01_nb.ipynb::n-models:s` models.\n")
    html = build_book(root)
    assert ">20</span> models" in (html / "book/intro.html").read_text()
    assert (html / "_sources/book/intro.md").read_text() == "# Intro\n\nA tiny book of 20 models.\n"
    assert "{glue:text}" in (root / "book/intro.md").read_text()  # the source keeps its role
