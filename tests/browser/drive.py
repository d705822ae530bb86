"""The Playwright side of tests/product/test_browser.py; runs in .venv-browser (Playwright lives there, not in .venv).

``python drive.py CONFIG.json`` drives Debian's chromium (``executable_path``; no browser download) and prints
one JSON object of observations; the pytest side asserts on them. Waiting is done by Playwright
(``wait_for_function`` / ``wait_for_selector`` polling the DOM), never by sleeping.

JupyterLab runs with ``expose_app_in_browser``: the driver switches themes, runs all cells, restarts kernels
and opens files through Lab's own commands (``window.jupyterapp.commands``), the way its menus do.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

STREAM_TEXT = "(document.querySelector('.hermes-stream-text')?.textContent || '')"
#: the answer as received (the raw text the copy button copies), whatever the view shows
ANSWER = "(document.querySelector('.hermes-answer-source')?.textContent || '')"
STREAM_STATE = "(document.querySelector('.hermes-stream-state')?.textContent || '')"
LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"

# --------------------------------------------------------------------------- measuring (in the page)

#: WCAG contrast of every visible, enabled text under the roots, against the background actually behind it
CONTRAST = """(roots) => {
  function parse(c) {
    if (!c) return null;
    let m = c.match(/^rgba?\\(([^)]+)\\)$/);
    if (m) { const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(parseFloat);
             return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    m = c.match(/^color\\(srgb ([^)]+)\\)$/);
    if (m) { const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(parseFloat);
             return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1]; }
    return null;
  }
  const over = (f, b) => [0, 1, 2].map(i => f[i] * f[3] + b[i] * (1 - f[3])).concat([1]);
  const lum = c => { const l = c.slice(0, 3).map(v => { v /= 255;
      return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  function background(el) {
    const chain = []; for (let e = el; e; e = e.parentElement) chain.push(e);
    let bg = [255, 255, 255, 1];
    for (const e of chain.reverse()) { const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) bg = over(c, bg); }
    return bg;
  }
  const seen = []; const unparsed = [];
  for (const root of roots.flatMap(s => [...document.querySelectorAll(s)])) {
    for (const e of [root, ...root.querySelectorAll('*')]) {
      if (e.closest('[disabled], :disabled, .mod-disabled')) continue;
      const tag = e.tagName.toLowerCase();
      if (e.closest('svg') && tag !== 'text') continue;
      const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
      const control = ['input', 'textarea', 'select'].includes(tag) && String(e.value || '').trim();
      if (!own && !control) continue;
      if (!e.getClientRects().length) continue;
      const cs = getComputedStyle(e);
      if (cs.visibility === 'hidden' || Number(cs.opacity) === 0) continue;
      const raw = e instanceof SVGElement ? cs.fill : cs.color;
      const fg = parse(raw);
      if (!fg) { unparsed.push(raw); continue; }
      const bg = background(e);
      seen.push({text: (e.textContent || e.value || '').trim().slice(0, 60), fg: raw,
                 bg: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')', ratio: ratio(over(fg, bg), bg)});
    }
  }
  seen.sort((a, b) => a.ratio - b.ratio);
  return {texts: seen.length, min_ratio: seen.length ? seen[0].ratio : 0, worst: seen.slice(0, 6), unparsed};
}"""

#: pairs of timeline labels whose boxes overlap, in every timeline on the page
LABEL_OVERLAPS = """() => { const out = [];
  for (const svg of document.querySelectorAll('svg.hermes-timeline')) {
    const boxes = [...svg.querySelectorAll('text')].map(t => ({t: t.textContent, b: t.getBBox()}));
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].b, b = boxes[j].b;
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height)
        out.push([boxes[i].t, boxes[j].t]);
    } }
  return out; }"""

#: table headers with a word broken across lines (headers wrap at word boundaries only: spaces and hyphens)
SPLIT_HEADERS = """() => { const out = [];
  for (const th of document.querySelectorAll('th')) {
    const node = [...th.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
    if (!node) continue;
    const text = node.textContent; let at = 0;
    for (const word of text.split(/[\\s-]+/).filter(Boolean)) {
      const start = text.indexOf(word, at); at = start + word.length;
      const r = document.createRange(); r.setStart(node, start); r.setEnd(node, start + word.length);
      const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
      if (tops.size > 1) out.push(word);
    } }
  return out; }"""

#: how far any table, pre or svg reaches past the body's right edge (0: everything fits the page)
OVERFLOW = """() => { const edge = document.body.getBoundingClientRect().right;
  return Math.max(0, ...[...document.querySelectorAll('table, pre, svg')]
    .map(e => e.getBoundingClientRect().right - edge)) + Math.max(0,
    document.documentElement.scrollWidth - window.innerWidth); }"""

#: controls of the console outside its visible box, and texts cut short (ellipsis / hidden overflow)
CLIPPING = """() => { const c = document.querySelector('.hermes-console');
  const area = c.closest('.jp-OutputArea-output') || c;
  const box = area.getBoundingClientRect(); const right = Math.min(box.right, window.innerWidth);
  const controls = [...c.querySelectorAll('button, input, select, textarea, .widget-label, label, .widget-html')];
  const name = e => (e.textContent || e.value || e.getAttribute('placeholder') || e.className || e.tagName)
    .trim().slice(0, 40);
  const clipped = controls.filter(e => { const r = e.getBoundingClientRect();
    return r.width > 0 && (r.right > right + 1 || r.left < box.left - 1); })
    .map(e => name(e) + ' [' + Math.round(e.getBoundingClientRect().left) + '..'
      + Math.round(e.getBoundingClientRect().right) + ' of ' + Math.round(box.left) + '..' + Math.round(right) + ']');
  const truncated = [...c.querySelectorAll('*')].filter(e => { const cs = getComputedStyle(e);
    return e.getClientRects().length && (cs.overflowX === 'hidden' || cs.overflowX === 'clip' ||
      cs.textOverflow === 'ellipsis') && e.scrollWidth > e.clientWidth + 1 &&
      [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()); }).map(name);
  return {controls: controls.length, clipped, truncated}; }"""

# --------------------------------------------------------------------------- JupyterLab helpers


def command(page: Page, name: str, args: dict[str, Any] | None = None, *, wait: bool = True) -> None:
    """Run a JupyterLab command; ``wait=False`` for one that opens a dialog (it settles only once answered)."""
    if wait:
        page.evaluate("([n, a]) => window.jupyterapp.commands.execute(n, a)", [name, args or {}])
    else:
        page.evaluate("([n, a]) => { window.jupyterapp.commands.execute(n, a); }", [name, args or {}])


def set_theme(page: Page, theme: str) -> None:
    command(page, "apputils:change-theme", {"theme": theme})
    page.wait_for_function("t => document.body.dataset.jpThemeName === t", arg=theme, timeout=30_000)
    page.wait_for_function("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")


def open_notebook(page: Page, cfg: dict[str, Any], theme: str = LIGHT) -> None:
    page.goto(f"{cfg['url']}lab/tree/{cfg['notebook']}?reset&token={cfg['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function("() => !!window.jupyterapp", timeout=60_000)
    set_theme(page, theme)
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)  # the kernel is up


ALL_RUN = """() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
  .map(e => e.textContent.trim()); return p.length > 0 && p.every(t => /\\[\\d+\\]/.test(t)); }"""


def run_all(page: Page, timeout: float = 120_000) -> None:
    command(page, "notebook:run-all-cells")
    page.wait_for_function(ALL_RUN, timeout=timeout)
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=timeout)


def shutdown(page: Page) -> None:
    page.evaluate("() => window.jupyterapp.serviceManager.sessions.shutdownAll().catch(() => null)")


def state(page: Page, scope: str = "") -> str:
    return str(page.evaluate(f"() => (document.querySelector('{scope} .hermes-stream-state')?.textContent || '')"))


def wait_state(page: Page, prefix: str, timeout: float = 60_000) -> str:
    page.wait_for_function(f"p => {STREAM_STATE}.startsWith(p)", arg=prefix, timeout=timeout)
    return state(page)


# --------------------------------------------------------------------------- modes

def console(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    open_notebook(page, cfg)
    page.locator(".jp-Cell").first.click()
    page.keyboard.press("Shift+Enter")
    send = page.locator(".hermes-send")
    send.wait_for(timeout=60_000)
    send.click()
    # the streamed text grows while the stream runs: seen once, then seen longer, still "streaming…"
    page.wait_for_function(f"() => {ANSWER}.length > 0", timeout=30_000)
    first = int(page.evaluate(f"() => {ANSWER}.length"))
    page.wait_for_function(f"() => {ANSWER}.length > {first}", timeout=30_000)
    out["lengths"] = [first, int(page.evaluate(f"() => {ANSWER}.length"))]
    out["state_while_growing"] = page.evaluate(f"() => {STREAM_STATE}")
    page.locator(".hermes-stop").click()
    page.wait_for_function(f"() => {STREAM_STATE}.startsWith('stopped')", timeout=30_000)
    out["state_after_stop"] = page.evaluate(f"() => {STREAM_STATE}")
    out["text_after_stop"] = page.evaluate(f"() => {ANSWER}")
    page.wait_for_selector(".hermes-response .hermes-timeline", timeout=30_000)
    out["response"] = page.inner_text(".hermes-response")
    out["history"] = page.locator(".hermes-history select option").all_inner_texts()
    page.locator(".hermes-console").screenshot(path=cfg["screenshots"]["console"])
    shutdown(page)
    return out


def themes(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    open_notebook(page, cfg)
    run_all(page)
    page.locator(".hermes-send").first.click()
    wait_state(page, "done")
    page.wait_for_selector(".hermes-response .hermes-timeline", timeout=30_000)
    roots = [".jp-Notebook .jp-OutputArea-output"]
    for theme, shot in cfg["screenshots"].items():
        set_theme(page, theme)
        measured = page.evaluate(CONTRAST, roots)
        measured["answer_ratio"] = page.evaluate(CONTRAST, [".hermes-stream"])["min_ratio"]
        measured["label_overlaps"] = page.evaluate(LABEL_OVERLAPS)
        measured["split_headers"] = page.evaluate(SPLIT_HEADERS)
        out[theme] = measured
        page.locator(".hermes-console").screenshot(path=shot)
    set_theme(page, LIGHT)
    shutdown(page)
    return out


def _clipboard(page: Page) -> str:
    return str(page.evaluate("() => navigator.clipboard.readText()"))


def keyboard(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=cfg["url"].rstrip("/"))
    open_notebook(page, cfg)
    run_all(page)
    prompt = page.locator(".hermes-console textarea").first  # the prompt
    prompt.wait_for(timeout=60_000)
    before = prompt.input_value()
    prompt.click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    out["enter_kept_newline"] = prompt.input_value().count("\n") == before.count("\n") + 1
    out["state_after_enter"] = state(page)
    prompt.fill(prompt.input_value().rstrip("\n"))
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => /^(sending|streaming)/.test({STREAM_STATE})", timeout=30_000)
    out["ctrl_enter_state"] = state(page)
    wait_state(page, "streaming")
    page.keyboard.press("Escape")
    out["escape_state"] = wait_state(page, "stopped")
    prompt.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(f"() => /^(sending|streaming)/.test({STREAM_STATE})", timeout=30_000)
    out["shift_enter_final"] = wait_state(page, "done")
    out["hint"] = page.inner_text(".hermes-keys-hint")
    out["usage"] = page.inner_text(".hermes-usage")
    out["bold"] = page.locator(".hermes-stream-text strong").all_inner_texts()
    out["pwned"] = page.evaluate("() => window.__hermes_pwned ?? null")
    page.locator(".hermes-view-toggle button", has_text="raw").click()
    page.wait_for_function(f"() => {STREAM_TEXT}.includes('**bold**')", timeout=30_000)
    out["raw_view"] = page.evaluate(f"() => {STREAM_TEXT}")
    out["answer_text"] = out["raw_view"]
    page.locator(".hermes-view-toggle button", has_text="rendered").click()
    page.locator(".hermes-copy-answer").click()
    page.wait_for_function("t => navigator.clipboard.readText().then(c => c === t)", arg=out["answer_text"],
                           timeout=10_000)
    out["copied_answer"] = _clipboard(page)
    for kind in ("curl", "httpx", "openai"):
        page.locator(f".hermes-copy-{kind}").click()
        page.wait_for_function("k => navigator.clipboard.readText().then(c => c.includes(k))",
                               arg={"curl": "curl ", "httpx": "httpx", "openai": "OpenAI("}[kind], timeout=10_000)
        out[f"copied_{kind}"] = _clipboard(page)
    # the model picker: the models the proxy lists, and an unlisted one flagged before any Send
    out["model_options"] = page.evaluate(
        "() => [...document.querySelectorAll('.hermes-model datalist option')].map(o => o.value)")
    model = page.locator(".hermes-model input")
    model.fill("no-such-model")
    page.wait_for_function("() => (document.querySelector('.hermes-model-flag')?.textContent || '')"
                           ".includes('not listed')", timeout=30_000)
    out["model_flag"] = page.inner_text(".hermes-model-flag")
    out["page_text"] = page.inner_text(".hermes-console")
    shutdown(page)
    return out


def failures(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"states": []}
    open_notebook(page, cfg)
    run_all(page)
    send = page.locator(".hermes-send")
    send.wait_for(timeout=60_000)
    count = "() => document.querySelectorAll('.hermes-history select option').length"
    for n in range(1, cfg["rounds"] + 1):
        send.click()
        # the request ran (its history entry is there) and Send is back: read what the page says then
        page.wait_for_function(f"n => ({count})() >= n && !document.querySelector('.hermes-send').disabled",
                               arg=n, timeout=30_000)
        out["states"].append(state(page))
    out["stop_disabled"] = page.locator(".hermes-stop").is_disabled()
    out["send_disabled"] = send.is_disabled()
    out["history"] = int(page.evaluate(count))
    out["response"] = page.inner_text(".hermes-response")
    shutdown(page)
    return out


def narrow(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    open_notebook(page, cfg)
    run_all(page)
    page.locator(".hermes-console .hermes-send").click(timeout=60_000)
    wait_state(page, "done")  # the answer, the response table, the timeline and the copy bar are there too
    page.wait_for_selector(".hermes-response .hermes-timeline", timeout=30_000)
    out = dict(page.evaluate(CLIPPING))
    out["split_headers"] = page.evaluate(SPLIT_HEADERS)
    out["label_overlaps"] = page.evaluate(LABEL_OVERLAPS)
    page.screenshot(path=cfg["screenshot"], full_page=True)
    shutdown(page)
    return out


def restart(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    open_notebook(page, cfg)
    run_all(page)
    page.wait_for_selector(".hermes-console .hermes-send", timeout=60_000)
    command(page, "notebook:restart-kernel", wait=False)
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.wait_for_selector(".hermes-console.jupyter-widgets-disconnected", timeout=60_000)
    hint = page.evaluate("""() => { const c = document.querySelector('.hermes-console');
      return [getComputedStyle(c, '::before').content, getComputedStyle(c, '::after').content, c.innerText]
        .join(' '); }""")
    shutdown(page)
    return {"hint": hint}


def guide(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    open_notebook(page, cfg)
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    out["unrun_first_output"] = cells.first.locator(".jp-OutputArea").inner_text()
    out["unrun_text"] = page.inner_text(".jp-Notebook")
    run_all(page, timeout=180_000)
    out["code_cells"] = cells.count()
    out["executed"] = int(page.evaluate("""() => [...document.querySelectorAll(
      '.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')].filter(e => /\\[\\d+\\]/.test(e.textContent)).length"""))
    out["errors"] = page.locator(
        '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    out["consoles"] = page.locator(".hermes-console .hermes-send").count()
    last = page.locator(".hermes-console").last
    # the guide's own cells may have sent already, so "done" alone could be the previous answer's: wait for
    # this click's history entry as well, then read the state in the same moment
    entries = ("() => [...document.querySelectorAll('.hermes-console')].pop()"
               ".querySelectorAll('.hermes-history option').length")
    before = int(page.evaluate(entries))
    last.locator(".hermes-send").click()
    page.wait_for_function("""n => { const c = [...document.querySelectorAll('.hermes-console')].pop();
      const s = c.querySelector('.hermes-stream-state');
      return c.querySelectorAll('.hermes-history option').length > n && s && s.textContent.startsWith('done'); }""",
                           arg=before, timeout=60_000)
    out["final_state"] = last.locator(".hermes-stream-state").inner_text()
    shutdown(page)
    return out


def index_in_lab(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    page.goto(f"{cfg['url']}lab?reset&token={cfg['token']}")
    page.wait_for_function("() => !!window.jupyterapp", timeout=60_000)
    page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
    command(page, "docmanager:open", {"path": cfg["notebook"]})
    viewer = page.locator(".jp-HTMLViewer iframe")
    viewer.wait_for(timeout=30_000)
    frame = page.frame_locator(".jp-HTMLViewer iframe")
    frame.locator("section.run").first.wait_for(timeout=30_000)
    notes = frame.locator(".note")
    out["untrusted_note"] = notes.first.inner_text() if notes.count() else ""
    page.locator(".jp-Toolbar", has=page.locator("text=Trust HTML")).locator("text=Trust HTML").first.click()
    frame.locator("section.run a", has_text="receipt").first.wait_for(timeout=30_000)
    handle = viewer.element_handle()
    assert handle is not None
    inner = handle.content_frame()
    assert inner is not None
    frame.locator("section.run a", has_text="receipt").first.click()
    inner.wait_for_url(lambda url: "/files/" in url and "index.html" not in url, timeout=30_000)
    inner.wait_for_load_state()
    out["followed_title"] = inner.title()
    out["followed_text"] = inner.inner_text("body")[:500]
    shutdown(page)
    return out


def _overflow(narrow_page: Page, path: str) -> float:
    narrow_page.goto(Path(path).as_uri())
    narrow_page.wait_for_selector("h1, h2")
    return float(narrow_page.evaluate(OVERFLOW))


def receipt(page: Page, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"label_overlaps": [], "split_headers": []}
    pages = [cfg["receipt"], *cfg.get("others", []), cfg["index"]]
    # wide tables wrap or scroll inside their box, checked on a narrow page (800 px: the old styling of the
    # wire-format spike's route table ran ~200 px past the page there); headers break at word boundaries only
    browser = page.context.browser
    assert browser is not None
    narrow_page = browser.new_page(viewport={"width": 800, "height": 900})
    out["overflow_px"] = {}
    for p in pages:
        out["overflow_px"][Path(p).name] = _overflow(narrow_page, p)
        out["label_overlaps"] += narrow_page.evaluate(LABEL_OVERLAPS)
        out["split_headers"] += narrow_page.evaluate(SPLIT_HEADERS)
    narrow_page.close()
    out["contrast"] = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        out["contrast"][scheme] = {}
        for p in pages:
            page.goto(Path(p).as_uri())
            page.wait_for_selector("h1, h2")
            out["contrast"][scheme][Path(p).name] = page.evaluate(CONTRAST, ["body"])
        page.goto(Path(cfg["receipt"]).as_uri())
        page.wait_for_selector("svg.hermes-timeline")
        if scheme == "dark":
            page.screenshot(path=cfg["screenshots"]["receipt_dark"])
    page.emulate_media(color_scheme="light")
    page.goto(Path(cfg["receipt"]).as_uri())
    page.wait_for_selector("svg.hermes-timeline")
    out["timelines"] = page.locator("svg.hermes-timeline").count()
    out["deltas"] = page.locator("h3 + .timeline svg line.delta").count()
    out["digests"] = page.locator("code.digest").all_inner_texts()
    usage = page.locator("table.receipt tr", has_text="usage")
    out["usage"] = usage.first.inner_text() if usage.count() else ""
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


MODES = {"console": console, "themes": themes, "keyboard": keyboard, "failures": failures, "narrow": narrow,
         "restart": restart, "guide": guide, "index_in_lab": index_in_lab, "receipt": receipt,
         "load_receipt": load_receipt}


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=cfg["chromium"])
        try:
            tall = cfg["mode"] in ("console", "themes", "keyboard")  # the whole console fits: screenshots uncut
            context = browser.new_context(viewport={"width": cfg.get("width", 1280),
                                                    "height": 1700 if tall else 1000})
            page = context.new_page()
            page.set_default_timeout(30_000)
            result = MODES[cfg["mode"]](page, cfg)
        finally:
            browser.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
