"""The built quick-scale book, read in a real headless browser with no network.

The HTML of the session's ``quick_book`` is served from 127.0.0.1 and every page of
``_toc.yml`` is loaded in Debian's chromium through chromedriver (selenium), with every other
host unreachable (host names resolve to nothing and all other traffic goes to a closed proxy).
The checks run on the rendered DOM: math typeset by the book's own MathJax, explorers drawn by
its own widget manager, tables as tables, no raw MyST, no broken image or internal link, no
progress bar, and the report's verdict column in view at 1280 px. A full-height screenshot of
every page goes to ``<repo>/_build/screenshots/`` for a person to look at.

Needs ``chromium`` and ``chromium-driver`` (``apt-get install chromium chromium-driver``;
``.ci/run`` installs them) and selenium (the ``test`` extra).
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

from physid.book.runner import read_toc
from tests.conftest import ROOT

PAGES = [page.docname for page in read_toc(ROOT)]
SCREENSHOTS = ROOT / "_build" / "screenshots"
WIDTH, HEIGHT = 1280, 900
#: Chrome's largest texture: a taller page is captured down to this height.
MAX_SCREENSHOT_HEIGHT = 16000
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver",)

#: Text nodes of the page outside code, scripts and typeset math, one string per node.
PROSE_TEXT = """
const skip = new Set(["SCRIPT", "STYLE", "PRE", "CODE", "TEXTAREA", "MJX-CONTAINER"]);
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const texts = [];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  let el = node.parentElement, skipped = false;
  while (el) { if (skip.has(el.tagName)) { skipped = true; break; } el = el.parentElement; }
  if (!skipped && node.textContent.trim()) texts.push(node.textContent);
}
return texts;
"""

#: Resolves once MathJax has typeset the page (or at once on a page without MathJax).
MATHJAX_DONE = """
const done = arguments[arguments.length - 1];
if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) { done(false); return; }
MathJax.startup.promise.then(() => done(true), () => done(false));
"""

#: For every embedded widget view: whether the widget manager drew it.
WIDGET_VIEWS = """
const views = document.querySelectorAll(
  'script[type="application/vnd.jupyter.widget-view+json"]');
return Array.from(views).map(view => {
  const box = view.parentElement;
  return box.querySelector('.jupyter-widgets, .widget-container, .lm-Widget') !== null;
});
"""

#: Every image: its source and whether it loaded.
IMAGES = """
return Array.from(document.images).map(img => [img.currentSrc || img.src,
  img.complete && img.naturalWidth > 0]);
"""

#: Every link's resolved address, and every id on the page.
LINKS = "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);"

#: How far each of the book's own wide tables (the report's claims, the notation) reaches
#: beyond its container: a positive number is a sideways scroll bar.
TABLE_OVERFLOW = """
return Array.from(document.querySelectorAll('table.physid-claims, table.physid-notation'))
  .map(table => table.scrollWidth - table.parentElement.clientWidth);
"""

#: For each row of the claim tables: the first cell's right edge, the viewport width, and the
#: table's overflow (its scroll width beyond its container's width).
VERDICT_CELLS = """
const width = document.documentElement.clientWidth;
return Array.from(document.querySelectorAll('table.physid-claims tbody tr')).map(row => {
  const cell = row.cells[0].getBoundingClientRect();
  const table = row.closest('table');
  const box = table.parentElement;
  return [cell.left, cell.right, width, table.scrollWidth - box.clientWidth,
          row.cells[0].textContent.trim()];
});
"""

#: Console errors that are not the book's: Jupyter Book 1.0.4 writes sphinx-thebe's inline
#: configuration twice into every page (the second declaration throws, and nothing uses it:
#: thebe is off), pydata-sphinx-theme logs an unset colour mode on a first visit, and the
#: browser asks for a /favicon.ico that the book does not have.
KNOWN_CONSOLE_NOISE = re.compile(
    r"Identifier 'THEBE_JS_URL' has already been declared|Got invalid theme mode|/favicon\.ico "
)
PROGRESS = re.compile(r"\d+%\|[^\n]*\||\d+(\.\d+)? ?(it/s|s/it)\]|\d+/\d+ \[\d\d:\d\d")
#: Markup that a rendered page never shows outside code: MyST directives and roles, and any
#: backtick (Markdown that reached the page as text, e.g. inside a glued string).
RAW_MYST = ("```{", "{glue:", ":::{", "{doc}`", "{ref}`", "{numref}`", "{eq}`", "{cite", "`")


def _first(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if Path(p).exists()), None) or shutil.which(Path(paths[0]).name)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def html_dir(quick_book) -> Path:
    return quick_book.index.parent


def serve(html_dir: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    """Serve ``html_dir`` on http://127.0.0.1:<free port>/ from a thread."""
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


@pytest.fixture(scope="module")
def server(html_dir):
    """The built HTML on http://127.0.0.1:<port>/."""
    url, httpd = serve(html_dir)
    yield url
    httpd.shutdown()
    httpd.server_close()


def open_browser():
    """Headless chromium at 1280 px wide that can reach 127.0.0.1 and nothing else."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = _first(CHROMIUM), _first(CHROMEDRIVER)
    if chromium is None or driver_path is None:
        raise RuntimeError(
            "the browser test needs chromium and chromedriver: "
            "apt-get install chromium chromium-driver"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WIDTH},{HEIGHT}",
        # No network: every host name resolves to nothing, and any other address goes to a
        # proxy on a closed port; only the book's own server is reached directly.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    return driver


@pytest.fixture(scope="module")
def browser():
    driver = open_browser()
    yield driver
    driver.quit()


def _widgets_drawn(driver, timeout: float = 20.0) -> list[bool]:
    """Wait until every widget view is drawn (or the timeout); return which ones are."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout, poll_frequency=0.2).until(
            lambda d: all(d.execute_script(WIDGET_VIEWS))
        )
    except TimeoutException:
        pass
    return driver.execute_script(WIDGET_VIEWS)


def _screenshot(driver, path: Path) -> None:
    """A PNG of the whole page at 1280 px wide (up to :data:`MAX_SCREENSHOT_HEIGHT` tall)."""
    import base64

    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight);"
    )
    metrics = {"width": WIDTH, "height": min(int(height), MAX_SCREENSHOT_HEIGHT)}
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {**metrics, "deviceScaleFactor": 1, "mobile": False}
    )
    try:
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def render(browser, server: str, docnames: list[str], screenshots: Path) -> dict[str, dict]:
    """Load every page once, save its screenshot; return what the checks need, by page."""
    pages = {}
    for docname in docnames:
        browser.get(f"{server}/{docname}.html")
        typeset = browser.execute_async_script(MATHJAX_DONE)
        has_math = browser.execute_script(
            "return document.querySelectorAll('.math, mjx-container').length > 0;"
        )
        widgets = _widgets_drawn(browser)
        pages[docname] = {
            "typeset": typeset,
            "has_math": has_math,
            "mathjax_output": browser.execute_script(
                "return document.querySelectorAll('mjx-container').length;"
            ),
            "prose": browser.execute_script(PROSE_TEXT),
            "text": browser.execute_script("return document.body.innerText;"),
            "widgets": widgets,
            "images": browser.execute_script(IMAGES),
            "links": browser.execute_script(LINKS),
            "verdicts": browser.execute_script(VERDICT_CELLS),
            "overflow": browser.execute_script(TABLE_OVERFLOW),
            "console": [
                entry["message"]
                for entry in browser.get_log("browser")
                if entry["level"] == "SEVERE" and not KNOWN_CONSOLE_NOISE.search(entry["message"])
            ],
        }
        _screenshot(browser, screenshots / f"{docname.replace('/', '_')}.png")
    return pages


@pytest.fixture(scope="module")
def rendered(browser, server):
    return render(browser, server, PAGES, SCREENSHOTS)


@pytest.mark.book
@pytest.mark.parametrize("docname", PAGES)
def test_page_reads_offline(rendered, docname):
    page = rendered[docname]
    assert not page["console"], f"{docname}: the browser reported errors: {page['console']}"
    if page["has_math"]:
        assert page["typeset"], f"{docname}: MathJax did not load from the book's own files"
        assert page["mathjax_output"] > 0, f"{docname}: math present but none typeset"
    raw_math = [t for t in page["prose"] if "\\(" in t or "\\[" in t or "$$" in t]
    assert not raw_math, f"{docname}: untypeset math: {raw_math[:3]}"
    assert all(page["widgets"]), f"{docname}: {page['widgets'].count(False)} widget(s) not drawn"
    lines = page["text"].splitlines()
    pipe_rows = [ln for ln in lines if ln.lstrip().startswith("|") and ln.count("|") >= 2]
    assert not (pipe_rows and any("|---" in ln or "| ---" in ln for ln in lines)), (
        f"{docname}: a table rendered as pipe text: {pipe_rows[:2]}"
    )
    raw = [text for text in page["prose"] if any(marker in text for marker in RAW_MYST)]
    assert not raw, f"{docname}: raw Markdown or MyST left in the page: {raw[:3]}"
    broken = [src for src, ok in page["images"] if not ok]
    assert not broken, f"{docname}: images that did not load: {broken}"
    bars = PROGRESS.search(page["text"])
    assert bars is None, f"{docname}: progress-bar text in the page: {bars.group(0)!r}"
    wide = [px for px in page["overflow"] if px > 1]
    assert not wide, f"{docname}: a table scrolls sideways at {WIDTH} px by {wide} px"


#: Resolves with "reached" or "blocked: <error>" for a request to ``arguments[0]``.
FETCH = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {mode: "no-cors"})
  .then(() => done("reached"), error => done("blocked: " + error));
"""


@pytest.mark.book
def test_the_browser_has_no_network(browser, server):
    """The checks above prove the book works offline only if the browser is offline: the CDN
    the pages used to load MathJax from is out of reach, the book's own server is not."""
    browser.get(f"{server}/book/intro.html")
    cdn = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"
    assert browser.execute_async_script(FETCH, cdn).startswith("blocked")
    assert browser.execute_async_script(FETCH, f"{server}/book/report.html") == "reached"


@pytest.mark.book
def test_internal_links_resolve(rendered, server, html_dir):
    missing = []
    for docname, page in rendered.items():
        for href in page["links"]:
            if not href.startswith(server):
                continue
            url, fragment = urldefrag(href)
            path = unquote(urlsplit(url).path).lstrip("/") or "index.html"
            target = html_dir / path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                missing.append(f"{docname}: {href}")
            elif fragment and f'id="{fragment}"' not in target.read_text(errors="replace"):
                missing.append(f"{docname}: {href} (no such anchor)")
    assert not missing, "broken internal links:\n" + "\n".join(sorted(set(missing))[:30])


@pytest.mark.book
def test_report_verdicts_are_in_view_at_1280px(rendered):
    rows = rendered["book/report"]["verdicts"]
    assert rows, "the report has no claim table (table.physid-claims)"
    for left, right, width, overflow, verdict in rows:
        assert verdict in ("✓", "✗"), f"first column holds {verdict!r}, not a verdict"
        assert 0 <= left and right <= width, f"verdict cell at {left}–{right} px, page {width}"
        assert overflow <= 1, f"a claim table scrolls sideways by {overflow} px"


@pytest.mark.book
def test_every_page_has_a_screenshot(rendered):
    for docname in rendered:
        shot = SCREENSHOTS / f"{docname.replace('/', '_')}.png"
        assert shot.read_bytes().startswith(b"\x89PNG"), shot
