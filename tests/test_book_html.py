"""The built book reads as a paper: checks on its HTML.

:func:`check_book_html` is run on the book built from the tiny end-to-end chain by
``tests/test_end_to_end.py`` (slow); the tests here check the checker itself on small pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

bs4 = pytest.importorskip("bs4")

#: An absolute local path in a page (a leaked file name of the machine that built it).
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:home|Users|work|tmp|root|usr|opt|var|mnt)/\S+")
NUMBER = re.compile(r"[0-9]")
MATHJAX = re.compile(r"_static/mathjax/tex-[a-z-]+\.js")


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
    also: every image sits in a numbered figure with a caption, there is at least one figure,
    and after the first figure at least one paragraph of prose holds a computed (glued) number.
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
    if not chapter:
        return problems
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


def _page(tmp_path: Path, body: str, *, script: str = "../../_static/mathjax/tex-chtml.js"):
    (tmp_path / "_static/mathjax").mkdir(parents=True, exist_ok=True)
    (tmp_path / "_static/mathjax/tex-chtml.js").write_text("")
    page = tmp_path / "book/notebooks/01_train.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f'<html><head><script defer src="{script}"></script></head><body><article>'
                    f'{body}</article></body></html>')
    return page


GOOD = (FIGURE.format(alt="Training loss against the epoch")
        + '<p>The run trained <span class="pasted-text">4</span> models.</p>'
        + '<p><span class="math notranslate nohighlight">\\(x\\)</span></p>')


def test_checker_accepts_a_good_chapter(tmp_path):
    assert page_problems(_page(tmp_path, GOOD), chapter=True) == []


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
