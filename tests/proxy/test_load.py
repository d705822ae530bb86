"""The load probe (issue 22): figures, plan and caps, emulator load scenarios, the generator against the
emulator over loopback, the CLI, the magic. Small sizes, no timed assertions: a paced emulator's first delta
is a lower bound for TTFT (a sleep never ends early), nothing more; the ±10 ms / ±15 % accuracy is a benchmark
row (benchmarks/load_generator.py, docs/performance.md P7)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from hermes_nb import LoadReport, UsageError, run_load
from hermes_nb.cli import main
from hermes_nb.proxy.load import plan as plan_mod
from hermes_nb.proxy.load.plan import CAPS, parse_levels, plan_load
from hermes_nb.proxy.load.plots import PLOTS, plot
from hermes_nb.proxy.load.report import LevelResult, Percentiles, Sample, added_latency, judge, level_result, percentile

#: fast pacing for tests: the first delta after 20 ms, then one token a millisecond
FAST = {"first_delta_s": 0.02, "token_interval_s": 0.001}
SVG = "{http://www.w3.org/2000/svg}"


def _paced(factory, **extra):
    return factory(scenario="paced", **{**FAST, **extra})


# --------------------------------------------------------------------------- figures (pure)


def test_percentile_interpolates_linearly_between_ranks() -> None:
    values = [float(v) for v in range(1, 11)]  # numpy.percentile([1..10], q) with linear interpolation
    assert [percentile(values, q) for q in (0, 50, 90, 99, 100)] == pytest.approx([1.0, 5.5, 9.1, 9.91, 10.0])
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def _sample(start: float, ttft: float | None, e2e: float, tokens: int, **kw) -> Sample:
    return Sample(start_s=start, end_s=start + e2e, ttft_s=ttft, output_tokens=tokens, **kw)


def test_level_figures_follow_the_genai_perf_definitions() -> None:
    samples = [
        _sample(0.0, 0.100, 0.250, 16, token_source="usage"),  # ITL (0.25-0.1)/15 = 10 ms
        _sample(0.1, 0.120, 0.420, 31, token_source="usage"),  # ITL 10 ms
        _sample(0.2, 0.050, 0.050, 1, token_source="usage"),   # one token: no ITL
        Sample(start_s=0.3, end_s=0.31, status=429, error="rate_limited", retry_after_s=2.0,
               detail="429 (Retry-After 2 s)"),
        Sample(start_s=0.3, end_s=0.32, status=429, error="rate_limited", retry_after_s=2.0),
        Sample(start_s=0.4, end_s=0.9, error="timeout", detail="no complete answer within 0.5 s"),
    ]
    lv = level_result(samples, concurrency=4)
    assert (lv.sent, lv.succeeded, lv.errors.total) == (6, 3, 3)
    assert (lv.errors.rate_limited, lv.errors.timeout, lv.errors.retry_after_s) == (2, 1, [2.0])
    assert lv.errors.examples == {"rate_limited": "429 (Retry-After 2 s)", "timeout": "no complete answer within 0.5 s"}
    assert lv.ttft_ms.count == 3 and lv.ttft_ms.p50 == pytest.approx(100.0) and lv.ttft_ms.max == pytest.approx(120.0)
    assert lv.itl_ms.count == 2 and lv.itl_ms.p50 == pytest.approx(10.0)
    assert lv.e2e_ms.p50 == pytest.approx(250.0)
    assert lv.duration_s == pytest.approx(0.9)  # first sent → last byte of any request
    assert lv.output_tokens == 48 and lv.token_source == "usage"
    assert lv.request_throughput == pytest.approx(3 / 0.9, abs=1e-3)
    assert lv.output_token_throughput == pytest.approx(48 / 0.9, abs=1e-3)
    assert not lv.unreachable
    mixed = level_result([_sample(0, 0.1, 0.2, 3), _sample(0, 0.1, 0.2, 3, token_source="usage")], concurrency=1)
    assert mixed.token_source == "mixed"
    refused = level_result([Sample(0, 0.001, error="transport", connect_failed=True)], concurrency=1)
    assert refused.unreachable and refused.ttft_ms == Percentiles()


def _level(c: int, **errors: int) -> LevelResult:
    sent = 10
    lv = level_result([_sample(0, 0.1, 0.2, 4)] * (sent - sum(errors.values())), concurrency=c)
    lv.sent = sent
    for name, n in errors.items():
        setattr(lv.errors, name, n)
    return lv


def _report(*levels: LevelResult, interrupted: bool = False) -> LoadReport:
    return judge(LoadReport(endpoint="http://127.0.0.1:1/v1", model="m", levels=list(levels), interrupted=interrupted))


def test_the_verdict_names_what_stopped_the_ramp() -> None:
    assert (_report(_level(1), _level(4)).verdict, _report(_level(1)).reason) == ("passed", "measured")
    limited = _level(16, rate_limited=3)
    limited.errors.retry_after_s = [2.0, 5.0]
    report = _report(_level(1), limited)
    assert (report.verdict, report.reason, report.first_error_concurrency) == ("blocked", "rate-limited", 16)
    assert report.rate_limited is not None and report.rate_limited.retry_after_s == [2.0, 5.0]
    assert report.errors == ["concurrency 16: 3 answered 429 (Retry-After: 2 s, 5 s); the ramp stopped there"]
    failed = _report(_level(1), _level(4, server_error=2, transport=1))
    assert (failed.verdict, failed.reason, failed.first_error_concurrency) == ("failed", "errors", 4)
    assert failed.errors[0].startswith("concurrency 4: 2 × server_error, 1 × transport of 10 requests")
    stopped = _report(_level(1), interrupted=True)
    assert (stopped.verdict, stopped.reason) == ("failed", "interrupted") and "Ctrl-C" in stopped.errors[0]
    assert _report().verdict == "failed"


def test_added_latency_is_the_difference_of_percentiles() -> None:
    proxy = level_result([_sample(0, 0.15, 0.30, 4), _sample(0, 0.25, 0.40, 4)], concurrency=2)
    upstream = level_result([_sample(0, 0.10, 0.20, 4)], concurrency=2, target="direct")
    added = added_latency(proxy, upstream)
    assert added.concurrency == 2
    assert added.ttft_ms["p50"] == pytest.approx(100.0) and added.e2e_ms["p50"] == pytest.approx(150.0)
    empty = added_latency(level_result([], concurrency=2), upstream)
    assert empty.ttft_ms == {"p50": None, "p90": None, "p99": None}


def test_a_level_is_warned_when_the_generator_delayed_its_figures() -> None:
    from hermes_nb.proxy.load.run import _warn_overhead

    quiet, late, busy = (level_result([_sample(0, 0.1, 0.2, 4)], concurrency=c) for c in (1, 2, 3))
    quiet.overhead.loop_lag_ms.p99, late.overhead.loop_lag_ms.p99 = 5.0, 12.0  # TTFT p50 100 ms: bound 10 ms
    busy.overhead.cpu_share = 0.9
    _warn_overhead([quiet, late, busy])
    assert quiet.overhead.warning is None
    assert "ran up to 12.0 ms late" in late.overhead.warning and "90% of a CPU" in busy.overhead.warning
    report = LoadReport(endpoint="http://127.0.0.1:1/v1", model="m", levels=[quiet, late], warnings=["target"])
    assert report.all_warnings() == ["target", late.overhead.warning]
    assert f"warning: {late.overhead.warning}" in report._repr_text_()


# --------------------------------------------------------------------------- plan: caps and loopback


def test_levels_parse_and_sort() -> None:
    assert parse_levels("16,1,4,4") == (1, 4, 16) and parse_levels([2, 1]) == (1, 2)
    for bad in ("", "1,x", "0,4", "-1"):
        with pytest.raises(UsageError):
            parse_levels(bad)


@pytest.mark.parametrize("kwargs, message", [
    ({"concurrency": str(int(CAPS["concurrency"]) + 1)}, "hard cap of 1024"),
    ({"concurrency": ",".join(str(i) for i in range(1, 18))}, "17 levels is above the hard cap"),
    ({"requests": int(CAPS["requests"]) + 1}, "--requests 20001 is above the hard cap"),
    ({"duration_s": CAPS["duration_s"] + 1}, "--duration 601 is above the hard cap"),
    ({"rate": 0.0}, "--rate must be > 0"),
    ({"max_tokens": 0}, "--max-tokens must be > 0"),
    ({"prompt_tokens": -1}, "--prompt-tokens must be >= 0"),
    ({"timeout_s": CAPS["timeout_s"] * 2}, "--timeout 1200 is above the hard cap"),
    ({"requests": 4, "duration_s": 1.0}, "exclusive"),
    ({"direct": "http://127.0.0.1:1/v1"}, "the endpoint itself"),
    ({"direct": "ftp://127.0.0.1/v1"}, r"give an http\(s\) URL"),
])
def test_the_plan_refuses_what_the_caps_forbid(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        plan_load("http://127.0.0.1:1/v1", model="m", **kwargs)
    assert info.value.exit_code == 2


def test_a_non_loopback_endpoint_is_refused_unless_allowed() -> None:
    for url in ("http://10.0.0.5:8645/v1", "http://proxy.example:8645/v1", "https://192.168.1.2/v1"):
        with pytest.raises(UsageError, match="not loopback.*nothing was sent.*--allow-non-loopback"):
            plan_load(url, model="m")
    with pytest.raises(UsageError, match="--direct"):
        plan_load("http://127.0.0.1:1/v1", model="m", direct="http://10.0.0.5/v1")
    for url in ("http://localhost:1/v1", "http://127.0.0.2:1/v1", "http://[::1]:1/v1"):
        assert plan_load(url, model="m").warnings == ()
    allowed = plan_load("http://10.0.0.5:8645/v1", model="m", allow_non_loopback=True)
    assert any("not loopback" in w and "quota" in w for w in allowed.warnings)
    assert any("plain http" in w for w in allowed.warnings)
    assert plan_load("http://127.0.0.1:1/v1", model="m").requests_at(16) == 64  # four rounds by default


# --------------------------------------------------------------------------- emulator scenarios


def _chat(endpoint: str, **body) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, **body}


def test_paced_streams_max_tokens_deltas_with_exact_usage(hermes_emulator_factory) -> None:
    emu = _paced(hermes_emulator_factory)
    with httpx.stream("POST", f"{emu.endpoint}/chat/completions", json=_chat(emu, max_tokens=5)) as r:
        frames = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    contents = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert [c for c in contents if c] == ["tok "] * 5
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    plain = httpx.post(f"{emu.endpoint}/chat/completions", json=_chat(emu, max_tokens=3, stream=False)).json()
    assert plain["choices"][0]["message"]["content"] == "tok " * 3 and plain["usage"]["completion_tokens"] == 3


def test_concurrency_limited_answers_429_with_retry_after_beyond_n_in_flight(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=2, first_delta_s=30.0,
                                  retry_after=7)
    with httpx.Client(timeout=10) as client:
        held = [client.stream("POST", f"{emu.endpoint}/chat/completions", json=_chat(emu)) for _ in range(2)]
        responses = [h.__enter__() for h in held]  # headers in: both are in flight, paused before their first delta
        try:
            assert [r.status_code for r in responses] == [200, 200]
            over = client.post(f"{emu.endpoint}/chat/completions", json=_chat(emu))
            assert over.status_code == 429 and over.headers["retry-after"] == "7"
            assert over.json()["error"]["code"] == "rate_limit_exceeded"
            assert client.get(f"{emu.endpoint}/models").status_code == 200  # only chat requests count
        finally:
            for h in held:
                h.__exit__(None, None, None)
    assert sum(bool(r.extra.get("over_capacity")) for r in emu.requests) == 1


def test_the_emulator_cli_takes_the_load_settings(capsys) -> None:
    assert main(["emulator", "--max-concurrent", "0", "--json"]) == 2
    assert "--max-concurrent must be >= 1" in json.loads(capsys.readouterr().out)["error"]
    assert main(["emulator", "--first-delta", "-1", "--json"]) == 2


# --------------------------------------------------------------------------- the generator against the emulator


def test_closed_loop_levels_measure_every_request(hermes_emulator_factory) -> None:
    emu = _paced(hermes_emulator_factory)
    lines: list[str] = []
    report = run_load(emu.endpoint, concurrency="1,4", requests=8, max_tokens=6, prompt_tokens=12,
                      progress=lines.append)
    assert (report.verdict, report.reason, report.target_kind) == ("passed", "measured", "given")
    assert [(lv.concurrency, lv.sent, lv.succeeded) for lv in report.levels] == [(1, 8, 8), (4, 8, 8)]
    for lv in report.levels:
        assert lv.output_tokens == 8 * 6 and lv.token_source == "usage"
        assert lv.ttft_ms.min >= 20.0  # the emulator's first delta comes after 20 ms, never earlier
        assert lv.itl_ms.count == 8 and lv.e2e_ms.p50 >= lv.ttft_ms.p50
        assert lv.request_throughput > 0 and lv.overhead.loop_lag_ms.count > 0 and lv.overhead.cpu_s > 0
    assert len(lines) == 2 and lines[0].startswith("proxy concurrency 1: 8/8 ok")
    chats = [r for r in emu.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 16
    bodies = [r.json for r in chats]
    assert all(b["stream"] is True and b["max_tokens"] == 6 and b["stream_options"] == {"include_usage": True}
               for b in bodies)
    prompts = {b["messages"][-1]["content"] for b in bodies}
    assert len(prompts) == 16 and all(p.count(" the") == 12 for p in prompts)  # distinct, ~12 tokens each
    assert all(r.headers.get("authorization", "").startswith("Bearer ") for r in chats)
    assert report.generator["client"].startswith("aiohttp ")


def test_open_loop_duration_and_rate(hermes_emulator_factory) -> None:
    emu = _paced(hermes_emulator_factory)
    report = run_load(emu.endpoint, concurrency="2", requests=6, rate=200.0)
    assert report.verdict == "passed" and report.levels[0].sent == 6 and report.levels[0].rate == 200.0
    assert report.settings["mode"] == "open loop (Poisson)"
    timed = run_load(emu.endpoint, concurrency="2", duration_s=0.2)
    assert timed.verdict == "passed" and timed.levels[0].sent >= 2 and timed.settings["duration_s"] == 0.2


def test_a_429_stops_the_ramp_and_reports_retry_after(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=3, first_delta_s=0.2,
                                  token_interval_s=0.0, retry_after=3)
    report = run_load(emu.endpoint, concurrency="1,2,8,16", requests=4)
    assert [lv.concurrency for lv in report.levels] == [1, 2, 8]  # 16 never ran
    assert (report.verdict, report.reason, report.first_error_concurrency) == ("blocked", "rate-limited", 8)
    last = report.levels[-1]
    assert last.stopped_by == "rate_limited" and last.errors.rate_limited >= 1 and last.errors.retry_after_s == [3.0]
    assert report.rate_limited is not None and report.rate_limited.concurrency == 8
    assert "Retry-After: 3 s" in report.errors[-1] and "429" in report._repr_text_()
    always = run_load(hermes_emulator_factory(scenario="rate-limited", retry_after=2).endpoint, concurrency="1,4")
    assert [lv.concurrency for lv in always.levels] == [1] and always.levels[0].sent == 1  # no request after it
    assert always.rate_limited.retry_after_s == [2.0] and always.verdict == "blocked"


@pytest.mark.parametrize("scenario, error_class", [
    ("server-error", "server_error"), ("model-missing", "client_error"), ("truncated", "transport"),
    ("stream-error-event", "stream_error"), ("bad-gateway", "server_error"),
])
def test_errors_by_class(hermes_emulator_factory, scenario: str, error_class: str) -> None:
    report = run_load(hermes_emulator_factory(scenario=scenario).endpoint, concurrency="2", requests=2)
    lv = report.levels[0]
    assert getattr(lv.errors, error_class) == 2 and lv.errors.total == 2 and report.verdict == "failed"
    assert error_class in lv.errors.examples


def test_a_stalled_stream_is_a_timeout(hermes_emulator_factory) -> None:
    report = run_load(hermes_emulator_factory(scenario="stall").endpoint, concurrency="1", requests=1, timeout_s=0.3)
    assert report.levels[0].errors.timeout == 1 and "0.3 s" in report.levels[0].errors.examples["timeout"]


def test_nobody_listening_is_blocked_unreachable() -> None:
    with socket.socket() as sock:  # a loopback port bound but not listening refuses connections
        sock.bind(("127.0.0.1", 0))
        report = run_load(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", concurrency="1,4", requests=2)
    assert (report.verdict, report.reason) == ("blocked", "unreachable")
    assert len(report.levels) == 1 and report.levels[0].unreachable and "hermes proxy start" in report.errors[0]


def test_direct_gives_the_added_latency_per_level(hermes_emulator_factory) -> None:
    proxy = hermes_emulator_factory(scenario="paced", first_delta_s=0.06, token_interval_s=0.001)
    upstream = hermes_emulator_factory(profile="upstream", scenario="paced", **FAST)
    report = run_load(proxy.endpoint, concurrency="1,2", requests=4, direct=upstream.endpoint)
    assert [lv.concurrency for lv in report.direct_levels] == [1, 2]
    assert all(lv.target == "direct" and lv.succeeded == 4 for lv in report.direct_levels)
    assert [a.concurrency for a in report.added] == [1, 2]
    for added, p, d in zip(report.added, report.levels, report.direct_levels, strict=True):
        assert added.ttft_ms["p50"] == pytest.approx(p.ttft_ms.p50 - d.ttft_ms.p50, abs=1e-3)
        assert added.e2e_ms["p99"] == pytest.approx(p.e2e_ms.p99 - d.e2e_ms.p99, abs=1e-3)
    assert len([r for r in upstream.requests if r.path.endswith("/chat/completions")]) == 8
    assert "added by the proxy" in report._repr_text_()
    with pytest.raises(UsageError, match="--direct needs --endpoint"):
        run_load(None, direct=upstream.endpoint, environ={})


def test_an_embedded_emulator_runs_when_no_endpoint_is_given() -> None:
    report = run_load(None, concurrency="2", requests=2, max_tokens=2, scenario="paced", environ={})
    assert (report.target_kind, report.scenario, report.verdict) == ("emulator", "paced", "passed")
    assert report.levels[0].ttft_ms.min >= 100.0  # the embedded emulator's first delta: 100 ms
    with pytest.raises(UsageError, match="--scenario"):
        run_load("http://127.0.0.1:1/v1", scenario="paced", environ={})


def test_ctrl_c_returns_what_was_measured(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=1.0, token_interval_s=0.0)

    def interrupt_after_the_first_level(line: str) -> None:
        if "concurrency 1:" in line:  # the second level has two rounds of 1 s ahead of it
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, delivered to the main thread waiting in run_load

    report = run_load(emu.endpoint, concurrency="1,2", requests=3, progress=interrupt_after_the_first_level)
    assert report.interrupted and (report.verdict, report.reason) == ("failed", "interrupted")
    first = report.levels[0]
    assert (first.concurrency, first.sent, first.succeeded) == (1, 3, 3)
    assert len(report.levels) <= 2 and (len(report.levels) == 1 or report.levels[1].stopped_by == "interrupted")


# --------------------------------------------------------------------------- views


def test_the_plots_are_standalone_svg_documents(hermes_emulator_factory) -> None:
    limited = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=1, first_delta_s=0.2,
                                      token_interval_s=0.0)
    report = run_load(limited.endpoint, concurrency="1,4", requests=4)
    for name in PLOTS:
        picture = plot(report, name)
        root = ET.fromstring(picture.svg)  # well-formed XML, the SVG namespace: renders as image/svg+xml
        assert root.tag == f"{SVG}svg" and root.get("class") == "hermes-load-plot"
        assert picture._repr_svg_() == picture.svg and repr(picture) == picture.alt
        assert plot(report, name).svg == picture.svg  # deterministic for one report
    latency = ET.fromstring(plot(report, "latency").svg)
    assert len(latency.findall(f".//{SVG}polyline")) >= 3  # p50, p90, p99 of TTFT at least
    bars = ET.fromstring(plot(report, "errors").svg).findall(f".//{SVG}rect[@height]")
    assert any("rate_limited" in (r.findtext(f"{SVG}title") or "") for r in bars)
    html = report._repr_html_()
    assert html.count('class="hermes-load-plot"') == 3 and "rate limited" in html
    assert report.html(plots=False).count("hermes-load-plot") == 0
    with pytest.raises(ValueError, match="unknown plot"):
        plot(report, "bogus")


# --------------------------------------------------------------------------- CLI


def test_cli_json_is_the_report_with_its_exit_code(hermes_emulator_factory, capsys) -> None:
    emu = _paced(hermes_emulator_factory)
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1,2", "--requests", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 0 and doc["verdict"] == "passed" and doc["format"] == "hermes-nb.load.v1"
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    assert set(doc["levels"][0]["ttft_ms"]) >= {"p50", "p90", "p99"} and "overhead" in doc["levels"][0]
    limited = hermes_emulator_factory(scenario="rate-limited")
    assert main(["load", "--endpoint", limited.endpoint, "--concurrency", "1", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["rate_limited"]["retry_after_s"] == [2.0]
    assert main(["load", "--endpoint", emu.endpoint, "--requests", "1", "--duration", "1", "--json"]) == 2
    capsys.readouterr()
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2"]) == 0
    out = capsys.readouterr().out
    assert "TTFT ms p50/p90/p99" in out and "passed (measured)" in out
    # the runtime config every command resolves: overrides (and a manifest's) reach each request
    emu.clear()
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2", "--model", "m-load",
                 "--runtime-config-overrides", '{"extra_headers": {"x-team": "ops"}}', "--json"]) == 0
    capsys.readouterr()
    chats = [r for r in emu.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 2 and all(r.headers.get("x-team") == "ops" and r.json["model"] == "m-load" for r in chats)


def test_cli_refuses_a_non_loopback_endpoint_and_sends_nothing(monkeypatch, capsys) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("a socket was used")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr("hermes_nb.proxy.load.run._LoadThread.start", no_network)
    for endpoint in ("http://10.255.255.1:8645/v1", "http://my-proxy.internal/v1"):
        assert main(["load", "--endpoint", endpoint, "--json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert doc["exit_code"] == 2 and "not loopback" in doc["error"] and "nothing was sent" in doc["error"]
    assert main(["load", "--endpoint", "http://127.0.0.1:1/v1", "--direct", "http://10.0.0.1/v1", "--json"]) == 2
    assert "--direct" in json.loads(capsys.readouterr().out)["error"]


def test_allowed_non_loopback_is_warned_about_in_every_output(hermes_emulator_factory, monkeypatch, capsys,
                                                               tmp_path: Path) -> None:
    """127.0.0.2 stands in for a remote proxy (the plan is told it is not loopback): the warning is in the
    human text, on stderr, in the JSON, in the HTML view and in the receipt."""
    emu = hermes_emulator_factory(host="127.0.0.2", scenario="paced", **FAST)
    monkeypatch.setattr(plan_mod, "is_loopback_host", lambda host: host != "127.0.0.2")
    args = ["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2", "--allow-non-loopback"]
    assert main(args) == 0
    assert "warning: --endpoint" in capsys.readouterr().out
    assert main([*args, "--json", "--out", str(tmp_path / "r")]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert any("not loopback" in w for w in doc["warnings"]) and "not loopback" in cap.err
    receipt = json.loads(next((tmp_path / "r").rglob("load.receipt.json")).read_text())
    assert any("not loopback" in w for w in receipt["receipt"]["summary"]["warnings"])
    assert "not loopback" in LoadReport.model_validate(
        {k: v for k, v in doc.items() if k not in ("exit_code", "receipt")})._repr_html_()


def test_ctrl_c_of_the_cli_prints_and_keeps_what_was_measured(hermes_emulator_factory, tmp_path: Path) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=1.0, token_interval_s=0.0)
    out = tmp_path / "receipts"
    proc = subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "load", "--endpoint", emu.endpoint,
                             "--concurrency", "1,2", "--requests", "3", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the first level's progress line: then Ctrl-C during the second
            if line.startswith("proxy concurrency 1:"):
                break
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=110)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr[-2000:]
    assert "failed (interrupted)" in stdout and "interrupted (Ctrl-C)" in stdout
    assert "receipt: failed (interrupted)" in stdout
    assert main(["receipts", "verify", str(out)]) == 0
    kept = json.loads(next(out.rglob("load-report.json")).read_text())
    assert kept["interrupted"] is True and kept["levels"][0]["succeeded"] == 3


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

    def log_message(self, *args) -> None:
        pass


def test_the_canary_token_never_reaches_an_output(monkeypatch, capsys, tmp_path: Path) -> None:
    canary = "hnb-canary-" + "7f3a9c" * 4
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", canary)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    doc = json.loads(cap.out)
    example = doc["levels"][0]["errors"]["examples"]["client_error"]
    assert "<redacted>" in example or "Bearer" not in example  # the echo was there, and masked
    outputs = [cap.out, cap.err, human.out, human.err]
    outputs += [p.read_text(encoding="utf-8") for p in (tmp_path / "r").rglob("*") if p.is_file()]
    assert all(canary not in text for text in outputs)
    assert any("is not valid" in text for text in outputs[4:])  # the receipt holds the (masked) error


# --------------------------------------------------------------------------- the magic


def test_the_magic_returns_the_same_report(hermes_emulator_factory) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    emu = _paced(hermes_emulator_factory)
    shell.run_line_magic("load_ext", "hermes_nb")
    try:
        report = shell.run_line_magic("hermes_load", f"--endpoint {emu.endpoint} --concurrency 1,2 --requests 2")
        embedded = shell.run_line_magic("hermes_load", "--concurrency 1 --requests 1 --max-tokens 2")
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")
    assert isinstance(report, LoadReport) and report.verdict == "passed" and len(report.levels) == 2
    assert (embedded.target_kind, embedded.scenario) == ("emulator", "paced")
    assert report._repr_text_().startswith("load ") and 'class="hermes-load-plot"' in report._repr_html_()


def test_time_cap_bounds_a_whole_run(hermes_emulator_factory, monkeypatch) -> None:
    emu = _paced(hermes_emulator_factory)
    monkeypatch.setitem(CAPS, "total_s", 0.0)  # the run's cap already reached: nothing more is sent
    report = run_load(emu.endpoint, concurrency="1,2", requests=4)
    assert report.levels[0].sent == 0 and report.levels[0].stopped_by == "time_cap" and len(report.levels) == 1
    assert (report.verdict, report.reason) == ("failed", "nothing measured")
