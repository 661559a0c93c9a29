"""``make pdf``: the built book printed by headless chromium, checked against the HTML.

The assembly of the print page (:func:`topolip.pipeline.pdf.print_page`) is tested on a small
hand-made site; the PDF itself (``make pdf`` after ``make book``) is checked by
``make browser-test`` with poppler's ``pdftotext``: every chapter's title in order, every
numbered figure of the HTML, the glued numbers of the prose, page numbers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from topolip.pipeline.book import PDF_NAME
from topolip.pipeline.pdf import heading_texts, plain_math, print_page

bs4 = pytest.importorskip("bs4")

ROOT = Path(__file__).resolve().parents[1]
BOOK = Path(os.environ.get("TOPOLIP_BOOK_HTML", ROOT / "_build" / "html"))
REQUIRE = os.environ.get("TOPOLIP_REQUIRE_BROWSER") == "1"

PAGE = """<html><head><link rel="stylesheet" href="../_static/theme.css">
<script src="../_static/thebe.js"></script><script>window.MathJax = {{}};</script>
<script defer src="../_static/mathjax/tex-chtml.js"></script></head><body>
<nav>sidebar</nav><article><h1>{title}</h1><img src="../_images/{img}" alt="x">
<a href="other.html#sec">link</a> <a href="https://example.org/">out</a></article></body></html>"""


def test_print_page_joins_the_toc_pages_in_order_with_rebased_links(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: book/notebooks/01_train\n")
    (tmp_path / "_config.yml").write_text("title: A book\n")
    for doc in ("book/intro.md", "book/notebooks/01_train.ipynb"):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / doc).write_text("")
    html = tmp_path / "html"
    (html / "book/notebooks").mkdir(parents=True)
    (html / "book/intro.html").write_text(PAGE.format(title="Intro", img="a.png"))
    (html / "book/notebooks/01_train.html").write_text(PAGE.replace("../", "../../").format(
        title="1. Training", img="b.png"))
    out = print_page(html, tmp_path)
    soup = bs4.BeautifulSoup(out.read_text(), "html.parser")
    contents, *sections = soup.select("section.topolip-print-chapter")
    assert [s["data-page"] for s in sections] == ["book/intro.html",
                                                   "book/notebooks/01_train.html"]
    assert [s.h1.get_text() for s in sections] == ["Intro", "1. Training"]
    # the contents page first: each chapter, linked to its heading
    assert contents.h1.get_text() == "Contents" and "data-page" not in contents.attrs
    links = [(a.get_text(), a["href"]) for a in contents.find_all("a")]
    assert [text for text, _ in links] == ["Intro", "1. Training"]
    for (_, href), section in zip(links, sections, strict=True):
        assert section.h1["id"] == href[1:]
    assert "topolipFitTables" in str(soup.head)  # wide tables fitted as on the site
    assert [i["src"] for i in soup.find_all("img")] == ["_images/a.png", "_images/b.png"]
    site = "https://topolip.github.io/topolip-companion/"  # no repository.url: the default
    assert [a["href"] for s in sections for a in s.find_all("a")] == [
        f"{site}book/other.html#sec", "https://example.org/",
        f"{site}book/notebooks/other.html#sec", "https://example.org/"]
    scripts = [s.get("src") for s in soup.head.find_all("script")]
    # MathJax and its config, then the table fitting; no theme or Thebe script
    assert scripts == [None, "_static/mathjax/tex-chtml.js", None]
    assert soup.head.find("link")["href"] == "_static/theme.css"
    assert soup.find("nav") is None and "break-before: page" in soup.style.get_text()
    (html / "book/intro.html").unlink()
    with pytest.raises(FileNotFoundError, match="book/intro.html"):
        print_page(html, tmp_path)


def _running(text: str) -> str:
    r"""The PDF's text without its page footers ("66 / 138" on a line of its own), so a
    sentence broken across a page reads whole.

    >>> _running("per kind: FGSM 96%; Gaussian\n\n   66 / 138\n\fnoise 0%")
    'per kind: FGSM 96%; Gaussian\n\n\nnoise 0%'
    """
    return re.sub(r"^[ \t]*\d+ / \d+[ \t]*$", "", text, flags=re.M).replace("\f", "")


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00ad", "").replace("-\n", "-")).strip()


@pytest.mark.browser
def test_the_pdf_matches_the_html():
    pdf = BOOK / PDF_NAME
    if not pdf.exists() or shutil.which("pdftotext") is None:
        message = f"no {pdf} (run `make book` and `make pdf`) or no pdftotext (poppler-utils)"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    flat = _normal(_running(text))
    from topolip.pipeline.book import toc_documents

    staged = BOOK.parent / ".book"  # the sources the book was built from
    docs = toc_documents(staged if (staged / "_toc.yml").exists() else ROOT)
    titles, figures, glued = [], set(), []
    for doc in docs:
        soup = bs4.BeautifulSoup((BOOK / doc.with_suffix(".html")).read_text(), "html.parser")
        article = soup.find("article") or soup.body
        h1 = article.find("h1")
        titles.append(_normal(h1.get_text(" ")).replace("#", "").strip())
        figures |= {_normal(c.get_text()) for c in article.select("figcaption .caption-number")}
        glued += [_normal(s.get_text()) for s in article.select(".pasted-text")
                  if re.search(r"\d", s.get_text()) and len(s.get_text()) < 40]
    at = 0
    for title in titles:  # every chapter, in order
        found = flat.find(title, at)
        assert found >= 0, f"chapter title {title!r} not in the PDF (after position {at})"
        at = found + len(title)
    in_pdf = {m for m in re.findall(r"Fig\. ?\d+\.\d+", flat)}
    assert {f.rstrip() for f in figures} <= {f.replace("Fig.", "Fig. ").replace("  ", " ")
                                             for f in in_pdf}, "figure numbers missing"
    missing = [g for g in glued if g not in flat]
    assert not missing, f"glued numbers not in the PDF: {missing[:10]}"
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout).group(1))
    assert f"1 / {pages}" in text and f"{pages} / {pages}" in text  # page numbers
    assert len(figures) >= len(docs) - 5  # a figure in every notebook chapter


def _printed(word: str, words: set[str]) -> bool:
    """Whether ``word`` of an HTML table cell is among the PDF's ``words``, whole or wrapped
    at one of its own hyphens (Chromium breaks "(scale-free)" into "(scale-" and "free)"; a
    column cut off loses both pieces).

    >>> _printed("(scale-free)", {"(scale-", "free)"})
    True
    >>> _printed("(scale-free)", {"(scale-"})
    False

    pdftotext may also join the two pieces and drop the hyphen at the break ("(scalefree)"):

    >>> _printed("(scale-free)", {"(scalefree)"})
    True
    """
    if word in words:
        return True
    pieces = re.findall(r"[^-]*-|[^-]+$", word)
    joined = {"".join(p if i != k else p[:-1] for i, p in enumerate(pieces))
              for k in range(len(pieces) - 1)}
    return len(pieces) > 1 and (all(piece in words for piece in pieces)
                                or bool(joined & words))


def pdf_problems(pdf: Path, html: Path, docs: list[Path]) -> list[str]:
    """What a reader of ``pdf`` would miss: no contents page, an outline (bookmarks) without a
    chapter, a blank page, a heading alone at the foot of its page (what it heads pushed to
    the next), a table cell of the HTML pages ``docs`` (under ``html``) whose words
    are not in the PDF (a column cut off), a shown code block (a BibTeX entry, a command) whose
    text is not whole in the PDF (a line cut at the edge of its box)."""
    problems = []
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout).group(1))
    page_text = {}
    for page in range(1, pages + 1):
        text = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"],
                              capture_output=True, text=True, check=True).stdout
        page_text[page] = _normal(re.sub(r"\d+ / \d+", "", text))
        if not page_text[page]:
            problems.append(f"blank page {page}")
    xml = subprocess.run(["pdftohtml", "-xml", "-i", "-stdout", "-q", str(pdf)],
                         capture_output=True, text=True, check=True).stdout
    marks = [(int(page), _normal(bs4.BeautifulSoup(m, "html.parser").get_text()))
             for page, m in re.findall(r'<item page="(\d+)"[^>]*>([^<]*)', xml)]
    outline = [item for _, item in marks]
    for page, item in marks:  # nothing after a heading on its page: stranded at the foot
        if item != "Contents" and page_text.get(page, "").endswith(item):
            problems.append(f"heading {item!r} alone at the foot of page {page}")
    if not outline or outline[0] != "Contents":
        problems.append(f"the outline does not start with the contents page: {outline[:3]}")
    flat = _normal(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                                  check=True).stdout)
    # code in its printed order (-raw: the layout mode reads a comment aligned in a column
    # after all the lines' commands); a wrapped line may come back joined with the hyphen at
    # its break dropped ("topolip-" + "companion"): compared without spaces and hyphens
    raw = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    squeezed = re.sub(r"[\s\-\u00ad]", "", _running(raw))
    words = set(flat.split())
    words |= {w.rstrip(":") for w in words}  # a stacked table prints "label: value"
    headings = {"Contents"}
    for doc in docs:
        soup = bs4.BeautifulSoup((html / doc.with_suffix(".html")).read_text(), "html.parser")
        article = soup.find("article") or soup.body
        headings |= {plain_math(h) for h in heading_texts(article)}
        h1 = article.find("h1")
        if h1 is not None:
            title = _normal(h1.get_text(" ")).replace("#", "").strip()
            words_of_title = title.split()[-2:]
            if not any(all(w in item for w in words_of_title) for item in outline):
                problems.append(f"no bookmark for the chapter {title!r}")
        for pre in article.select("div.highlight pre"):
            if pre.find_parent("details") is not None:  # a code cell's source, one click away
                continue
            if re.sub(r"[\s\-]", "", pre.get_text()) not in squeezed:
                problems.append(f"{doc.stem}: code block {pre.get_text()[:40]!r} not whole in "
                                "the PDF (a line cut at the edge of its box)")
        for cell in article.select("div.topolip-table td, div.topolip-table th"):
            lost = [w for w in _normal(cell.get_text(" ")).split() if not _printed(w, words)]
            if lost:
                problems.append(f"{doc.stem}: table cell {cell.get_text(' ')[:40]!r} not in the "
                                f"PDF (missing {lost[:3]})")
    for item in outline:
        if item not in headings:  # Chromium's own titles join a wrapped heading's lines
            problems.append(f"bookmark {item!r} is not the text of a heading")
    return problems


@pytest.mark.browser
def test_the_pdf_has_a_way_in_no_blank_page_and_every_table_column():
    pdf = BOOK / PDF_NAME
    if not pdf.exists() or shutil.which("pdftohtml") is None:
        message = f"no {pdf} (run `make book` and `make pdf`) or no poppler-utils"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    from topolip.pipeline.book import toc_documents

    staged = BOOK.parent / ".book"
    docs = toc_documents(staged if (staged / "_toc.yml").exists() else ROOT)
    problems = pdf_problems(pdf, BOOK, docs)
    assert not problems, "\n".join(problems[:30])


def _planted_problems(tmp_path: Path, article: str) -> list[str]:
    """:func:`pdf_problems` of the built PDF against one planted page ``article`` (the
    bookmarks of the book's headings, which are not on that page, left out)."""
    pdf = BOOK / PDF_NAME
    if not pdf.exists() or shutil.which("pdftohtml") is None:
        pytest.skip(f"no {pdf} or no poppler-utils")
    (tmp_path / "cut.html").write_text(f"<html><body><article><h1>Contents</h1>{article}"
                                       "</article></body></html>")
    return [p for p in pdf_problems(pdf, tmp_path, [Path("cut.md")])
            if not p.startswith("bookmark ")]


@pytest.mark.browser
def test_pdf_problems_flags_a_table_cell_the_pdf_lacks(tmp_path):
    problems = _planted_problems(tmp_path, '<div class="topolip-table"><table><tr>'
                                 '<td>Kendall</td><td>zzcut 98765.4321</td></tr></table></div>')
    assert problems == ["cut: table cell 'zzcut 98765.4321' not in the PDF "
                        "(missing ['zzcut', '98765.4321'])"], problems


@pytest.mark.browser
def test_pdf_problems_flags_a_code_block_the_pdf_cut(tmp_path):
    problems = _planted_problems(
        tmp_path, '<div class="highlight"><pre>@misc{a,\n  note = {zzcut 98765.4321}\n}</pre>'
        '</div><details><div class="highlight"><pre>hidden = "zzsource"</pre></div></details>')
    assert problems == ["cut: code block '@misc{a,\\n  note = {zzcut 98765.4321}\\n}' not whole "
                        "in the PDF (a line cut at the edge of its box)"], problems


def test_bookmarks_are_retitled_by_their_headings_and_a_mismatch_is_refused():
    import io

    pypdf = pytest.importorskip("pypdf")
    from topolip.pipeline.pdf import retitle_outline

    writer = pypdf.PdfWriter()
    for _ in range(3):
        writer.add_blank_page(100, 100)
    # Chromium's titles of wrapped headings: lines joined without a space, a first line repeated
    top = writer.add_outline_item(title="1. 1. Method: diagrams,Method: diagrams,distances",
                                  page_number=0)
    writer.add_outline_item(title="1.1. Point clouds of alayer", page_number=1, parent=top)
    writer.add_outline_item(title="2. Theory ofΔℓ", page_number=2)  # MathJax's glyphs
    buffer = io.BytesIO()
    writer.write(buffer)
    headings = ["1. Method: diagrams, distances", "1.1. Point clouds of a layer",
                r"2. Theory of \(\Delta_\ell\)"]
    fixed = pypdf.PdfReader(io.BytesIO(retitle_outline(buffer.getvalue(), headings)))
    outline = fixed.outline
    assert [outline[0].title, outline[1][0].title, outline[2].title] == [
        *headings[:2], "2. Theory of Δₗ"]  # a formula in plain characters
    assert len(fixed.pages) == 3
    with pytest.raises(RuntimeError, match="3 bookmarks for 2 headings"):
        retitle_outline(buffer.getvalue(), headings[:2])
    with pytest.raises(RuntimeError, match="does not match the heading '2. Results'"):
        retitle_outline(buffer.getvalue(), [*headings[:2], "2. Results"])
