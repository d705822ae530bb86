"""The Playwright side of tests/test_browser.py; runs in .venv-browser (Playwright lives there, not in .venv).

``python drive.py CONFIG.json`` drives Debian's chromium (``executable_path``; no browser download) and prints
one JSON object of observations; the pytest side asserts on them. Waiting is done by Playwright
(``wait_for_function`` / ``wait_for_selector`` polling the DOM), never by sleeping.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

STREAM_TEXT = "(document.querySelector('.hermes-stream-text')?.textContent || '')"
STREAM_STATE = "(document.querySelector('.hermes-stream-state')?.textContent || '')"


def _length(page: Page) -> int:
    return int(page.evaluate(f"() => {STREAM_TEXT}.length"))


def console(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    page.goto(f"{cfg['url']}lab/tree/{cfg['notebook']}?reset&token={cfg['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)  # the kernel is up
    page.locator(".jp-Cell").first.click()
    page.keyboard.press("Shift+Enter")
    send = page.locator(".hermes-send")
    send.wait_for(timeout=60_000)
    send.click()
    # the streamed text grows while the stream runs: seen once, then seen longer, still "streaming…"
    page.wait_for_function(f"() => {STREAM_TEXT}.length > 0", timeout=30_000)
    first = _length(page)
    page.wait_for_function(f"() => {STREAM_TEXT}.length > {first}", timeout=30_000)
    out["lengths"] = [first, _length(page)]
    out["state_while_growing"] = page.evaluate(f"() => {STREAM_STATE}")
    page.locator(".hermes-stop").click()
    page.wait_for_function(f"() => {STREAM_STATE}.startsWith('stopped')", timeout=30_000)
    out["state_after_stop"] = page.evaluate(f"() => {STREAM_STATE}")
    out["text_after_stop"] = page.evaluate(f"() => {STREAM_TEXT}")
    page.wait_for_selector(".hermes-response .hermes-timeline", timeout=30_000)
    out["response"] = page.inner_text(".hermes-response")
    out["history"] = page.locator(".hermes-history select option").all_inner_texts()
    page.locator(".hermes-console").screenshot(path=cfg["screenshots"]["console"])
    return out


#: how far any table, pre or svg reaches past the body's right edge (0: everything fits the page)
OVERFLOW = """() => { const edge = document.body.getBoundingClientRect().right;
  return Math.max(0, ...[...document.querySelectorAll('table, pre, svg')]
    .map(e => e.getBoundingClientRect().right - edge)) + Math.max(0,
    document.documentElement.scrollWidth - window.innerWidth); }"""


def _overflow(narrow: Page, path: str) -> float:
    narrow.goto(Path(path).as_uri())
    narrow.wait_for_selector("h1, h2")
    return float(narrow.evaluate(OVERFLOW))


def receipt(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # wide tables wrap or scroll inside their box, checked on a narrow page (800 px: the old styling of the
    # wire-format spike's route table ran ~200 px past the page there)
    browser = page.context.browser
    assert browser is not None
    narrow = browser.new_page(viewport={"width": 800, "height": 900})
    out["overflow_px"] = {Path(p).name: _overflow(narrow, p) for p in [cfg["receipt"], *cfg.get("others", []),
                                                                        cfg["index"]]}
    narrow.close()
    page.goto(Path(cfg["receipt"]).as_uri())
    page.wait_for_selector("svg.hermes-timeline")
    out["timelines"] = page.locator("svg.hermes-timeline").count()
    out["deltas"] = page.locator("h3 + .timeline svg line.delta").count()
    out["digests"] = page.locator("code.digest").all_inner_texts()
    page.screenshot(path=cfg["screenshots"]["receipt"])
    page.goto(Path(cfg["index"]).as_uri())
    page.wait_for_selector("section.run")
    out["index_rows"] = page.locator("section.run").first.locator("tr.receipt").all_inner_texts()
    page.screenshot(path=cfg["screenshots"]["index"])
    page.locator("section.run").first.locator("a", has_text="receipt").first.click()
    page.wait_for_selector("h2")
    out["followed_title"] = page.title()
    return out


def load_receipt(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    """The load receipt: its plots are images that decode (an SVG that fails to parse has no natural size)."""
    page.goto(Path(cfg["receipt"]).as_uri())
    page.wait_for_selector('img[src^="data:image/svg+xml"]')
    images = page.eval_on_selector_all('img[src^="data:image/svg+xml"]',
                                       "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight, e.alt])")
    page.screenshot(path=cfg["screenshot"], full_page=True)
    return {"images": images}


MODES = {"console": console, "receipt": receipt, "load_receipt": load_receipt}


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=cfg["chromium"])
        try:
            tall = cfg["mode"] == "console"  # the whole console fits: its screenshot is not cut by the notebook
            page = browser.new_page(viewport={"width": 1280, "height": 1700 if tall else 900})
            page.set_default_timeout(30_000)
            result = MODES[cfg["mode"]](page, cfg)
        finally:
            browser.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
