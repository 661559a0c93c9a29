"""The built book in a headless browser, with the network off.

Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them with apt-get) driven
through the W3C WebDriver protocol that ``chromedriver`` serves over HTTP, with the standard
library only (no browser or driver is downloaded at run time). The book is served from a local
``http.server`` on 127.0.0.1; every other host is unreachable: the browser's proxy is a closed
local port, so a page that needs the internet (a CDN) fails here as it would offline.

For every page: it loads; every resource it requests exists (no 404); every image has loaded
(``naturalWidth > 0``); the math has been typeset (no raw ``\\(`` or ``\\[`` left outside code)
and no display equation is wider than the text column at 1280 px;
every internal link resolves (file and anchor); no table is wider than its column at 1280 px
(nor at 420 px); no glue is left unresolved (a ``{glue`` role or a
``notebook.ipynb::key`` / ``key:s`` printed in its place); the head has one viewport meta;
no cell output shows "Traceback" or an
"...Error"; every figure with a ``fig-...`` id (``publish_figure``) shows its provenance line
(its id and "regenerate:") in its caption; the browser's console logs no error; at a phone's
width (420 px) the page does not scroll sideways; axe-core (npm's, injected from
``.ci/node_modules``, installed by ``make axe``) finds no serious or critical WCAG 2.1 A/AA
violation; and every entry of the bibliography is cited somewhere in the book.
``make browser-test`` runs it on ``_build/html``
(``make book`` first); ``test_checker_flags_a_planted_broken_page`` shows that each check can fail.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
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
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = Path(os.environ.get("TOPOLIP_BOOK_HTML", ROOT / "_build" / "html"))
REQUIRE = os.environ.get("TOPOLIP_REQUIRE_BROWSER") == "1"  # CI: fail instead of skipping
AXE = ROOT / ".ci" / "node_modules" / "axe-core" / "axe.min.js"
PHONE = 420  # px: a phone's width for the overflow check

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,1024",
    # network off: every host but the loopback goes to a closed port
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1;localhost",
]


def browser_binaries() -> tuple[str, str] | None:
    """(chromium, chromedriver) on PATH, or None."""
    browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _need_browser() -> tuple[str, str]:
    found = browser_binaries()
    if found is None:
        message = ("chromium and chromedriver are not on PATH (Debian: apt-get install chromium "
                   "chromium-driver; .ci/run installs them)")
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    return found


class _Handler(SimpleHTTPRequestHandler):
    missing: list[str]

    def log_message(self, format, *args):
        pass

    def send_error(self, code, message=None, explain=None):
        if code == 404:
            self.missing.append(unquote(urlsplit(self.path).path))
        super().send_error(code, message, explain)


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a free port); yield (base URL, list of 404 paths)."""
    missing: list[str] = []
    handler = functools.partial(type("H", (_Handler,), {"missing": missing}),
                                directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", missing
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """A headless chromium session through chromedriver's W3C WebDriver HTTP API."""

    def __init__(self, chromium: str, chromedriver: str):
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="topolip-chromium-")
        self.driver = subprocess.Popen([chromedriver, f"--port={self.port}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status")["ready"]:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromedriver did not start within 30 s")
            time.sleep(0.2)
        options = {"binary": chromium,
                   "args": [*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}"]}
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": options,
                                                 "goog:loggingPrefs": {"browser": "ALL"},
                                                 "timeouts": {"script": 30000,
                                                              "pageLoad": 30000}}}}
        self.session = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        try:
            with opener.open(request, timeout=90) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as exc:
            value = json.loads(exc.read()).get("value", {})
            raise RuntimeError(f"WebDriver {path}: {value.get('error')}: "
                               f"{value.get('message', '')[:300]}") from None

    def get(self, url: str) -> None:
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def run_async(self, script: str, *args):
        return self._call("POST", f"/session/{self.session}/execute/async",
                          {"script": script, "args": list(args)})

    def run(self, script: str, *args):
        return self._call("POST", f"/session/{self.session}/execute/sync",
                          {"script": script, "args": list(args)})

    def console(self) -> list[dict]:
        """The browser console's entries since the last call (level, message)."""
        return self._call("POST", f"/session/{self.session}/se/log", {"type": "browser"})

    def width(self, width: int) -> None:
        self._call("POST", f"/session/{self.session}/window/rect",
                   {"width": width, "height": 1024})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if getattr(self, "session", None):
                self._call("DELETE", f"/session/{self.session}")
        self.driver.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.driver.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


#: Waits for MathJax (when the page has it) to finish typesetting, then reports what the
#: checks need. Text inside pre, code, script, style and textarea is not prose.
INSPECT = r"""
const done = arguments[arguments.length - 1];
function report() {
  const skip = new Set(["PRE", "CODE", "SCRIPT", "STYLE", "TEXTAREA", "NOSCRIPT"]);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let p = n.parentElement, inCode = false;
    for (; p; p = p.parentElement) { if (skip.has(p.tagName)) { inCode = true; break; } }
    if (!inCode && /\\\(|\\\[/.test(n.textContent)) raw.push(n.textContent.trim().slice(0, 80));
  }
  const outputs = Array.from(document.querySelectorAll(
      ".cell_output, .output, div.stderr, .traceback")).map(e => e.innerText);
  done({
    ready: document.readyState,
    images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src,
                                                  width: i.naturalWidth, done: i.complete})),
    raw_math: raw,
    // a display equation wider than the text column (its box scrolls sideways)
    wide_math: Array.from(document.querySelectorAll('mjx-container[display="true"]'))
      .filter(m => m.scrollWidth > m.clientWidth + 1)
      .map(m => ({width: m.scrollWidth, box: m.clientWidth,
                  text: (m.getAttribute("aria-label") || m.textContent || "").slice(0, 60)})),
    outputs: outputs,
    // a table wider than its column (its box scrolls, or it sticks out of the text column)
    wide_tables: Array.from(document.querySelectorAll("article table, body > table")).map(t => {
      const col = t.closest("article") || document.body;
      const box = t.parentElement;
      const width = t.getBoundingClientRect().width;
      const room = Math.min(col.clientWidth, box.clientWidth);
      return {width: Math.round(width), room: room,
              caption: (t.caption ? t.caption.innerText : t.innerText).slice(0, 50)};
    }).filter(x => x.width > x.room + 1),
    // glue that Sphinx did not resolve: the role's text, or a key printed in its place
    glue_left: (document.body.innerText.match(
      /\{glue(:\w+)?\}|\S+\.ipynb::\S+|\b[\w-]+:s\b(?=[.,;) ]|$)/g) || []),
    viewports: document.querySelectorAll('meta[name="viewport"]').length,
    links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
    figures: Array.from(document.querySelectorAll("figure[id^='fig-']")).map(f => ({
      id: f.id, caption: (f.querySelector("figcaption") || {innerText: ""}).innerText})),
  });
}
function settle() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(report, report);
  } else { report(); }
}
if (document.readyState === "complete") settle();
else window.addEventListener("load", settle);
"""

#: Runs axe-core (already injected) with the WCAG 2.1 A/AA rules; reports the serious and
#: critical violations of its standard rules (not those axe marks "experimental").
AXE_RUN = r"""
const done = arguments[arguments.length - 1];
axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
                   resultTypes: ["violations"]})
  .then(r => done(r.violations.filter(v => (v.impact === "serious" || v.impact === "critical")
                                          && !v.tags.includes("experimental"))
    .map(v => ({id: v.id, impact: v.impact, n: v.nodes.length,
                target: String(v.nodes[0].target).slice(0, 80)}))),
        e => done([{id: "axe-error", impact: "critical", n: 1, target: String(e)}]));
"""
#: At the phone's width: whether the page scrolls sideways, and what sticks out most.
OVERFLOW = r"""
const width = document.documentElement.clientWidth;
let worst = null;
if (document.documentElement.scrollWidth > width + 1) {
  const clipped = e => { for (let p = e.parentElement; p; p = p.parentElement) {
    if (getComputedStyle(p).overflowX !== "visible") return true; } return false; };
  for (const e of document.querySelectorAll(document.querySelector("article") ? "article *"
                                                                               : "body *")) {
    if (clipped(e)) continue;  // inside a box that scrolls or clips: not the page's overflow
    const r = e.getBoundingClientRect();
    if (r.right > width + 1 && (!worst || r.right > worst.right)) {
      worst = {right: r.right, what: e.tagName + "." + (e.className || "").toString().slice(0, 40)};
    }
  }
}
return {scroll: document.documentElement.scrollWidth, width: width, worst: worst};
"""
#: Bibliography entries (sphinxcontrib-bibtex) and every link's fragment on the page.
CITATIONS = r"""
return {entries: Array.from(document.querySelectorAll(".citation[id], div.citation > [id]"))
          .map(e => ({id: e.id, text: e.innerText.slice(0, 60)})),
        fragments: Array.from(document.querySelectorAll("a[href*='#']"))
          .map(a => decodeURIComponent(a.hash.slice(1)))};
"""

ERROR_TEXT = re.compile(r"\bTraceback\b|\b[A-Z]\w*Error\b|\b[A-Z]\w*Warning\b")


def _anchor_exists(page: Path, fragment: str) -> bool:
    text = page.read_text(errors="replace")
    return bool(re.search(rf'\b(id|name)="{re.escape(fragment)}"', text))


def check_site(html_dir: Path, browser: Browser, pages: list[Path] | None = None, *,
               axe: Path | None = None) -> dict:
    """Open every page of ``html_dir`` (or ``pages``, relative to it) and list its problems.

    With ``axe`` (the path of ``axe.min.js``), axe-core's serious and critical WCAG 2.1 A/AA
    violations are problems too.

    Returns
    -------
    dict
        ``{page (relative POSIX path): [problem, ...]}`` for every page checked; an empty list
        means the page passed.
    """
    html_dir = Path(html_dir).resolve()
    pages = pages or sorted(p.relative_to(html_dir) for p in html_dir.rglob("*.html")
                            if "_static" not in p.parts and "_sources" not in p.parts)
    problems: dict[str, list[str]] = {}
    axe_source = Path(axe).read_text(encoding="utf-8") if axe else None
    entries: dict[str, tuple[str, str]] = {}  # bibliography id -> (page, text)
    cited: set[str] = set()
    with serve(html_dir) as (base, missing):
        for page in pages:
            rel = Path(page).as_posix()
            found: list[str] = []
            missing.clear()
            url = urljoin(base, rel)
            try:
                browser.width(1280)
                browser.console()  # forget the previous page's entries
                browser.get(url)
                info = browser.run_async(INSPECT)
                for entry in browser.console():
                    if entry.get("level") == "SEVERE" and "/favicon.ico" not in entry.get(
                            "message", ""):  # the browser's own guess, as for the 404s
                        found.append(f"console error: {entry.get('message', '')[:200]}")
                refs = browser.run(CITATIONS)
                if axe_source is not None:
                    browser.run(axe_source + "\n;return true;")
                    for v in browser.run_async(AXE_RUN):
                        found.append(f"axe {v['impact']}: {v['id']} ({v['n']} nodes, first "
                                     f"{v['target']})")
                browser.width(PHONE)
                browser.get(url)
                wide = browser.run(OVERFLOW)
                # at a phone's width every table must fit too (the chapters' and the
                # Markdown pages' alike: a wide one is stacked, never scrolled)
                phone_tables = browser.run_async(INSPECT)["wide_tables"]
                if wide["scroll"] > wide["width"] + 1:
                    found.append(f"scrolls sideways at {PHONE} px: {wide['scroll']} > "
                                 f"{wide['width']} px (widest: {wide['worst']})")
            except RuntimeError as exc:
                problems[rel] = [f"page did not load: {exc}"]
                continue
            for e in refs["entries"]:
                entries.setdefault(e["id"], (rel, e["text"]))
            cited |= {f for f in refs["fragments"] if f}
            if info["ready"] != "complete":
                found.append(f"page did not finish loading ({info['ready']})")
            for img in info["images"]:
                if not img["done"] or img["width"] == 0:
                    found.append(f"image not loaded: {img['src']}")
            for text in info["raw_math"]:
                found.append(f"math not typeset: {text!r}")
            for eq in info["wide_math"]:
                found.append(f"equation scrolls sideways at 1280 px: {eq['width']} > "
                             f"{eq['box']} px ({eq['text']!r})")
            for tb in info["wide_tables"]:
                found.append(f"table wider than its column at 1280 px: {tb['width']} > "
                             f"{tb['room']} px ({tb['caption']!r})")
            for text in sorted(set(info["glue_left"])):
                found.append(f"unresolved glue on the page: {text!r}")
            if info["viewports"] > 1:
                found.append(f"{info['viewports']} viewport meta tags (one expected)")
            for tb in phone_tables:
                found.append(f"table wider than its column at {PHONE} px: {tb['width']} > "
                             f"{tb['room']} px ({tb['caption']!r})")
            for text in info["outputs"]:
                if m := ERROR_TEXT.search(text):
                    found.append(f"error text in an output: {m.group(0)!r}")
            for fig in info["figures"]:  # publish_figure's ids: a visible provenance line
                if fig["id"] not in fig["caption"] or "regenerate:" not in fig["caption"]:
                    found.append(f"figure {fig['id']} has no provenance line in its caption")
            for path in sorted(set(missing) - {"/favicon.ico"}):  # the browser's own guess
                found.append(f"missing resource (404): {path}")
            for href in sorted(set(info["links"])):
                parts = urlsplit(href)
                if not href.startswith(base):
                    continue
                target = html_dir / unquote(parts.path)[1:]
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    found.append(f"broken internal link: {href[len(base):]}")
                elif parts.fragment and target.suffix == ".html" and not _anchor_exists(
                        target, unquote(parts.fragment)):
                    found.append(f"broken anchor: {href[len(base):]}")
            problems[rel] = found
    for ref_id, (rel, text) in sorted(entries.items()):
        if ref_id not in cited:
            problems[rel].append(f"reference never cited: {text!r}")
    return problems


@pytest.fixture(scope="module")
def browser():
    chromium, driver = _need_browser()
    b = Browser(chromium, driver)
    yield b
    b.close()


PIXEL = bytes.fromhex(  # a 1x1 PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082")


@pytest.mark.browser
def test_checker_flags_a_planted_broken_page(tmp_path, browser):
    (tmp_path / "dot.png").write_bytes(PIXEL)
    (tmp_path / "good.html").write_text(
        '<html><body><h1 id="top">Good</h1><img src="dot.png" alt="dot">'
        '<p>Typeset: <span class="math">x</span>. Code may show <code>\\(x\\)</code>.</p>'
        '<a href="good.html#top">top</a> <a href="https://example.org/">outside</a>'
        '<figure id="fig-dot"><img src="dot.png" alt="dot"><figcaption>A dot. fig-dot · '
        'profile quick · commit 1a2b3c4 · regenerate: topolip figure fig-dot</figcaption></figure>'
        '<div class="cell_output"><pre>accuracy 0.98</pre></div>'
        '<p>As <a href="good.html#ref-a">A, 2020</a> showed.</p>'
        '<div class="citation" id="ref-a">A. A paper. 2020.</div></body></html>')
    (tmp_path / "broken.html").write_text(
        '<html><body><h1>Broken</h1><img src="missing.png" alt="gone">'
        '<p>Raw: <span class="math notranslate nohighlight">\\(x^2\\)</span></p>'
        '<a href="nowhere.html">dead</a> <a href="good.html#no-such-anchor">bad anchor</a>'
        '<div class="cell_output"><pre>Traceback (most recent call last):\n'
        'ValueError: boom</pre></div>'
        '<figure id="fig-dot"><img src="dot.png" alt="dot"><figcaption>A dot.</figcaption>'
        '</figure><script>console.error("boom");</script>'
        '<div style="width:900px">a wide block</div>'
        '<mjx-container display="true" style="display:block;width:300px;overflow-x:auto">'
        '<span style="display:inline-block;width:600px">a wide equation</span></mjx-container>'
        '<div class="citation" id="ref-b">B. Never cited. 2021.</div>'
        '<article style="width:300px"><div class="topolip-table"><table><caption>too wide'
        '</caption><tr><td style="white-space:nowrap">a cell far wider than the column of '
        'its page, which is only 300 px wide</td></tr></table></div>'
        '<p>Data: {glue:text}`notebooks/01_train.ipynb::train-data:s`.</p></article>'
        '<meta name="viewport" content="a"><meta name="viewport" content="b">'
        '</body></html>')
    result = check_site(tmp_path, browser)
    assert result["good.html"] == []
    broken = "\n".join(result["broken.html"])
    assert "image not loaded: http://127.0.0.1:" in broken and "/missing.png" in broken
    assert "missing resource (404): /missing.png" in broken
    assert "math not typeset: '\\\\(x^2\\\\)'" in broken
    assert "broken internal link: nowhere.html" in broken
    assert "broken anchor: good.html#no-such-anchor" in broken
    assert "error text in an output: 'Traceback'" in broken
    assert "figure fig-dot has no provenance line in its caption" in broken
    assert "console error: " in broken and "boom" in broken
    assert "scrolls sideways at 420 px" in broken
    assert "equation scrolls sideways at 1280 px: 600 > 300 px ('a wide equation')" in broken
    assert "reference never cited: 'B. Never cited. 2021.'" in broken
    assert "table wider than its column at 1280 px: " in broken and "'too wide'" in broken
    assert f"table wider than its column at {PHONE} px: " in broken
    assert "unresolved glue on the page: '{glue:text}'" in broken
    assert "2 viewport meta tags (one expected)" in broken
    assert len(result["broken.html"]) == 17, broken  # the 404 also logs a console error


@pytest.mark.browser
def test_axe_flags_an_inaccessible_page(tmp_path, browser):
    if not AXE.exists():
        message = f"no {AXE}: run `make axe` (npm install axe-core into .ci/node_modules)"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    (tmp_path / "dot.png").write_bytes(PIXEL)
    (tmp_path / "bad.html").write_text(
        '<html><head><title>Bad</title></head><body><main><h1>Bad</h1>'
        '<img src="dot.png"><a href="bad.html"></a>'
        '<p style="color:#bbb;background:#fff">faint text</p></main></body></html>')
    (tmp_path / "ok.html").write_text(
        '<html lang="en"><head><title>OK</title></head><body><main><h1>OK</h1>'
        '<img src="dot.png" alt="A dot"><a href="ok.html">this page</a>'
        '<p>plain text</p></main></body></html>')
    result = check_site(tmp_path, browser, axe=AXE)
    assert result["ok.html"] == []
    bad = "\n".join(result["bad.html"])
    for rule in ("image-alt", "link-name", "color-contrast", "html-has-lang"):
        assert f": {rule} (" in bad, bad


@pytest.mark.browser
def test_the_built_book_in_a_browser(request):
    if "browser" not in (request.config.getoption("markexpr") or "") and not (
            REQUIRE or "TOPOLIP_BOOK_HTML" in os.environ):
        pytest.skip("checks whatever _build/html holds: run it on purpose, `make browser-test`")
    if not (BOOK / "index.html").exists():
        message = f"no built book at {BOOK}: run `make book` first (or set TOPOLIP_BOOK_HTML)"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    browser = request.getfixturevalue("browser")
    if not AXE.exists() and REQUIRE:
        pytest.fail(f"no {AXE}: run `make axe`")
    result = check_site(BOOK, browser, axe=AXE if AXE.exists() else None)
    assert any(p.startswith("book/notebooks/") for p in result), "the notebook pages were checked"
    bad = {page: found for page, found in result.items() if found}
    assert not bad, "\n".join(f"{page}:\n  " + "\n  ".join(found) for page, found in bad.items())


@pytest.mark.browser
def test_launch_buttons_open_published_notebooks():
    """Every Binder/Colab link of the built book opens a notebook the deploy publishes."""
    from test_book_html import launch_problems, launch_targets

    staged = BOOK.parent / ".book"
    if not (BOOK / "index.html").exists() or not (staged / "_toc.yml").exists():
        message = f"no built book at {BOOK} with its staged sources {staged}: run `make book`"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    assert launch_targets(BOOK), "no launch link at all"
    problems = launch_problems(BOOK, staged)
    assert not problems, "\n".join(problems)
