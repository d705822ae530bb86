"""display: pure HTML for results (escaped, redacted, stable duration format)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes_nb import CheckResult, WireReport
from hermes_nb.core.records import Outcome
from hermes_nb.core.redaction import Redactor
from hermes_nb.kit import display
from hermes_nb.proxy.report import Drift, RouteResult

CANARY = "sk-canary-display-0123456789"


def test_kv_table_escapes_html_and_formats_values() -> None:
    html = display.kv_table({"name": "<script>x</script>", "ok": True, "none": None, "elapsed_s": 1.23456,
                             "data": {"b": 1, "a": [1, 2]}})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert ">yes<" in html and ">—<" in html
    assert "1.235 s" in html
    assert "{&quot;a&quot;: [1, 2], &quot;b&quot;: 1}" in html


def test_values_are_redacted_known_and_by_shape() -> None:
    html = display.kv_table({"a": f"token {CANARY}", "b": "Bearer abcdefghijkl0123", "c": "mine-secret-value"},
                            redactor=Redactor(["mine-secret-value"]))
    assert CANARY not in html and "abcdefghijkl0123" not in html and "mine-secret-value" not in html
    assert html.count("&lt;redacted&gt;") == 3


def test_kv_table_keys_select_and_order() -> None:
    html = display.kv_table({"a": 1, "b": 2, "c": 3}, keys=["c", "a", "missing"])
    assert html.index(">c<") < html.index(">a<") and ">b<" not in html and "missing" not in html


def test_status_values_get_a_badge_in_the_one_colour_map() -> None:
    from hermes_nb.views.htmlkit import VERDICT_COLOURS

    assert f'color:{VERDICT_COLOURS["passed"]}">passed</b>' in display.kv_table({"status": "passed"})
    assert f'color:{VERDICT_COLOURS["blocked"]}">blocked</b>' in display.kv_table({"verdict": "blocked"})
    assert f'color:{VERDICT_COLOURS["failed"]}">failed</b>' in display.rows_table([{"status": "failed"}])


def test_rows_table_unions_columns_in_order_and_shows_empty() -> None:
    html = display.rows_table([{"a": 1}, {"b": 2, "a": 3}])
    assert html.index(">a<") < html.index(">b<")
    assert html.count("<tr>") == 3
    assert "(none)" in display.rows_table([], columns=["x"])


def test_check_html_shows_state_models_errors() -> None:
    result = CheckResult(available=False, state="locked", endpoint="http://127.0.0.1:1/v1", models=["m1", "m2"],
                         errors=["hermes-proxy: HTTP 401 from proxy"], hint="run `hermes auth status nous`")
    html = display.check_html(result)
    assert ">locked<" in html and ">m1<" in html and ">m2<" in html
    assert "HTTP 401 from proxy" in html and "hermes auth status nous" in html


def test_wire_report_html_lists_routes_and_drift() -> None:
    report = WireReport(endpoint="http://127.0.0.1:1/v1", state="live", reachable=True, elapsed_s=0.5,
                        routes=[RouteResult(name="models", method="GET", path="/v1/models", status=200)],
                        drift=[Drift(field="bearer_required", expected=True, observed=False)])
    html = display.wire_report_html(report)
    assert "/v1/models" in html and ">200<" in html and "0.500 s" in html
    assert "drift from the wire contract" in html and "bearer_required" in html


def test_drift_html_says_none_when_empty() -> None:
    assert "none" in display.drift_html([])
    assert "state" in display.drift_html([Drift(field="state", expected="live", observed="stale")])


def test_outcome_html() -> None:
    html = display.outcome_html(Outcome(status="blocked", reason="auth", errors=["hermes-proxy: upstream auth"],
                                        http_status=401))
    assert ">blocked<" in html and ">auth<" in html and ">401<" in html and "upstream auth" in html


@dataclass
class _FakeRun:
    result: dict
    outcome: Outcome | None
    exit_code: int
    run_dir: Path


def test_run_html_shows_result_stdout_and_artifact_digests() -> None:
    run = _FakeRun({"status": "passed", "mission_id": "adhoc", "runtime": "hermes-proxy", "errors": []},
                   Outcome(status="passed", reason="ok", final_message="done"), 0, Path("/x"))
    html = display.run_html(run, artifacts={"runtime-result.yaml": "ab" * 32}, stdout="hello <world>")
    assert ">passed<" in html and "hello &lt;world&gt;" in html and ">done<" in html
    assert "runtime-result.yaml" in html and "ab" * 32 in html  # the digest itself (issue 11)


def test_verdict_html_holds_only_stable_fields() -> None:
    summary = {"job": "e2e_smoke", "verdict": "passed", "reason": "ok", "target": "emulator",
               "endpoint": "http://127.0.0.1:5/v1", "model": "m", "errors": [],
               "artifacts": {"runtime-result.yaml": "cd" * 32}, "run_dir": "/tmp/x"}
    html = display.verdict_html(summary)
    assert "e2e_smoke" in html and "cd" * 32 not in html and "/tmp/x" not in html


def test_to_data_handles_models_dataclasses_and_containers() -> None:
    assert display.to_data(Outcome(status="passed", reason="ok"))["reason"] == "ok"
    assert display.to_data(_FakeRun({}, None, 0, Path("/p")))["run_dir"] == "/p"
    assert display.to_data((1, {2})) == [1, [2]]
