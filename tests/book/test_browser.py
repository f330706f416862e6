"""The built quick-scale book, read in a real headless browser with no network.

The HTML of the session's ``quick_book`` is served from 127.0.0.1 and every page of
``_toc.yml`` is loaded in Debian's chromium through chromedriver (selenium), with every other
host unreachable (host names resolve to nothing and all other traffic goes to a closed proxy).
The checks run on the rendered DOM: math typeset by the book's own MathJax and no TeX left
outside it, explorers drawn by its own widget manager with their controls disabled and labelled
(no kernel runs behind a static page), tables as tables that fit their column or scroll inside
their own box with no number broken across lines, no raw MyST, no broken image or internal link,
no progress bar, no page wider than the window, and the report's verdict column in view at
1280 px. At 390 px (a phone) every page is loaded again: it must not scroll sideways, and the ☰
button must open the navigation drawer; at 1280 px the same button collapses the sidebar. A
screenshot of every whole page, at both widths, goes to ``<repo>/_build/screenshots/`` (and
``phone/`` in it) for a person to look at.

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

from physid.book.claims import CAUSES
from physid.book.runner import read_toc
from tests.conftest import ROOT

PAGES = [page.docname for page in read_toc(ROOT)]
SCREENSHOTS = ROOT / "_build" / "screenshots"
PHONE_SCREENSHOTS = SCREENSHOTS / "phone"
WIDTH, HEIGHT = 1280, 900
#: A phone's viewport (an iPhone 14's, in CSS pixels).
PHONE_WIDTH, PHONE_HEIGHT = 390, 844
#: A page is captured in strips of at most this height (Chrome's largest texture is 16,384 px),
#: stitched into one image of the whole page.
SCREENSHOT_STRIP = 8000
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

#: TeX that reached a page as text: a backslash command (``\mathcal``, ``\top``), the
#: ``\(``/``\[`` and ``$$`` delimiters, a braced sub- or superscript (``_{``, ``^{``) or a
#: ``$…$`` pair. :data:`PROSE_TEXT` leaves typeset math, code and scripts out.
RAW_TEX = re.compile(r"\\[A-Za-z]+|\\[()\[\]]|\$\$|[_^]\{|\$[^$\s](?:[^$]*[^$\s])?\$")

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

#: Every font file the page's style sheets name (``@font-face`` sources, resolved): a font is
#: fetched only when a glyph needs it, so a wrong address shows only on some pages and runs.
FONT_FILES = """
const urls = new Set();
for (const sheet of document.styleSheets) {
  let rules;
  try { rules = sheet.cssRules; } catch (error) { continue; }
  for (const rule of rules) {
    if (!(rule instanceof CSSFontFaceRule)) continue;
    const src = rule.style.getPropertyValue("src");
    for (const match of src.matchAll(/url\\(["']?([^"')]+)["']?\\)/g)) {
      urls.add(new URL(match[1], sheet.href || document.baseURI).href);
    }
  }
}
return Array.from(urls);
"""

#: Every table of the page: a label (its caption or class), its class, how far it reaches
#: beyond its container, whether it then lies in a box of its own that scrolls sideways within
#: the article (overflow-x auto or scroll), and the numbers in it that a line break splits
#: ("8.64e-" / "16").
TABLES = """
const NUMBER = /(?<![\\w.\u2212-])[-+\u2212]?\\d+(?:[.,]\\d+)*(?:[eE][-+\u2212]?\\d+)?%?/g;
function brokenNumbers(table) {
  const broken = [];
  const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(NUMBER)) {
      if (match[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => r.top);
      if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 4) broken.push(match[0]);
    }
  }
  return broken;
}
return Array.from(document.querySelectorAll('table')).map(table => {
  const article = table.closest('.bd-article') || document.body;
  const column = article.getBoundingClientRect();
  const overflow = table.getBoundingClientRect().width - table.parentElement.clientWidth;
  let scrolls = false;
  for (let el = table.parentElement; el && el !== article.parentElement; el = el.parentElement) {
    const style = getComputedStyle(el).overflowX;
    if (style === 'visible') continue;
    const box = el.getBoundingClientRect();
    scrolls = (style === 'auto' || style === 'scroll') && box.left >= column.left - 1
      && box.right <= column.right + 1;
    break;
  }
  const caption = table.caption ? table.caption.textContent.trim() : '';
  return [(caption || table.className || 'table').slice(0, 60), table.className,
          Math.round(overflow), scrolls, brokenNumbers(table)];
});
"""

#: How far the page reaches beyond the window (a positive number is a sideways scroll bar of
#: the whole page), and the outermost elements that stick out, for the message.
PAGE_OVERFLOW = """
const width = document.documentElement.clientWidth;
const culprits = [];
for (const el of document.querySelectorAll('.bd-main *')) {
  const box = el.getBoundingClientRect();
  if (box.width === 0 || box.right <= width + 1) continue;
  if (el.parentElement.getBoundingClientRect().right > width + 1) continue;
  culprits.push(`${el.tagName.toLowerCase()}.${String(el.className).split(' ')[0]} ` +
                `to ${Math.round(box.right)} px: ${el.textContent.trim().slice(0, 50)}`);
}
return [document.documentElement.scrollWidth - width, culprits.slice(0, 5)];
"""

#: For every explorer (a widget view): its controls (inputs, drop-downs, buttons, sliders,
#: editable slider readouts), the ones still enabled, the control rows whose label has no
#: tooltip saying to run the notebook, and the text of the visible note above it.
EXPLORERS = """
const views = document.querySelectorAll(
  'script[type="application/vnd.jupyter.widget-view+json"]');
return Array.from(views).map(view => {
  const box = view.parentElement;
  const controls = Array.from(box.querySelectorAll(
    'input, select, textarea, button, .noUi-target, .widget-readout'));
  const enabled = controls.filter(c => {
    if (c.classList.contains('widget-readout')) return c.isContentEditable;
    if (c.classList.contains('noUi-target')) return !c.hasAttribute('disabled');
    return !c.disabled;
  });
  const rows = Array.from(box.querySelectorAll('.widget-inline-hbox'));
  const untitled = rows.filter(row => {
    const label = row.querySelector('.widget-label');
    return !/run the notebook/i.test((label && label.title) || row.title || '');
  });
  const note = box.querySelector('.physid-static-note');
  const shown = note && note.getClientRects().length > 0;
  return {
    controls: controls.length,
    enabled: enabled.map(c => (c.closest('.widget-inline-hbox') || c).innerText.trim()),
    untitled: untitled.map(row => row.innerText.trim()),
    note: shown ? note.textContent.trim() : '',
  };
});
"""

#: The state of the primary sidebar (the navigation) and of the theme's header bar: whether the
#: sidebar's navigation is in view, how many search fields show, and the header bar's height.
SIDEBAR = """
const shown = el => {
  if (!el) return false;
  const style = getComputedStyle(el), box = el.getBoundingClientRect();
  return style.display !== 'none' && style.visibility !== 'hidden' && box.width > 50
    && box.height > 50 && box.left >= -1 && box.right <= window.innerWidth + 1;
};
const navs = Array.from(document.querySelectorAll('nav.bd-docs-nav'));
const searches = Array.from(document.querySelectorAll(
  '.search-button-field, form.bd-search input[type="search"]')).filter(el => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  });
const header = document.querySelector('#pst-header, header.bd-header');
const links = navs.filter(shown).map(nav => nav.querySelectorAll('a[href]').length);
return {
  nav: links.length > 0 && Math.max(...links) > 0,
  searches: searches.length,
  header: header ? Math.round(header.getBoundingClientRect().height) : 0,
};
"""

#: For each row of the claim tables: the first cell's right edge, the viewport width, the
#: table's overflow (its scroll width beyond its container's width), the verdict, and the words
#: of the verdict that a line break splits ("op" / "en").
VERDICT_CELLS = """
const width = document.documentElement.clientWidth;
function splitWords(cell) {
  const split = [];
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => r.top);
      if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 4) split.push(match[0]);
    }
  }
  return split;
}
return Array.from(document.querySelectorAll('table.physid-claims tbody tr')).map(row => {
  const cell = row.cells[0].getBoundingClientRect();
  const table = row.closest('table');
  const box = table.parentElement;
  return [cell.left, cell.right, width, table.scrollWidth - box.clientWidth,
          row.cells[0].textContent.trim().replace(/\\s+/g, ' '), splitWords(row.cells[0])];
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


def open_browser(width: int = WIDTH, height: int = HEIGHT):
    """Headless chromium, ``width`` px wide, that can reach 127.0.0.1 and nothing else."""
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
        f"--window-size={width},{height}",
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
    driver.set_window_size(width, height)
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


def _screenshot(driver, path: Path) -> int:
    """A PNG of the whole page at the window's width, however tall; returns its height.

    The viewport is made as tall as the page (so nothing is cut and nothing sticky repeats),
    captured in strips of at most :data:`SCREENSHOT_STRIP` px and the strips stitched.
    """
    import base64
    import io

    from PIL import Image

    width = driver.execute_script("return window.innerWidth;")

    def page_height() -> int:
        return int(
            driver.execute_script(
                "return Math.max(document.body.scrollHeight, "
                "document.documentElement.scrollHeight);"
            )
        )

    metrics = {"width": width, "height": page_height(), "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    strips = []
    try:
        height = page_height()
        if height != metrics["height"]:
            metrics["height"] = height
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        for top in range(0, height, SCREENSHOT_STRIP):
            clip = {"x": 0, "y": top, "width": width, "scale": 1}
            clip["height"] = min(SCREENSHOT_STRIP, height - top)
            shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": clip})
            strips.append(Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB"))
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    page = Image.new("RGB", (width, sum(strip.height for strip in strips)), "white")
    top = 0
    for strip in strips:
        page.paste(strip, (0, top))
        top += strip.height
    path.parent.mkdir(parents=True, exist_ok=True)
    page.save(path)
    return page.height


def _shot_name(docname: str) -> str:
    return f"{docname.replace('/', '_')}.png"


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
            "explorers": browser.execute_script(EXPLORERS),
            "images": browser.execute_script(IMAGES),
            "links": browser.execute_script(LINKS),
            "fonts": browser.execute_script(FONT_FILES),
            "verdicts": browser.execute_script(VERDICT_CELLS),
            "tables": browser.execute_script(TABLES),
            "page_overflow": browser.execute_script(PAGE_OVERFLOW),
            "console": [
                entry["message"]
                for entry in browser.get_log("browser")
                if entry["level"] == "SEVERE" and not KNOWN_CONSOLE_NOISE.search(entry["message"])
            ],
        }
        pages[docname]["height"] = _screenshot(browser, screenshots / _shot_name(docname))
    return pages


def _press_menu(driver) -> bool:
    """Click the ☰ button (the visible primary-sidebar toggle); False if there is none."""
    buttons = [
        b for b in driver.find_elements("css selector", ".primary-toggle") if b.is_displayed()
    ]
    if not buttons:
        return False
    buttons[0].click()
    return True


def _wait_for(driver, condition, timeout: float = 5.0) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        pass


def render_phone(server: str, docnames: list[str], screenshots: Path) -> dict[str, dict]:
    """Load every page at :data:`PHONE_WIDTH` px, save its screenshot, open its ☰ drawer."""
    driver = open_browser(PHONE_WIDTH, PHONE_HEIGHT)
    pages = {}
    try:
        for docname in docnames:
            driver.get(f"{server}/{docname}.html")
            driver.execute_async_script(MATHJAX_DONE)
            _widgets_drawn(driver)
            page = {
                "width": driver.execute_script("return window.innerWidth;"),
                "overflow": driver.execute_script(PAGE_OVERFLOW),
                "tables": driver.execute_script(TABLES),
                "closed": driver.execute_script(SIDEBAR),
            }
            page["height"] = _screenshot(driver, screenshots / _shot_name(docname))
            page["menu"] = _press_menu(driver)
            _wait_for(driver, lambda d: d.execute_script(SIDEBAR)["nav"])
            page["open"] = driver.execute_script(SIDEBAR)
            if docname == docnames[0]:
                driver.save_screenshot(str(screenshots / "drawer_open.png"))
            pages[docname] = page
    finally:
        driver.quit()
    return pages


@pytest.fixture(scope="module")
def rendered(browser, server):
    return render(browser, server, PAGES, SCREENSHOTS)


@pytest.fixture(scope="module")
def phone(server):
    return render_phone(server, PAGES, PHONE_SCREENSHOTS)


@pytest.mark.book
@pytest.mark.parametrize("docname", PAGES)
def test_page_reads_offline(rendered, docname):
    page = rendered[docname]
    assert not page["console"], f"{docname}: the browser reported errors: {page['console']}"
    if page["has_math"]:
        assert page["typeset"], f"{docname}: MathJax did not load from the book's own files"
        assert page["mathjax_output"] > 0, f"{docname}: math present but none typeset"
    raw_math = [t.strip()[:120] for t in page["prose"] if RAW_TEX.search(t)]
    assert not raw_math, f"{docname}: TeX left outside typeset math: {raw_math[:3]}"
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
    overflow, culprits = page["page_overflow"]
    assert overflow <= 0, f"{docname}: the page scrolls sideways by {overflow} px: {culprits}"


def _table_problems(tables: list, own_fit: bool) -> list[str]:
    """What is wrong with a page's tables (see :data:`TABLES`): a table may reach beyond its
    column only inside a box of its own that scrolls sideways, and with ``own_fit`` (at
    1280 px) the book's own wide tables (claims, notation) not at all; no table breaks a number
    across lines."""
    problems = []
    for label, classes, overflow, scrolls, broken in tables:
        own = "physid-claims" in classes or "physid-notation" in classes
        if overflow > 1 and ((own and own_fit) or not scrolls):
            problems.append(f"{label!r} reaches {overflow} px beyond its column")
        if broken:
            problems.append(f"{label!r} breaks numbers across lines: {broken[:4]}")
    return problems


@pytest.mark.book
@pytest.mark.parametrize("docname", PAGES)
def test_tables_fit_or_scroll_in_their_own_box(rendered, docname):
    problems = _table_problems(rendered[docname]["tables"], own_fit=True)
    assert not problems, f"{docname} at {WIDTH} px: " + "; ".join(problems)


@pytest.mark.book
@pytest.mark.parametrize("docname", PAGES)
def test_explorers_are_disabled_and_labelled_on_the_static_page(rendered, docname):
    """No kernel runs behind a built page, so moving a control could not redraw the figure:
    every control of every explorer is disabled, its label's tooltip and a note above the
    explorer say to run the notebook (physid-widgets.js)."""
    for number, explorer in enumerate(rendered[docname]["explorers"], start=1):
        where = f"{docname}, explorer {number}"
        if not explorer["controls"]:
            continue
        assert not explorer["enabled"], f"{where}: controls still enabled: {explorer['enabled']}"
        assert not explorer["untitled"], f"{where}: controls not labelled: {explorer['untitled']}"
        assert "run the notebook" in explorer["note"].lower(), (
            f"{where}: no visible note saying to run the notebook ({explorer['note']!r})"
        )


@pytest.mark.book
def test_explorers_exist_and_have_controls(rendered):
    explorers = [e for page in rendered.values() for e in page["explorers"]]
    assert explorers and all(e["controls"] > 0 for e in explorers), explorers


@pytest.mark.book
def test_a_static_slider_does_not_move(browser, server):
    """Dragging the tutorial's slider, or pressing keys on it, changes neither the value shown
    nor the figure: the page has no kernel to redraw it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(f"{server}/book/tutorial_sliding_box.html")
    browser.execute_async_script(MATHJAX_DONE)
    assert all(_widgets_drawn(browser))
    readout = browser.find_element("css selector", ".widget-slider .widget-readout")
    handle = browser.find_element("css selector", ".widget-slider .noUi-handle")
    figure = "return document.querySelector('.widget-output img').src;"
    before = (readout.text, browser.execute_script(figure))
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", handle)
    ActionChains(browser).drag_and_drop_by_offset(handle, 400, 0).perform()
    handle.send_keys(Keys.END, Keys.ARROW_RIGHT, Keys.PAGE_UP)
    after = (readout.text, browser.execute_script(figure))
    assert after == before, f"the slider moved on a static page: {before[0]} -> {after[0]}"


@pytest.mark.book
def test_menu_button_collapses_the_sidebar_at_1280px(browser, server):
    """At 1280 px the navigation shows beside the page, the ☰ button hides it and shows it
    again, and no header bar above the page holds a second search field."""
    browser.get(f"{server}/book/intro.html")
    state = browser.execute_script(SIDEBAR)
    assert state["nav"], "the navigation is not in view at 1280 px"
    assert state["header"] < 8, f"a {state['header']} px header bar above the page"
    assert state["searches"] <= 1, f"{state['searches']} search fields in view"
    assert _press_menu(browser), "no ☰ button"
    _wait_for(browser, lambda d: not d.execute_script(SIDEBAR)["nav"])
    assert not browser.execute_script(SIDEBAR)["nav"], "☰ did not collapse the sidebar"
    assert not browser.execute_script("return !!document.querySelector('dialog[open]');"), (
        "☰ opened the navigation as a pop-up instead of collapsing it"
    )
    assert _press_menu(browser)
    _wait_for(browser, lambda d: d.execute_script(SIDEBAR)["nav"])
    assert browser.execute_script(SIDEBAR)["nav"], "☰ did not bring the sidebar back"


@pytest.mark.book
@pytest.mark.parametrize("docname", PAGES)
def test_page_works_on_a_phone(phone, docname):
    page = phone[docname]
    assert page["width"] == PHONE_WIDTH, f"the window is {page['width']} px wide"
    overflow, culprits = page["overflow"]
    assert overflow <= 0, (
        f"{docname} scrolls sideways at {PHONE_WIDTH} px by {overflow} px: {culprits}"
    )
    problems = _table_problems(page["tables"], own_fit=False)
    assert not problems, f"{docname} at {PHONE_WIDTH} px: " + "; ".join(problems)
    assert not page["closed"]["nav"], "the navigation covers the page before ☰ is pressed"
    assert page["menu"], f"{docname}: no ☰ button at {PHONE_WIDTH} px"
    assert page["open"]["nav"], f"{docname}: ☰ did not open the navigation at {PHONE_WIDTH} px"


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
def test_font_files_exist(rendered, server, html_dir):
    """Every font a page's style sheets name is in the build (the widget manager's icon fonts
    were once looked for beside the page, a 404 whenever a glyph needed them)."""
    missing, named = [], 0
    for docname, page in rendered.items():
        for url in page["fonts"]:
            if not url.startswith(server):
                missing.append(f"{docname}: {url} (not served by the book)")
                continue
            named += 1
            if not (html_dir / unquote(urlsplit(url).path).lstrip("/")).is_file():
                missing.append(f"{docname}: {url}")
    assert named, "no page names a font: the check reads nothing"
    assert not missing, "fonts not in the build:\n" + "\n".join(sorted(set(missing))[:30])


@pytest.mark.book
def test_report_verdicts_are_in_view_at_1280px(rendered):
    rows = rendered["book/report"]["verdicts"]
    assert rows, "the report has no claim table (table.physid-claims)"
    verdicts = {"✓"} | {f"✗ {cause}" for cause in CAUSES.values()}
    for left, right, width, overflow, verdict, split in rows:
        # Sphinx's smart quotes turn the causes' apostrophes into ’.
        assert verdict.replace("’", "'") in verdicts, f"first column holds {verdict!r}"
        assert not split, f"the verdict {verdict!r} is broken inside a word: {split}"
        assert 0 <= left and right <= width, f"verdict cell at {left}–{right} px, page {width}"
        assert overflow <= 1, f"a claim table scrolls sideways by {overflow} px"


@pytest.mark.book
def test_every_page_has_whole_page_screenshots(rendered, phone):
    """A screenshot of each whole page at both widths, as tall as the page (not cut at the
    16,384 px that one capture can hold)."""
    import struct

    for docname in rendered:
        for pages, folder, width in (
            (rendered, SCREENSHOTS, WIDTH),
            (phone, PHONE_SCREENSHOTS, PHONE_WIDTH),
        ):
            shot = folder / _shot_name(docname)
            head = shot.read_bytes()[:24]
            assert head.startswith(b"\x89PNG"), shot
            size = struct.unpack(">II", head[16:24])  # the IHDR chunk: width, height
            assert size == (width, pages[docname]["height"]), (shot, size)
