"""The load probe's behaviour against loopback servers: the options' faces, the emulator's load scenarios, sweeps
(warm-up, budgets, seed, repeats interleaved, saturation, SLO, progress), errors and 429s, the embedded default,
the CLI and the magic. Small sizes and scaled-down pacing; no timed assertions beyond a paced sleep's floor."""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from hermes_nb import LoadReport, UsageError, run_load
from hermes_nb.cli import main
from hermes_nb.emulator.scenarios import PROFILE_HEADER, SCENARIO_HEADER
from hermes_nb.load import run as run_module
from hermes_nb.load import spec as spec_mod
from hermes_nb.load.run import processes_for
from hermes_nb.load.spec import LoadSpec
from hermes_nb.load.views import report_html, report_text
from tests.load.conftest import FAST


def _chats(emu) -> list:
    return [r for r in emu.requests if r.path.endswith("/chat/completions")]


# --------------------------------------------------------------------------- one declaration, three faces


def test_the_cli_the_magic_and_the_notebook_share_the_declaration() -> None:
    magic = " ".join(LoadSpec.parser("%hermes_load").format_help().split())
    for text in ("--request-timeout-s S", "(default: 60)", "--level-budget-s S", "--slo KEY=S,…",
                 "(default: 1,4,16,64)"):
        assert text in magic
    cell = {node.target.id: ast.literal_eval(node.value) for node in ast.parse(LoadSpec.parameters_source()).body}
    assert cell["concurrency"] == [1, 4, 16, 64] and cell["request_timeout_s"] == 60.0 and cell["report"] is None
    assert "out" not in cell and "endpoint" in cell and "--endpoint" in magic
    assert LoadSpec.build(concurrency="16,1,4,4", requests=60).concurrency == [1, 4, 16]
    assert LoadSpec.build(concurrency="1,4", requests="60,320").budget(1) == 320
    assert LoadSpec.build(concurrency="1,16").budget(1) == 64 and LoadSpec.build().budget(0) == 8  # rounds, at least 8


@pytest.mark.parametrize(("argv", "line"), [
    (["--concurrency", "1025"], "--concurrency: must be <= 1024"),
    (["--requests", "1", "--level-budget-s", "1"], "--requests and --level-budget-s are exclusive"),
    (["--concurrency", "1,2", "--requests", "1,2,3"], "--requests and --concurrency disagree"),
    (["--slo", "ttft=0.5"], "--slo: unknown target ttft"),
    (["--request-timeout-s", "0"], "--request-timeout-s: must be > 0"),
    (["--scenario", "bogus"], "--scenario: unknown scenario 'bogus'"),
])
def test_a_bad_option_is_one_line_naming_the_flag_exit_2(capsys, argv: list[str], line: str) -> None:
    assert main(["load", *argv, "--json"]) == 2
    assert line in json.loads(capsys.readouterr().out)["error"]


# --------------------------------------------------------------------------- the emulator's load scenarios


def _chat(**body) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, **body}


def test_paced_honours_max_completion_tokens_and_streams_reasoning_first(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", reasoning_tokens=2, **FAST)
    with httpx.stream("POST", f"{emu.endpoint}/chat/completions", json=_chat(max_completion_tokens=3)) as r:
        chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    said = [d.get("reasoning_content") or d.get("content") for d in deltas if len(d) == 1]
    assert said == ["think "] * 2 + ["tok "] * 3
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    assert chunks[-1]["usage"]["completion_tokens_details"] == {"reasoning_tokens": 2}
    plain = httpx.post(f"{emu.endpoint}/chat/completions", json=_chat(max_completion_tokens=3, stream=False)).json()
    assert plain["choices"][0]["message"]["content"] == "tok " * 3


def test_an_unknown_scenario_names_the_profile_that_answered(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(profile="upstream")
    answer = httpx.get(f"{emu.endpoint}/models", headers={SCENARIO_HEADER: "nope"})
    assert answer.status_code == 400 and answer.headers[PROFILE_HEADER] == "upstream"


def test_concurrency_limited_answers_429_with_retry_after_beyond_n_in_flight(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=2, first_delta_s=30.0, retry_after=7)
    with httpx.Client(timeout=10) as client:
        held = [client.stream("POST", f"{emu.endpoint}/chat/completions", json=_chat()) for _ in range(2)]
        responses = [h.__enter__() for h in held]  # headers in: both in flight, paused before their first delta
        try:
            assert [r.status_code for r in responses] == [200, 200]
            over = client.post(f"{emu.endpoint}/chat/completions", json=_chat())
            assert over.status_code == 429 and over.headers["retry-after"] == "7"
        finally:
            for h in held:
                h.__exit__(None, None, None)


def test_the_emulator_cli_takes_the_load_settings(capsys) -> None:
    assert main(["emulator", "--max-concurrent", "0", "--json"]) == 2
    assert "--max-concurrent: must be >= 1" in json.loads(capsys.readouterr().out)["error"]
    assert main(["emulator", "--stall-s", "-1", "--json"]) == 2


# --------------------------------------------------------------------------- sweeps


def test_a_level_is_warmed_up_unmeasured_then_measured(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    lines: list[str] = []
    report = run_load(emu.endpoint, concurrency="1,4", requests="3,8", max_tokens=6, prompt_tokens=12,
                      progress=lines.append)
    assert (report.verdict, report.target.kind) == ("passed", "emulator")
    assert [(lv.concurrency, lv.sent, lv.succeeded) for lv in report.levels] == [(1, 3, 3), (4, 8, 8)]
    assert len(_chats(emu)) == 1 + 3 + 4 + 8  # the warm-up's round of each level went out, unmeasured
    assert len(report.samples) == 11 and all(s.tokens == 6 and s.token_source == "usage" for s in report.samples)
    bodies = [r.json for r in _chats(emu)]
    assert all(b["stream"] is True and b["max_tokens"] == 6 and b["stream_options"] == {"include_usage": True}
               for b in bodies)
    prompts = [b["messages"][-1]["content"] for b in bodies]
    assert len(set(prompts)) == 16 and prompts[0].startswith("Load probe 0-0:")  # distinct, seeded
    assert lines[0].startswith("proxy concurrency 1: 3/3 ok") and report.generator["hermes_nb"]
    assert all(lv.overhead.loop_lag_ms.count > 0 and lv.overhead.cpu_s > 0 and lv.overhead.cpus for lv in report.levels)


def test_progress_inside_a_level_says_done_in_flight_and_eta(hermes_emulator_factory, monkeypatch) -> None:
    monkeypatch.setattr(run_module, "PROGRESS_EVERY_S", 0.02)
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.05, token_interval_s=0.0)
    lines: list[str] = []
    run_load(emu.endpoint, concurrency="2", requests=6, progress=lines.append, seed=7)
    live = [line for line in lines if "in flight" in line]
    assert live and all("/6 done" in line and "so far, ETA" in line for line in live)
    assert _chats(emu)[-1].json["messages"][-1]["content"].startswith("Load probe 7-")


def test_repeats_interleave_proxy_and_direct_and_give_the_added_latency(hermes_emulator_factory) -> None:
    proxy = hermes_emulator_factory(scenario="paced", first_delta_s=0.04, token_interval_s=0.001)
    upstream = hermes_emulator_factory(profile="upstream", scenario="paced", **FAST)
    report = run_load(proxy.endpoint, concurrency="1,2", requests=4, direct=upstream.endpoint, repeat=2,
                      max_tokens=4)
    order = sorted((s.concurrency, s.repeat, s.start_s, s.target) for s in report.samples)
    runs = [t for i, (c, r, _, t) in enumerate(order) if i == 0 or order[i - 1][:2] != (c, r) or order[i - 1][3] != t]
    assert runs == ["proxy", "direct", "direct", "proxy"] * 2  # ABBA at each level
    assert [lv.repeats for lv in report.levels + report.direct_levels] == [2, 2, 2, 2]
    for added, p, d in zip(report.added, report.levels, report.direct_levels, strict=True):
        assert added.ttft_ms["p50"] == pytest.approx(p.ttft_ms.p50 - d.ttft_ms.p50, abs=1e-3)
        assert added.ttft_ms["p50"] > 0
        assert len(added.ttft_p50_by_repeat) == 2 and added.ttft_p50_ci is not None
    assert len(p.ttft_ms.p50_by_repeat) == 2 and "added by the proxy" in report_text(report)
    with pytest.raises(UsageError, match="--direct needs --endpoint"):
        run_load(None, direct=upstream.endpoint, environ={})


def test_the_ramp_stops_where_throughput_stops_growing(serial_server) -> None:
    # one at a time: at 2 the server only loses its idle turnaround between requests, never 20 % more
    report = run_load(serial_server, concurrency="1,2,4,8", requests=6, warmup_rounds=0, saturation_gain=0.2)
    assert [lv.concurrency for lv in report.levels] == [1, 2] and report.saturated_at == 2
    assert report.verdict == "passed" and "saturated" in report_text(report)
    assert report.target.kind == "live" and report.target.release is None


def test_an_slo_names_the_highest_concurrency_meeting_it(serial_server) -> None:
    # ~30 ms an answer: at 3, one at a time, each waits for the two others (≥ 90 ms, a paced floor)
    report = run_load(serial_server, concurrency="1,3", requests=6, saturation_gain=0, slo="e2e_s=0.075")
    first, second = report.levels
    assert first.slo.meets and not second.slo.meets and report.slo_max_concurrency == 1
    assert first.slo.goodput > 0 and "SLO met" in report_text(report)


def test_open_loop_level_budget_and_no_streaming(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    report = run_load(emu.endpoint, concurrency="2", requests=6, rate=200.0)
    assert report.verdict == "passed" and report.levels[0].sent == 6 and report.levels[0].rate == 200.0
    timed = run_load(emu.endpoint, concurrency="2", level_budget_s=0.2)
    assert timed.verdict == "passed" and timed.levels[0].sent >= 2
    whole = run_load(emu.endpoint, concurrency="2", requests=2, stream=False, max_tokens=4).levels[0]
    assert whole.succeeded == 2 and whole.ttft_ms.count == 0 and whole.e2e_ms.min >= 20.0 + 3 * 2.0
    assert _chats(emu)[-1].json["stream"] is False


# --------------------------------------------------------------------------- errors and stops


def test_a_429_stops_the_ramp_and_reports_retry_after(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=3, first_delta_s=0.1,
                                  token_interval_s=0.0, retry_after=3)
    report = run_load(emu.endpoint, concurrency="1,2,8,16", requests=4, saturation_gain=0)
    assert [lv.concurrency for lv in report.levels] == [1, 2, 8]  # 16 never ran
    assert (report.verdict, report.reason, report.first_error_concurrency) == ("blocked", "rate-limited", 8)
    assert report.levels[-1].stopped_by == "rate_limited" and report.levels[-1].errors.retry_after_s == [3.0]
    assert "Retry-After: 3 s" in report.errors[-1]
    always = run_load(hermes_emulator_factory(scenario="rate-limited", retry_after=2).endpoint, concurrency="1,4")
    assert [lv.sent for lv in always.levels] == [1] and always.rate_limited.retry_after_s == [2.0]  # nothing after it
    assert always.warnings == [] and "parked" not in " ".join(always.errors)  # nous: a 429 parks nothing


def test_an_xai_proxy_is_warned_about_before_the_ramp_and_its_429_names_the_cool_down(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(provider="xai", scenario="rate-limited")
    lines: list[str] = []
    report = run_load(emu.endpoint, concurrency="1,4", progress=lines.append)
    assert lines[0].startswith("warning: the ramp stops at the first 429") and "xAI Grok OAuth" in lines[0]
    assert report.warnings == [lines[0].removeprefix("warning: ")] and report.target.provider == "xai"
    assert [lv.sent for lv in report.levels] == [1] and report.verdict == "blocked"
    assert "answered 429" in report.errors[-1] and "`hermes auth reset xai-oauth`" in report.errors[-1]


@pytest.mark.parametrize(("scenario", "error_class"), [
    ("server-error", "server_error"), ("model-missing", "client_error"), ("truncated", "transport"),
    ("stream-error-event", "stream_error"),
])
def test_errors_by_class(hermes_emulator_factory, scenario: str, error_class: str) -> None:
    report = run_load(hermes_emulator_factory(scenario=scenario).endpoint, concurrency="2", requests=2)
    lv = report.levels[0]  # the warm-up failed: the level ends there, its failures reported
    assert getattr(lv.errors, error_class) == 2 == lv.errors.total and report.verdict == "failed"
    assert error_class in lv.errors.examples


def test_silence_is_a_timeout_and_nobody_listening_is_unreachable(hermes_emulator_factory) -> None:
    stalled = run_load(hermes_emulator_factory(scenario="stall").endpoint, concurrency="1", request_timeout_s=0.3)
    assert stalled.levels[0].errors.timeout == 1 and "no byte for 0.3 s" in stalled.levels[0].errors.examples["timeout"]
    with socket.socket() as sock:  # bound, not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        report = run_load(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", concurrency="1,4", requests=2)
    assert (report.verdict, report.reason) == ("blocked", "unreachable") and len(report.levels) == 1
    assert "hermes proxy start" in report.errors[0]


def test_the_run_budget_bounds_a_whole_run(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.2, token_interval_s=0.0)
    report = run_load(emu.endpoint, concurrency="1,2", requests=20, run_budget_s=0.3)
    assert report.levels[-1].stopped_by == "time_cap" and report.levels[-1].sent < 20 and len(report.levels) == 1


def test_ctrl_c_returns_what_was_measured(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.5, token_interval_s=0.0)

    def interrupt_after_the_first_level(line: str) -> None:
        if line.startswith("proxy concurrency 1:") and "ok" in line:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, delivered to the main thread waiting in run_load

    report = run_load(emu.endpoint, concurrency="1,2", requests=2, warmup_rounds=0,
                      progress=interrupt_after_the_first_level)
    assert report.interrupted and (report.verdict, report.reason) == ("failed", "interrupted")
    assert (report.levels[0].sent, report.levels[0].succeeded) == (2, 2)
    assert len(report.levels) == 1 or report.levels[1].stopped_by == "interrupted"


# --------------------------------------------------------------------------- the embedded default


def test_the_embedded_emulator_runs_in_processes_of_its_own() -> None:
    report = run_load(None, concurrency="2", requests=2, max_tokens=2, first_delta_s=0.03, environ={})
    assert (report.target.kind, report.target.scenario, report.target.emulator_processes) == ("emulator", "paced", 1)
    assert report.verdict == "passed" and report.levels[0].ttft_ms.min >= 30.0
    assert processes_for(LoadSpec(concurrency=[1, 64])) == 1  # 256 answers/s at the 0.25 s floor: one process
    assert processes_for(LoadSpec(concurrency=[1024])) == min(os.cpu_count() or 1, 14)
    with pytest.raises(UsageError, match="--scenario"):
        run_load("http://127.0.0.1:1/v1", scenario="paced", environ={})


# --------------------------------------------------------------------------- CLI


def test_cli_json_is_the_report_with_its_exit_code(hermes_emulator_factory, capsys) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1,2", "--requests", "4", "--json"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["exit_code"] == 0 and doc["verdict"] == "passed" and doc["format"] == "hermes-nb.load.v2"
    assert "proxy concurrency 1: 4/4 ok" in cap.err  # progress on stderr under --json

    def blocks(node):  # every percentile block of the document
        if isinstance(node, dict):
            if "p50" in node and "thin" in node:
                yield node
            for value in node.values():
                yield from blocks(value)
        elif isinstance(node, list):
            for value in node:
                yield from blocks(value)

    found = list(blocks(doc))
    assert len(found) >= 14 and all({"count", "p95"} <= set(b) for b in found)
    limited = hermes_emulator_factory(scenario="rate-limited")
    assert main(["load", "--endpoint", limited.endpoint, "--concurrency", "1", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["rate_limited"]["retry_after_s"] == [2.0]
    emu.clear()
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2", "--model", "m-load",
                 "--runtime-config-overrides", '{"extra_headers": {"x-team": "ops"}}']) == 0
    assert "TTFT ms p50/p95/p99" in capsys.readouterr().out
    assert all(r.headers.get("x-team") == "ops" and r.json["model"] == "m-load" for r in _chats(emu))


def test_cli_refuses_a_non_loopback_endpoint_and_sends_nothing(monkeypatch, capsys) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("a socket was used")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    for endpoint in ("http://10.255.255.1:8645/v1", "http://my-proxy.internal/v1"):
        assert main(["load", "--endpoint", endpoint, "--json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert "not loopback" in doc["error"] and "nothing was sent" in doc["error"]
    assert main(["load", "--endpoint", "http://127.0.0.1:1/v1", "--direct", "http://10.0.0.1/v1", "--json"]) == 2
    assert "--direct" in json.loads(capsys.readouterr().out)["error"]
    assert main(["load", "--endpoint", "http://127.0.0.1:1/v1", "--direct", "http://127.0.0.1:1/v1/", "--json"]) == 2
    assert "the endpoint itself" in json.loads(capsys.readouterr().out)["error"]


def test_allowed_non_loopback_is_warned_about_in_every_output(hermes_emulator_factory, monkeypatch, capsys) -> None:
    """127.0.0.2 stands in for a remote proxy (the guard is told it is not loopback)."""
    emu = hermes_emulator_factory(host="127.0.0.2", scenario="paced", **FAST)
    monkeypatch.setattr(spec_mod, "is_loopback_host", lambda host: host != "127.0.0.2")
    args = ["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2", "--allow-non-loopback"]
    assert main(args) == 0
    assert "warning: --endpoint" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert any("not loopback" in w for w in doc["warnings"]) and "not loopback" in cap.err
    assert "not loopback" in report_html(LoadReport.model_validate({k: v for k, v in doc.items() if k != "exit_code"}))


class _EchoAuth(BaseHTTPRequestHandler):
    """A careless upstream: its 401 echoes the bearer it got."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": f"key {self.headers.get('Authorization')} is not valid",
                                     "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args) -> None:
        pass


def test_the_canary_token_never_reaches_an_output(monkeypatch, capsys, tmp_path: Path) -> None:
    canary = "hnb-canary-" + "7f3a9c" * 4
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", canary)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert main(["load", "--endpoint", endpoint, "--concurrency", "1", "--requests", "2", "--json",
                     "--out", str(tmp_path / "r")]) == 1
        cap = capsys.readouterr()
        assert main(["load", "--endpoint", endpoint, "--concurrency", "1", "--requests", "1"]) == 1
        human = capsys.readouterr()
    finally:
        server.shutdown()
        server.server_close()
    example = json.loads(cap.out)["levels"][0]["errors"]["examples"]["client_error"]
    assert "<redacted>" in example or "Bearer" not in example  # the echo was there, and masked
    outputs = [cap.out, cap.err, human.out, human.err]
    outputs += [p.read_text(encoding="utf-8") for p in (tmp_path / "r").rglob("*") if p.is_file()]
    assert all(canary not in text for text in outputs)
    assert any("is not valid" in text for text in outputs[4:])  # the receipt holds the (masked) error


# --------------------------------------------------------------------------- the magic


def test_the_magic_returns_the_same_report_and_its_help_is_the_flags(hermes_emulator_factory) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    shell.run_line_magic("load_ext", "hermes_nb")
    try:
        report = shell.run_line_magic("hermes_load", f"--endpoint {emu.endpoint} --concurrency 1,2 --requests 2")
        help_text = shell.find_line_magic("hermes_load").__doc__
        html = shell.display_formatter.format(report)[0]["text/html"]
        with pytest.raises(Exception, match="--request-timeout-s: must be > 0"):
            shell.run_line_magic("hermes_load", "--request-timeout-s 0")
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")
    assert isinstance(report, LoadReport) and report.verdict == "passed" and len(report.levels) == 2
    assert "--request-timeout-s S" in help_text and "(default: 60)" in " ".join(help_text.split())
    assert html.count('class="hermes-load-plot"') == 5
