"""The book as one PDF (``make pdf``): Debian's headless chromium prints the built HTML, offline.

Jupyter Book 1's own PDF builder downloads a Chromium at run time; this does not. It

1. assembles one page, ``_build/html/print.html``, from the pages of the table of contents in
   order (each page's ``<article>``, its links rebased), with the book's own style sheets and
   MathJax, a print style sheet that hides buttons, sidebars and permalinks, starts each
   chapter on a new page and keeps every figure within a page, and a contents page (every
   chapter and section, linked); tables too wide for the printed column are laid out as on the
   site (``FIT_TABLES_JS``: smaller, else stacked), so that no column is cut;
2. opens it in headless chromium (``chromedriver``'s WebDriver, the network off: the page is
   served from 127.0.0.1 and every other host goes to a closed port), waits for the images and
   for MathJax to finish typesetting, and prints it with page numbers in the footer and an
   outline of the headings as the PDF's bookmarks (the DevTools ``Page.printToPDF`` command);
3. titles each bookmark with its heading's text (:func:`retitle_outline`, pypdf): Chromium
   joins a wrapped heading's lines without a space and repeats some of them.

The PDF lands in ``_build/pdf/<name>.pdf`` and a copy in ``_build/html/<name>.pdf``, which the
site links (``book/intro.md``, ``book/reproduce.md``).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath

import yaml

from topolip.pipeline.book import (
    FIT_TABLES_JS,
    PDF_NAME,
    repository_url,
    site_url,
    toc_documents,
)

__all__ = ["build_pdf", "heading_text", "heading_texts", "plain_math", "print_page",
           "retitle_outline"]

#: The assembled page, relative to the built HTML.
PRINT_PAGE = "print.html"
#: Hidden in print: the theme's chrome, buttons, permalinks, launch and Thebe widgets.
PRINT_CSS = """
@page { size: A4; margin: 18mm 16mm 18mm 16mm; }
html, body { background: #fff !important; }
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .header-article, .prev-next-area,
.bd-footer, .bd-footer-article, .bd-footer-content, footer, .headerlink, .toggle-button,
button, .dropdown-buttons, .thebe-launch-button, .copybtn, .search-button, nav,
.bd-header-article, .skip-link, #pst-back-to-top { display: none !important; }
.topolip-print-chapter { break-before: page; }
.topolip-print-chapter:first-of-type { break-before: auto; }
figure, table, img, pre, .math, .topolip-table tr { break-inside: avoid; }
/* a heading stays with what follows it: 13 sat alone at a page's foot, their figure or table
   pushed to the next page */
h1, h2, h3, h4, h5, h6 { break-after: avoid; break-inside: avoid; }
img { max-width: 100% !important; height: auto !important; }
/* a figure never taller than a page (a taller one was pushed to the next page, leaving a
   blank one, and split there anyway): the image shrinks to leave room for its caption */
figure img, img { max-height: 190mm !important; width: auto !important;
                  object-fit: contain; }
div.topolip-table, .table-wrapper, div.cell_output { overflow: visible !important; }
/* code and BibTeX blocks wrap their long lines: a printed scroll box cuts them at its edge */
div.highlight pre { white-space: pre-wrap !important; overflow-wrap: anywhere;
                    overflow: visible !important; }
/* laid out at the printed column's width (A4 less the margins), on screen too, so that the
   tables' fitting (FIT_TABLES_JS) measures what will be printed */
#topolip-print { width: 178mm; max-width: 178mm; margin: 0; padding: 0; }
.topolip-table td, .topolip-table th { max-width: none !important; }
.topolip-print-contents ol { list-style: none; padding-left: 0; }
.topolip-print-contents ol ol { padding-left: 1.5em; font-size: 0.95em; }
.topolip-print-contents li { margin: 1px 0; }
a { color: inherit; text-decoration: none; }
body { font-size: 10.5pt; }
"""
FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#444">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1100,1400",
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1;localhost",
]
WAIT = r"""
const done = arguments[arguments.length - 1];
function images() {
  return Promise.all(Array.from(document.images).map(i => i.complete ? null :
      new Promise(r => { i.onload = r; i.onerror = r; })));
}
function ready() {
  const math = (window.MathJax && MathJax.startup && MathJax.startup.promise)
      ? MathJax.startup.promise : Promise.resolve();
  Promise.all([math, images()]).then(() => {
    if (window.topolipFitTables) topolipFitTables();
    return new Promise(r => setTimeout(r, 50));
  }).then(() => done({
      ok: true, mathjax: !!window.MathJax, figures: document.querySelectorAll("figure").length,
      stacked: document.querySelectorAll(".topolip-stacked").length}),
    e => done({ok: false, error: String(e)}));
}
if (document.readyState === "complete") ready(); else window.addEventListener("load", ready);
"""


def _is_relative(url: str) -> bool:
    return bool(url) and not url.startswith(("#", "/", "data:", "mailto:")) and "://" not in url


def _rebase(url: str, page_dir: PurePosixPath) -> str:
    """``url`` relative to a page in ``page_dir`` (relative to the HTML root), made relative to
    the root."""
    path, sep, fragment = url.partition("#")
    parts: list[str] = list(page_dir.parts)
    for part in PurePosixPath(path).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) + (sep + fragment if sep else "")


def print_page(html: str | Path, root: str | Path = ".") -> Path:
    """Write ``{html}/print.html``: every page of ``{root}/_toc.yml`` in order, one document.

    Parameters
    ----------
    html : path
        The built book (``_build/html``).
    root : path, default="."
        The folder holding ``_toc.yml`` (the repository, or a staged copy of it).

    Returns
    -------
    Path
        The page written.

    Raises
    ------
    FileNotFoundError
        If a page of the table of contents was not built.
    """
    import bs4

    html, root = Path(html), Path(root)
    pages = [doc.with_suffix(".html") for doc in toc_documents(root)]
    missing = [p.as_posix() for p in pages if not (html / p).is_file()]
    if missing:
        raise FileNotFoundError(f"pages of _toc.yml not built under {html}: {missing} "
                                "(run `make book` first)")
    first = bs4.BeautifulSoup((html / pages[0]).read_text(encoding="utf-8"), "html.parser")
    out = bs4.BeautifulSoup("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                            "</head><body><main id='topolip-print'></main></body></html>",
                            "html.parser")
    title = yaml.safe_load((root / "_config.yml").read_text()).get("title", "")
    out.head.append(out.new_tag("title"))
    out.head.title.string = title
    base = PurePosixPath(pages[0].parent.as_posix())
    for tag in first.head.find_all(["link", "script"]):
        if tag.name == "link" and "stylesheet" not in (tag.get("rel") or []):
            continue
        if tag.name == "script" and "mathjax" not in (tag.get("src", "") + tag.get_text()).lower():
            continue  # only MathJax and its configuration; no theme or Thebe script
        for attr in ("href", "src"):
            if _is_relative(tag.get(attr, "")):
                tag[attr] = _rebase(tag[attr], base)
        out.head.append(tag)
    style = out.new_tag("style")
    style.string = PRINT_CSS
    out.head.append(style)
    main = out.find("main")
    site = site_url(repository_url(root))
    for page in pages:
        soup = bs4.BeautifulSoup((html / page).read_text(encoding="utf-8"), "html.parser")
        article = soup.find("article") or soup.body
        page_dir = PurePosixPath(page.parent.as_posix())
        for tag in article.find_all(True):
            for attr in ("href", "src"):
                if _is_relative(tag.get(attr, "")):
                    tag[attr] = _rebase(tag[attr], page_dir)
                    if tag.name == "a" and attr == "href":  # the PDF's links open the site
                        tag[attr] = site + tag[attr]
        section = out.new_tag("section", attrs={"class": "topolip-print-chapter",
                                                "data-page": page.as_posix()})
        section.extend(list(article.children))
        main.append(section)
    main.insert(0, _contents(out, main))
    fit = out.new_tag("script")
    fit.string = FIT_TABLES_JS
    out.head.append(fit)
    path = html / PRINT_PAGE
    path.write_text(str(out), encoding="utf-8")
    return path


def _contents(out, main):
    """The contents page: every chapter (``h1``) and section (``h2``) of ``main`` in order, each
    a link to its heading (given an id ``topolip-toc-N``: pages' own ids may repeat)."""
    section = out.new_tag("section", attrs={"class": "topolip-print-chapter "
                                                     "topolip-print-contents"})
    title = out.new_tag("h1")
    title.string = "Contents"
    section.append(title)
    top = out.new_tag("ol")
    section.append(top)
    current = None
    for n, heading in enumerate(main.find_all(["h1", "h2"])):
        text = heading_text(heading)
        if not text:
            continue
        heading["id"] = f"topolip-toc-{n}"
        item = out.new_tag("li")
        link = out.new_tag("a", href=f"#topolip-toc-{n}")
        link.string = text
        item.append(link)
        if heading.name == "h1" or current is None:
            top.append(item)
            current = out.new_tag("ol")
            item.append(current)
        else:
            current.append(item)
    for empty in section.find_all("ol"):
        if not empty.find("li"):
            empty.decompose()
    return section


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def _serve(directory: Path):
    handler = functools.partial(_Quiet, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _call(base: str, method: str, path: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=300) as response:
            return json.loads(response.read())["value"]
    except urllib.error.HTTPError as exc:
        value = json.loads(exc.read()).get("value", {})
        raise RuntimeError(f"WebDriver {path}: {value.get('error')}: "
                           f"{str(value.get('message', ''))[:300]}") from None


def _binaries(chromium: str | None, chromedriver: str | None) -> tuple[str, str]:
    chromium = chromium or next((shutil.which(n) for n in ("chromium", "chromium-browser",
                                                           "google-chrome") if shutil.which(n)),
                                None)
    chromedriver = chromedriver or shutil.which("chromedriver")
    if not chromium or not chromedriver:
        raise FileNotFoundError("chromium and chromedriver are not on PATH (Debian: apt-get "
                                "install chromium chromium-driver; .ci/run installs them)")
    return chromium, chromedriver


def build_pdf(html: str | Path = "_build/html", root: str | Path = ".", *,
              out: str | Path | None = None, chromium: str | None = None,
              chromedriver: str | None = None) -> Path:
    """Print the built book to ``_build/pdf/<name>.pdf``
    (:data:`topolip.pipeline.book.PDF_NAME`) and copy it into ``html``; return the PDF's path.

    Parameters
    ----------
    html : path, default="_build/html"
        The built book.
    root : path, default="."
        The folder holding ``_config.yml`` and ``_toc.yml``.
    out : path, optional
        Where to write the PDF (default ``{root}/_build/pdf/<name>.pdf``).
    chromium, chromedriver : str, optional
        The binaries (default: found on ``PATH``).

    Raises
    ------
    FileNotFoundError
        If chromium or chromedriver is missing, or a page of the toc was not built.
    RuntimeError
        If the page does not load, MathJax fails, or printing fails.
    """
    import bs4

    html, root = Path(html).resolve(), Path(root).resolve()
    chromium, chromedriver = _binaries(chromium, chromedriver)
    out = Path(out) if out else root / "_build" / "pdf" / PDF_NAME
    page = print_page(html, root)
    headings = heading_texts(bs4.BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    profile = tempfile.mkdtemp(prefix="topolip-pdf-")
    driver = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    session = None
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                if _call(base, "GET", "/status")["ready"]:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("chromedriver did not start within 30 s")
            time.sleep(0.2)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium,
                                   "args": [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]},
            "timeouts": {"script": 240000, "pageLoad": 240000}}}}
        session = _call(base, "POST", "/session", caps)["sessionId"]
        with _serve(html) as site:
            _call(base, "POST", f"/session/{session}/url", {"url": site + page.name})
            state = _call(base, "POST", f"/session/{session}/execute/async",
                          {"script": WAIT, "args": []})
            if not state.get("ok"):
                raise RuntimeError(f"the print page did not settle: {state.get('error')}")
            result = _call(base, "POST", f"/session/{session}/goog/cdp/execute", {
                "cmd": "Page.printToPDF",
                "params": {"printBackground": True, "preferCSSPageSize": True,
                           # bookmarks: the outline of the headings (needs a tagged PDF)
                           "generateTaggedPDF": True, "generateDocumentOutline": True,
                           "displayHeaderFooter": True, "headerTemplate": "<div></div>",
                           "footerTemplate": FOOTER}})
    finally:
        if session:
            with contextlib.suppress(Exception):
                _call(base, "DELETE", f"/session/{session}")
        driver.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            driver.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
        page.unlink()  # not a page of the site
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")  # atomic: a killed run leaves the old PDF whole
    tmp.write_bytes(retitle_outline(base64.b64decode(result["data"]), headings))
    tmp.replace(out)
    shutil.copy2(out, html / out.name)
    return out


def heading_text(heading) -> str:
    """The text of one heading tag, its permalinks (``a.headerlink``, removed from the tree)
    left out and its spaces normalised: a contents entry, a bookmark's title."""
    for link in heading.select("a.headerlink"):
        link.decompose()
    return " ".join(heading.get_text(" ").split())


#: TeX commands of the book's headings and their characters (a bookmark title is plain text).
_TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "varepsilon": "ε",
    "epsilon": "ε", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ",
    "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "omega": "ω", "ell": "ℓ",
    "infty": "∞", "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "to": "→", "approx": "≈", "in": "∈", "lVert": "‖", "rVert": "‖", "|": "‖", ",": " ",
}
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvxℓ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓₗ",
                strict=True))
_SUP = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyz",
                "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ", strict=True))


def _tex_plain(tex: str) -> str:
    r"""TeX without scripts in plain characters: ``\mathrm{x}`` and the like keep their
    argument, a listed command becomes its character, braces go."""
    tex = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\s*\{([^{}]*)\}", r"\1", tex)
    tex = re.sub(r"\\([A-Za-z]+|[|,])\s*", lambda m: _TEX_SYMBOLS.get(m[1], m[1]), tex)
    return tex.replace("{", "").replace("}", "")


def _script(match: re.Match) -> str:
    mark, body = match[1], _tex_plain(match[2] if match[2] is not None else match[3])
    table = _SUB if mark == "_" else _SUP
    if all(c in table for c in body):
        return "".join(table[c] for c in body)
    return mark + (body if len(body) == 1 else f"({body})")


def plain_math(text: str) -> str:
    r"""``text`` with each inline formula ``\(...\)`` written in plain characters, for a PDF
    bookmark (its title cannot typeset TeX): Greek letters and symbols as Unicode, a sub- or
    superscript as Unicode sub/superscript characters where each of its characters has one,
    else after ``_`` / ``^`` (in parentheses if longer than one character); ``\mathrm`` and
    the like keep their argument; a command not listed keeps its name.

    >>> plain_math(r"Scale-free displacement \(\Delta_\ell/s_\ell\) at every probe point")
    'Scale-free displacement Δₗ/sₗ at every probe point'
    >>> plain_math(r"ratio \(\Delta^{\mathrm{sf}}_L/\Delta^{\mathrm{sf}}_0\) of every")
    'ratio Δˢᶠ_L/Δˢᶠ₀ of every'
    >>> plain_math(r"the \(L_\infty\) budget \(\varepsilon\); \(\Delta_{\ell-1}\)")
    'the L_∞ budget ε; Δₗ₋₁'
    >>> plain_math(r"Kendall \(\tau\), \(2L_\ell\) (margin \(\varepsilon_{\ell-1}\) )")
    'Kendall τ, 2Lₗ (margin εₗ₋₁ )'
    >>> plain_math("no formula")
    'no formula'
    """
    def formula(match: re.Match) -> str:
        tex = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\s*\{([^{}]*)\}", r"\1",
                     match[1])
        tex = re.sub(r"([_^])(?:\{([^{}]*)\}|(\\[A-Za-z]+|[^\s{\\]))", _script, tex)
        return " ".join(_tex_plain(tex).split())

    return re.sub(r"\\\((.*?)\\\)", formula, text)


def heading_texts(tree) -> list[str]:
    """The non-empty :func:`heading_text` of every heading (``h1``–``h6``) in the
    BeautifulSoup ``tree``, in document order: the titles of the PDF's bookmarks."""
    return [text for heading in tree.find_all(["h1", "h2", "h3", "h4", "h5", "h6"])
            if (text := heading_text(heading))]


def _squeezed(text: str) -> str:
    return "".join(text.split())


def retitle_outline(pdf: bytes, headings: list[str]) -> bytes:
    """The PDF ``pdf`` with its bookmarks titled by ``headings`` (in document order).

    Chromium's outline has one bookmark per heading, in order, but titles it from the laid-out
    lines: "in our" + "words" comes out as "in ourwords", and a wrapped chapter title may repeat
    its first line. Each bookmark is matched to the heading at its place; the match is checked
    (the heading's first 12 characters before any formula, spaces aside, are in the
    bookmark's title). A formula in a heading is titled in plain characters
    (:func:`plain_math`): a bookmark cannot typeset TeX.

    Raises
    ------
    RuntimeError
        If the bookmarks and the headings differ in number or a bookmark does not match the
        heading at its place (the PDF is then not written).
    """
    import io
    import logging

    import pypdf
    from pypdf.generic import NameObject, TextStringObject

    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.ERROR)  # Chromium's trailer undercounts its objects; pypdf says so
    try:
        writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    finally:
        log.setLevel(level)
    items, stack = [], []
    root = writer.root_object.get("/Outlines")
    node = root.get_object().get("/First") if root is not None else None
    while node is not None:  # depth first, document order
        item = node.get_object()
        items.append(item)
        if "/First" in item:
            stack.append(item.get("/Next"))
            node = item["/First"]
            continue
        node = item.get("/Next")
        while node is None and stack:
            node = stack.pop()
    if len(items) != len(headings):
        raise RuntimeError(f"the PDF has {len(items)} bookmarks for {len(headings)} headings")
    for item, heading in zip(items, headings, strict=True):
        title = str(item.get("/Title", ""))
        if _squeezed(heading.split("\\(")[0])[:12] not in _squeezed(title):
            raise RuntimeError(f"bookmark {title!r} does not match the heading {heading!r}")
        item[NameObject("/Title")] = TextStringObject(plain_math(heading))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
