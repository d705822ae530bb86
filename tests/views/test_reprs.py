"""Rich reprs: a cell can end with the object itself (compact HTML with coloured verdict, short text, secrets
masked)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb import HermesClient, check
from hermes_nb.core.config import validate_config
from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.core.io import sha256_file
from hermes_nb.core.records import StreamTimeline
from hermes_nb.emulator import serve_emulator
from hermes_nb.proxy.contracts import compare, load_contract, resolve_contract
from hermes_nb.proxy.probe import probe
from hermes_nb.proxy.report import Drift
from hermes_nb.views.htmlkit import VERDICT_COLOURS, badge, idle_gaps, timeline_svg

CANARY = "sk-canary-reprs-0123456789abcdef"


def _formats(obj: object) -> dict[str, str]:
    data, _ = InteractiveShell.instance().display_formatter.format(obj)
    return data


@pytest.fixture(scope="module")
def emu():
    with serve_emulator(scenario="slow", delay_s=0.05) as handle:
        yield handle


def test_exchange_shows_status_timings_text_and_timeline_never_the_token(emu) -> None:
    config = validate_config({"endpoint": emu.endpoint, "model": "m", "auth_token": CANARY})
    with HermesClient(config) as client:
        ex = client.chat([{"role": "user", "content": f"echo {CANARY}"}], stream=True)
    data = _formats(ex)
    assert set(data) >= {"text/html", "text/plain"}
    html, text = data["text/html"], data["text/plain"]
    assert text.startswith("Exchange(POST http://127.0.0.1:") and "→ 200 OK, streamed" in text
    assert re.search(r"\d\.\d{3} s", text) and len(text) < 200  # compact
    assert badge("ok") in html and 'class="hermes-timeline"' in html
    assert html.count('class="delta"') == len([e for e in ex.events if '"content":"' in e.data
                                               and '"content":""' not in e.data])
    assert CANARY not in html and CANARY not in text


def test_check_result_colours_its_state_and_masks_secret_shapes(emu) -> None:
    result = check({"endpoint": emu.endpoint, "model": DEFAULT_MODEL})
    data = _formats(result)
    assert f'<b style="color:{VERDICT_COLOURS["ready"]}">ready</b>' in data["text/html"]
    assert data["text/plain"].startswith("CheckResult(ready → passed")
    leaked = result.model_copy(update={"errors": [f"echoed {CANARY}"], "state": "error"})
    assert CANARY not in leaked._repr_html_() and CANARY not in leaked._repr_text_()
    assert f'color:{VERDICT_COLOURS["error"]}' in leaked._repr_html_()


def test_wire_report_and_drift_display_themselves(emu) -> None:
    report = probe(emu.endpoint, budget_s=20)
    html = report._repr_html_()
    assert "wire-format report" in html and "chat_stream" in html and 'class="hermes-timeline"' in html
    assert 'overflow-x:auto' in html  # wide tables scroll inside their box
    assert "chat_stream" in report.timelines and "timelines" not in report.summary()  # not part of --json
    assert _formats(report)["text/plain"].startswith(f"WireReport({emu.endpoint}: ")
    none = compare(report, load_contract(resolve_contract("hermes-agent-0.19.0")))
    assert none == [] and badge("passed", "no drift vs hermes-agent 0.19.0") in _formats(none)["text/html"]
    some = compare(report, load_contract(resolve_contract("seed")))
    assert some and isinstance(some, list)
    assert badge("failed", f"drift: {len(some)} proxy-owned lines vs {some.contract}") in some._repr_html_()
    assert _formats(some)["text/plain"].startswith(f"drift: {len(some)} proxy-owned lines vs seed")


def test_the_probe_headline_agrees_with_its_drift_and_names_the_contract(emu) -> None:
    """The headline once said "passed" in green while the drift section said "(19) · failed"."""
    from hermes_nb.proxy.contracts import apply_contract

    report = probe(emu.endpoint, budget_s=20)
    assert report.headline == "live (not compared with a contract)" and report.verdict == "passed"
    drifted = apply_contract(report.model_copy(deep=True), load_contract(resolve_contract("seed")))
    html = drifted._repr_html_()
    assert drifted.verdict == "failed" and drifted.drift and drifted.contract.startswith("seed")
    head = html.split("</div>", 1)[0]  # the box's title line
    assert badge("failed", f"drift: {len(drifted.drift)} proxy-owned lines vs {drifted.contract}") in head
    assert "passed" not in head
    drifted.upstream_differences = [Drift(field="routes[chat].json_keys", expected=["a"], observed=["b"],
                                          owner="upstream")]
    assert "<details><summary>upstream differences: 1 (information" in drifted._repr_html_()  # collapsed
    clean = apply_contract(report.model_copy(deep=True), load_contract(resolve_contract("hermes-agent-0.19.0")))
    assert clean.verdict == "passed"
    assert badge("passed", "no drift vs hermes-agent 0.19.0") in clean._repr_html_().split("</div>", 1)[0]
    assert clean.summary()["contract"] == "hermes-agent 0.19.0"


def test_run_result_shows_the_artifact_digests(emu, tmp_path: Path) -> None:
    from hermes_nb.harness.mission import Mission
    from hermes_nb.harness.run import run

    config = validate_config({"endpoint": emu.endpoint, "model": "m", "auth_token": CANARY})
    result = run(Mission.adhoc("Say hi"), config, root=tmp_path, handle_signals=False)
    data = _formats(result)
    html = data["text/html"]
    assert "runtime result" in html and badge("passed") in html
    for name in ("runtime-result.yaml", "runtime.stdout.log", "runtime-final.txt"):
        assert sha256_file(Path(result.run_dir) / name) in html  # the digest itself, not a pointer to it
    assert "recorded in the receipt" not in html and 'class="hermes-timeline"' in html
    # a run keeps no SSE event records (events.ndjson has them), yet its timeline still shows each delta
    assert result.exchange.events == [] and result.exchange.timings.delta_s
    assert html.count('class="delta"') == len(result.exchange.timings.delta_s) >= 2
    assert data["text/plain"].startswith("RunResult(passed (ok), mission adhoc, exit 0")
    assert CANARY not in html + data["text/plain"]


def test_smoke_summary_displays_each_notebook_verdict(tmp_path: Path) -> None:
    from hermes_nb.nbrun.smoke import NotebookRun, SmokeResult

    runs = [NotebookRun(name="adapter_check", template=tmp_path, parameters={}, verdict="passed", reason="ready",
                        duration_s=1.25),
            NotebookRun(name="e2e_smoke", template=tmp_path, parameters={}, verdict="blocked", reason="auth",
                        duration_s=2.5)]
    from hermes_nb.target import Target

    result = SmokeResult("blocked", "20260101T000000Z-abcdef", tmp_path, runs, 3.0,
                         Target(endpoint="http://127.0.0.1:1/v1", kind="emulator"))
    data = _formats(result)
    assert badge("blocked") in data["text/html"] and "1.250 s" in data["text/html"]
    assert data["text/plain"] == ("SmokeResult(blocked, run 20260101T000000Z-abcdef, target emulator "
                                  "http://127.0.0.1:1/v1, 3.000 s: adapter_check passed, e2e_smoke blocked)")


def test_timeline_marks_idle_gaps_and_a_stop() -> None:
    tl = StreamTimeline(headers_s=0.01, first_delta_s=0.02, deltas=(0.02, 0.05, 1.05, 1.08), last_byte_s=1.1,
                        total_s=1.1, stopped=True)
    assert idle_gaps(tl) == [(0.05, 1.05)]  # one long pause; the short ones are not gaps
    svg = timeline_svg(tl)
    assert svg == timeline_svg(StreamTimeline.from_dict(tl.to_dict()))  # deterministic, survives JSON
    assert svg.count('class="delta"') == 4 and svg.count('class="gap"') == 1
    assert "idle 1.00 s" in svg and "stopped 1.100 s" in svg and "last byte" not in svg
    assert StreamTimeline.from_dict({"deltas": ["x", 1]}).deltas == (1.0,)  # junk from a receipt is ignored
