"""The built book reads as a paper: checks on its HTML.

:func:`check_book_html` is run on the book built from the tiny end-to-end chain by
``tests/test_end_to_end.py`` (slow); the tests here check the checker itself on small pages.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from topolip.report.format import show_parameters

bs4 = pytest.importorskip("bs4")

#: An absolute local path in a page (a leaked file name of the machine that built it).
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:home|Users|work|tmp|root|usr|opt|var|mnt)/\S+")
NUMBER = re.compile(r"[0-9]")
MATHJAX = re.compile(r"_static/mathjax/tex-[a-z-]+\.js")
#: The caption of a chapter's parameter table (``topolip.report.format.show_parameters``).
PARAMETERS_CAPTION = inspect.signature(show_parameters).parameters["caption"].default


def chapters(root: Path) -> list[str]:
    """The notebook pages of the book, in the order of ``_toc.yml`` (paths without suffix)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for c in toc.get("chapters", [])]
    return [f for f in files if f.startswith("book/notebooks/")]


def _article(page: Path):
    soup = bs4.BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return soup, soup.find("article") or soup.body


def page_problems(page: Path, *, chapter: bool) -> list[str]:
    """Everything wrong with one built page (empty list: it passes).

    Every page: no ``Traceback``, ``Warning`` or absolute path in its text, formulas typeset by
    the book's own MathJax (no script from another host). A notebook chapter (``chapter``)
    also: it shows the table of its parameters, every image sits in a numbered figure with a
    caption, there is at least one figure, and after the first figure at least one paragraph
    of prose holds a computed (glued) number.
    """
    soup, article = _article(page)
    name = page.name
    problems = []
    text = article.get_text(" ")
    for word in ("Traceback", "Warning"):
        if word in text:
            at = text.index(word)
            problems.append(f"{name}: {word!r} in the page: ...{text[max(0, at - 60):at + 60]}...")
    for match in ABSOLUTE_PATH.finditer(text):
        problems.append(f"{name}: absolute path {match.group(0)!r}")
    for tag in article.find_all(["img", "a"]):
        ref = tag.get("src") or tag.get("href") or ""
        if ref.startswith("file:") or ABSOLUTE_PATH.match(ref):
            problems.append(f"{name}: absolute link {ref!r}")
    scripts = [s.get("src", "") for s in soup.find_all("script")]
    remote_math = [s for s in scripts if "mathjax" in s.lower() and re.match(r"(https?:)?//", s)]
    if remote_math:
        problems.append(f"{name}: MathJax loaded from another host: {remote_math}")
    has_math = bool(article.select(".math")) or "\\(" in text
    local = [s for s in scripts if MATHJAX.search(s)]
    if has_math and not local:
        problems.append(f"{name}: formulas but no local MathJax script (scripts: {scripts})")
    for src in local:
        target = (page.parent / src.split("?")[0]).resolve()
        if not target.exists():
            problems.append(f"{name}: MathJax script {src} is not in the built book")
    progress = [o.get_text()[:60] for o in article.select(".cell_output")
                if re.search(r"\d+/\d+ \[[\d:]+<|it/s\]", o.get_text())]
    if progress:
        problems.append(f"{name}: a progress bar in a cell output: {progress[0]!r}")
    fields = soup.select("button.search-button-field")
    if len(fields) > 1:
        problems.append(f"{name}: {len(fields)} search fields on the page (the theme's header "
                        "adds one above the sidebar's)")
    for cell in article.select("div.cell.tag_hide-input"):
        after = cell.find_next_sibling()
        if (not cell.select(".cell_output") and after is not None
                and "tag_hide-input" in after.get("class", [])):
            code = cell.select_one(".cell_input").get_text(" ", strip=True)[:60]
            problems.append(f"{name}: two 'Show code cell source' bars in a row, the first "
                            f"with no output ({code!r}): merge the cells")
    if not chapter:
        return problems
    if PARAMETERS_CAPTION not in text:  # show_parameters' table, the run's parameter values
        problems.append(f"{name}: no table of the parameters the page was computed with "
                        f"({PARAMETERS_CAPTION!r}: its show_parameters call is not displayed)")
    figures = article.find_all("figure")
    if not figures:
        problems.append(f"{name}: no figure")
    for img in article.find_all("img"):
        fig = img.find_parent("figure")
        caption = fig.find("figcaption") if fig else None
        if caption is None or caption.find(class_="caption-number") is None:
            problems.append(f"{name}: image {img.get('src')!r} is not in a numbered, "
                            "captioned figure")
        elif not img.get("alt") or re.fullmatch(r"[0-9a-f]{16,}", img.get("alt", "")):
            problems.append(f"{name}: image {img.get('src')!r} has no meaningful alt text")
    if figures:
        prose = [p for p in figures[0].find_all_next("p")
                 if p.find_parent("figure") is None and p.find_parent(class_="cell") is None]
        glued = [p for p in prose
                 if any(NUMBER.search(s.get_text()) for s in p.select(".pasted-text"))]
        if not glued:
            problems.append(f"{name}: no paragraph after the first figure holds a computed "
                            "number")
    return problems


def check_book_html(html: Path, root: Path) -> None:
    """Assert that every page of the book built under ``html`` reads as a paper.

    Parameters
    ----------
    html : path
        ``_build/html`` of the book.
    root : path
        The repository (or staged) root holding ``_toc.yml``.

    Raises
    ------
    AssertionError
        Listing every problem found on every page.
    """
    pages = chapters(root)
    problems = []
    for page in sorted((html / "book").rglob("*.html")):
        rel = page.relative_to(html).with_suffix("").as_posix()
        problems += page_problems(page, chapter=rel in pages)
    for rel in pages:
        if not (html / f"{rel}.html").exists():
            problems.append(f"{rel}: chapter listed in _toc.yml but not built")
    assert not problems, "\n".join(problems)


FIGURE = """<figure class="align-default" id="fig-a"><img alt="{alt}" src="../../_images/a.png" />
<figcaption><p><span class="caption-number">Fig. 3.1 </span><span class="caption-text">
Caption.</span></p></figcaption></figure>"""


#: The theme's search field (the sidebar's, once per page).
SEARCH = '<button class="btn search-button-field search-button__button">Search</button>'


def _page(tmp_path: Path, body: str, *, script: str = "../../_static/mathjax/tex-chtml.js"):
    (tmp_path / "_static/mathjax").mkdir(parents=True, exist_ok=True)
    (tmp_path / "_static/mathjax/tex-chtml.js").write_text("")
    page = tmp_path / "book/notebooks/01_train.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f'<html><head><script defer src="{script}"></script></head><body><article>'
                    f'{body}</article></body></html>')
    return page


GOOD = (f'<div class="topolip-table"><table><caption>{PARAMETERS_CAPTION}</caption></table>'
        '</div>' + FIGURE.format(alt="Training loss against the epoch")
        + '<p>The run trained <span class="pasted-text">4</span> models.</p>'
        + '<p><span class="math notranslate nohighlight">\\(x\\)</span></p>')


#: A code cell with its source one click away (MyST-NB's ``hide-input``), ``out`` its output.
HIDDEN = ('<div class="cell tag_hide-input docutils container"><details class="hide above-input">'
          '<summary>Show code cell source</summary><div class="cell_input docutils container">'
          '<pre>{code}</pre></div></details>{out}</div>')
OUTPUT = '<div class="cell_output docutils container"><p>a table</p></div>'


def test_checker_accepts_a_good_chapter(tmp_path):
    assert page_problems(_page(tmp_path, GOOD), chapter=True) == []
    shown = GOOD + HIDDEN.format(code="a = 1", out=OUTPUT) + HIDDEN.format(code="b = a", out="")
    assert page_problems(_page(tmp_path, shown), chapter=True) == [], "an output between"
    assert page_problems(_page(tmp_path, SEARCH + GOOD), chapter=True) == [], "one search field"


@pytest.mark.parametrize("body, script, message", [
    (GOOD.replace("pasted-text", "other"), None, "computed number"),
    (GOOD + '<img src="x.png" alt="x">', None, "not in a numbered"),
    (GOOD.replace('class="caption-number"', ""), None, "not in a numbered"),
    (GOOD.replace("Training loss against the epoch", "3f2a9c1d8e7b6a5f4e3d"), None, "alt text"),
    (GOOD + "<pre>Traceback (most recent call last)</pre>", None, "Traceback"),
    (GOOD + "<p>/usr/lib/python3/x.py:3: FutureWarning: deprecated</p>", None, "Warning"),
    (GOOD + "<p>saved to /home/me/results/a.csv</p>", None, "absolute path"),
    (GOOD, "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", "another host"),
    (GOOD, "../../_static/mathjax/missing.js", "no local MathJax"),
    ("<p>No figure, <span class='pasted-text'>1</span>.</p>", None, "no figure"),
    (GOOD.replace(PARAMETERS_CAPTION, "Other"), None, "no table of the parameters"),
    (SEARCH + GOOD + SEARCH, None, "2 search fields"),
    (GOOD + HIDDEN.format(code="a = 1", out="") + HIDDEN.format(code="b = a", out=""), None,
     "two 'Show code cell source' bars in a row"),
])
def test_checker_finds_each_problem(tmp_path, body, script, message):
    page = _page(tmp_path, body, **({"script": script} if script else {}))
    problems = page_problems(page, chapter=True)
    assert any(message in p for p in problems), problems


def test_checker_reads_the_chapters_from_the_toc():
    root = Path(__file__).resolve().parents[1]
    pages = chapters(root)
    assert pages[0] == "book/notebooks/00_theory"
    assert "book/notebooks/09_measures" in pages
    assert pages.index("book/notebooks/09_measures") < pages.index("book/notebooks/08_verdict")


LAUNCH = re.compile(r'href="(https://(?:mybinder\.org/v2/gh|colab\.research\.google\.com/github)'
                    r'/[^"]+)"')


def launch_targets(html: Path) -> dict[str, list[tuple[str, str, str]]]:
    """Every Binder and Colab link of the built pages: ``{page: [(url, branch, path)]}``.

    ``path`` is the file the link opens in the repository, ``branch`` the branch it opens."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for page in sorted(html.rglob("*.html")):
        for url in LAUNCH.findall(page.read_text(encoding="utf-8")):
            url = url.replace("&amp;", "&")
            if m := re.match(r"https://mybinder\.org/v2/gh/[^/]+/[^/]+/([^?]+)\?urlpath=lab/tree/"
                             r"(.+)$", url):
                branch, path = m.groups()
            elif m := re.match(r"https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/"
                               r"([^/]+)/(.+)$", url):
                branch, path = m.groups()
            else:
                branch, path = "", ""
            found.setdefault(page.relative_to(html).as_posix(), []).append((url, branch, path))
    return found


def launch_problems(html: Path, staged: Path) -> list[str]:
    """Launch links that do not open a file the deploy publishes.

    The deploy workflow commits the staged notebooks (``staged`` = ``_build/.book``, the
    executed notebooks with their install cell) to the branch ``_config.yml`` names
    (``repository.branch``); every launch link must open that branch and one of those files,
    and every notebook page must have its links."""
    branch = yaml.safe_load((staged / "_config.yml").read_text())["repository"]["branch"]
    problems = []
    targets = launch_targets(html)
    for page, links in targets.items():
        for url, on, path in links:
            if on != branch:
                problems.append(f"{page}: {url} opens branch {on!r}, not {branch!r}")
            elif not path.endswith(".ipynb") or not (staged / path).is_file():
                problems.append(f"{page}: {url} opens {path!r}, which the deploy does not "
                                "publish")
    for rel in chapters(staged):
        if not targets.get(f"{rel}.html"):
            problems.append(f"{rel}.html: no launch link")
    return problems


def test_launch_checker(tmp_path):
    staged = tmp_path / "staged"
    (staged / "book/notebooks").mkdir(parents=True)
    (staged / "_config.yml").write_text("repository: {url: 'https://github.com/o/r', "
                                        "branch: launch}\n")
    (staged / "_toc.yml").write_text("root: book/intro\nchapters:\n"
                                     "  - file: book/notebooks/01_train\n")
    (staged / "book/notebooks/01_train.ipynb").write_text("{}")
    html = tmp_path / "html"
    (html / "book/notebooks").mkdir(parents=True)
    good = ('<a href="https://mybinder.org/v2/gh/o/r/launch?urlpath=lab/tree/book/notebooks/'
            '01_train.ipynb">b</a><a href="https://colab.research.google.com/github/o/r/blob/'
            'launch/book/notebooks/01_train.ipynb">c</a>')
    (html / "book/notebooks/01_train.html").write_text(good)
    assert launch_problems(html, staged) == []
    assert [p for _, p, _ in launch_targets(html)["book/notebooks/01_train.html"]] == [
        "launch", "launch"]
    (html / "book/notebooks/01_train.html").write_text(good.replace("launch/", "main/"))
    assert "opens branch 'main'" in launch_problems(html, staged)[0]
    (html / "book/notebooks/01_train.html").write_text(good.replace("01_train.ipynb",
                                                                    "02_x.ipynb"))
    assert "which the deploy does not publish" in launch_problems(html, staged)[0]
    (html / "book/notebooks/01_train.html").write_text("")
    assert launch_problems(html, staged) == ["book/notebooks/01_train.html: no launch link"]


# --- raw identifiers in reader-facing text (issue 27) ---------------------------------------

HTML = Path(__file__).resolve().parents[1] / "_build" / "html"


def raw_identifiers(root: Path) -> dict[str, str]:
    """The project's identifiers a reader should never meet, each with where it comes from.

    The snake_case column names of the table schemas (``topolip.schema.SCHEMAS``) and of the
    parameter schema (``topolip.pipeline.param_schema.SCHEMA``); the claim ids of
    ``{root}/data/claims.yml`` that are slugs of several words (``smoothness-robustness``; the
    one-word ``envelope`` is an English word); the roster's keys (architectures, perturbation
    kinds, out-of-distribution sets, groups) that are snake_case, or one word that is not its
    label but a spelling of it (``fgsm`` for FGSM, ``vit`` for ViT) or not in it at all
    (``autoattack`` for APGD-CE + APGD-T). One-word columns (``seed``, ``accuracy``) are words.
    """
    from topolip import roster
    from topolip.pipeline.param_schema import SCHEMA
    from topolip.schema import SCHEMAS

    found: dict[str, str] = {}
    for table in SCHEMAS.values():
        for column in table.columns:
            if re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)+", column.name):
                found.setdefault(column.name, f"a column of the {table.name} table")
    for name in SCHEMA:
        if "_" in name:
            found.setdefault(name, "a parameter")
    for claim in yaml.safe_load((root / "data/claims.yml").read_text()):
        if "-" in claim["id"]:
            found.setdefault(claim["id"], "a claim id")
    for item in (*roster.ARCHS, *roster.KINDS, *roster.OOD_SETS, *roster.GROUPS):
        name, label = item.name, item.label
        if " " in name:
            continue
        if "_" in name or name.lower() not in label.lower() or (label.lower() == name
                                                                 and label != name):
            found.setdefault(name, "a roster key")
    return found


#: Inline code that is an expression, a path or a command (a call, a dotted name, an option):
#: code shown as code, not a name used as a word of the sentence.
_CODE_EXPRESSION = re.compile(r"[(./=]|^-|\s")


def reader_text(page: Path) -> str:
    """What a reader of one built page reads, whitespace collapsed: the article's visible text
    (prose, headings, figure captions and alt texts, table captions, headers and cells).

    Left out: code (the cells' inputs, ``pre`` blocks, inline code holding an expression, a
    path or a command), formulas, and the parameters tables of the pages (their caption
    starts with "Parameters": their rows are parameter names by design)."""
    soup, article = _article(page)
    for tag in article.select("pre, .cell_input, div.highlight, script, style, .math"):
        tag.decompose()
    for code in article.find_all("code"):
        if _CODE_EXPRESSION.search(code.get_text().strip()):
            code.decompose()
    for table in article.find_all("table"):
        caption = table.find("caption")
        if caption is not None and caption.get_text().strip().startswith("Parameters"):
            table.decompose()
    alts = [img.get("alt", "") for img in article.find_all("img")]
    return re.sub(r"\s+", " ", " ".join([article.get_text(" "), *alts]))


def identifier_leaks(html: Path, identifiers: dict[str, str],
                     allowed: dict[str, list[str]] | None = None) -> list[tuple[str, str, str]]:
    """Every raw identifier in the reader text of the built pages under ``{html}/book``.

    Returns ``(page, identifier, text around it)`` per occurrence. A name inside a longer name
    or path (``topolip_summary.csv``, ``fig-accuracy_drop``) is not one. ``allowed`` maps a page
    (``book/notebooks/04_robustness.html``) to phrases of its text where a name is the subject
    by design; an occurrence inside such a phrase is not a leak.
    """
    allowed = allowed or {}
    pattern = re.compile(r"(?<![\w./:#=-])("
                         + "|".join(sorted(map(re.escape, identifiers), key=len, reverse=True))
                         + r")(?![\w/-]|\.\w)")
    leaks = []
    for page in sorted((html / "book").rglob("*.html")):
        rel = page.relative_to(html).as_posix()
        text = reader_text(page)
        spans = [(m.start(), m.end()) for phrase in allowed.get(rel, [])
                 for m in re.finditer(re.escape(phrase), text)]
        for m in pattern.finditer(text):
            if not any(a <= m.start() and m.end() <= b for a, b in spans):
                leaks.append((rel, m.group(1), text[max(0, m.start() - 40):m.end() + 40]))
    return leaks


#: Where a raw name is the subject of the sentence, by design.
ALLOWED_IDENTIFIERS = {
    # the chapter tells the reader which key the tables use for the APGD-CE + APGD-T pair
    "book/notebooks/04_robustness.html": ["our autoattack", "autoattack in the tables"],
    # the Reproduce page names the parameter a researcher sets to move the results folder
    "book/reproduce.html": ["profile’s results_dir"],
}

def test_identifier_checker_on_planted_names(tmp_path):
    root = Path(__file__).resolve().parents[1]
    ids = raw_identifiers(root)
    assert {"accuracy_drop", "end_to_end_scale_free", "smoothness-robustness", "gaussian_noise",
            "autoattack", "fgsm", "vit", "attention_stack", "topolip_strengths"} <= set(ids)
    assert not {"seed", "accuracy", "envelope", "contrast", "digits", "square"} & set(ids)
    html = tmp_path / "html"
    body = ("<h2>Result</h2><p>The accuracy_drop of each seed, and the Gaussian noise.</p>"
            "<table><caption>Verdicts</caption><thead><tr><th>end_to_end_scale_free</th></tr>"
            "</thead><tbody><tr><td>smoothness-robustness</td></tr></tbody></table>"
            '<figure><img alt="vit vs resnet" src="a.png"><figcaption>Under fgsm.</figcaption>'
            "</figure><p>Perturb with each <code>topolip_strengths</code>.</p>"
            # code, paths, parameters tables and allowed phrases are not reader text
            '<div class="cell_input"><pre>accuracy_drop = 1</pre></div>'
            "<pre>topolip run --set gaussian_noise=1</pre>"
            "<p>See <code>topolip.report.figures.accuracy_drop(t)</code> and "
            '<a href="tables/accuracy_drop.csv">tables/accuracy_drop.csv</a>, '
            "fig-accuracy_drop, our autoattack.</p>"
            "<table><caption>Parameters of this run</caption><tbody><tr><td>min_accuracy</td>"
            "</tr></tbody></table>")
    page = html / "book/notebooks/08_verdict.html"
    page.parent.mkdir(parents=True)
    page.write_text(f"<html><body><article>{body}</article></body></html>")
    leaks = identifier_leaks(html, ids, {"book/notebooks/08_verdict.html": ["our autoattack"]})
    assert [name for _, name, _ in leaks] == [
        "accuracy_drop", "end_to_end_scale_free", "smoothness-robustness", "fgsm",
        "topolip_strengths", "vit", "resnet"]
    assert "The accuracy_drop of each seed" in leaks[0][2]
    assert [n for _, n, _ in identifier_leaks(html, ids)].count("autoattack") == 1


@pytest.mark.skipif(not (HTML / "book").is_dir(), reason="no built book (_build/html)")
def test_built_book_shows_no_raw_identifier():
    """No raw column, parameter or claim name in any page's reader text (allowed phrases
    aside)."""
    root = Path(__file__).resolve().parents[1]
    leaks = identifier_leaks(HTML, raw_identifiers(root), ALLOWED_IDENTIFIERS)
    assert not leaks, "\n".join(f"{p}: {n!r} in ...{t}..." for p, n, t in leaks)


def test_bibliography_prints_each_title_in_its_authors_casing():
    # pybtex's styles lower-case a title after its first letter unless it is braced ("The
    # lipschitz constant of self-attention"); the references are printed by sphinxcontrib-bibtex
    # with its default formatting style, alpha
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    root = Path(__file__).resolve().parents[1]
    bib = parse_file(root / "book/references.bib")
    style = find_plugin("pybtex.style.formatting", "alpha")()
    lost = []
    for entry in style.format_bibliography(bib):
        printed = entry.text.render_as("text")
        title = bib.entries[entry.key].fields["title"]
        title = title.replace("{", "").replace("}", "").replace("--", "\N{EN DASH}")
        if title not in printed:
            lost.append(f"{entry.key}: {printed}")
    assert not lost, "\n".join(lost)
