"""One fact, one place: error codes, sensitive headers, the connect timeout, .harness paths, the strict base
model, Outcome and the endpoint handles each have one definition that every user shares."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import httpx
import pydantic
import pytest

import hermes_nb
from hermes_nb import HermesProxyRuntimeConfig
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, HARNESS_DIR
from hermes_nb.core.model import StrictModel
from hermes_nb.core.records import ErrorEnvelope

PACKAGE = Path(hermes_nb.__file__).parent


def _sources() -> dict[Path, str]:
    return {p: p.read_text() for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("code", ["upstream_auth_failed", " Upstream_Auth_Failed ", "UPSTREAM_AUTH_FAILED\n"])
def test_the_classifier_and_the_check_read_an_error_code_the_same_way(code: str) -> None:
    """Both used to normalise codes apart (one stripped whitespace, one did not)."""
    from hermes_nb import HermesClient, check
    from hermes_nb.wire.reading import classify

    assert ErrorEnvelope(type=code, code="  ").codes == {"upstream_auth_failed"}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "no credentials", "type": code}})

    config = HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:9/v1", model="m")
    with HermesClient(config, transport=httpx.MockTransport(handler)) as client:
        outcome = classify(client.chat([{"role": "user", "content": "hi"}]), config)
    checked = check(config, transport=httpx.MockTransport(handler))
    assert (outcome.status, outcome.reason) == ("blocked", "auth")
    assert checked.state == "locked"


def test_sensitive_header_names_are_listed_once() -> None:
    from hermes_nb.core.redaction import SENSITIVE_HEADERS

    settable = SENSITIVE_HEADERS - {"authorization"}  # the bearer has its own key (auth_token): not an extra header
    config = HermesProxyRuntimeConfig(model="m", extra_headers={name: f"Key {name}-secret-0123456789"
                                                                 for name in sorted(settable)})
    assert {f"{name}-secret-0123456789" for name in settable} <= set(config.secrets())
    listed = [p for p, text in _sources().items() if re.search(r'"proxy-authorization",\s*"x-api-key"', text)]
    assert [p.name for p in listed] == ["redaction.py"]


def test_the_connect_timeout_is_one_fact() -> None:
    from hermes_nb import HermesClient
    from hermes_nb.harness.mission import Mission
    from hermes_nb.harness.run import plan_run

    assert HermesClient("http://127.0.0.1:9/v1").connect_timeout_s == CONNECT_TIMEOUT_S
    plan = plan_run(Mission.adhoc("hi"), HermesProxyRuntimeConfig(model="m"))
    assert plan.timeouts["connect_timeout_s"] == CONNECT_TIMEOUT_S
    literal = [p for p, text in _sources().items()
               if re.search(r"connect[a-z_]*\s*[=:][^\n]*\b5\.0\b", text, re.IGNORECASE)]
    assert [p.name for p in literal] == ["facts.py"]


def test_harness_paths_come_from_facts() -> None:
    quoted = [p.relative_to(PACKAGE).as_posix() for p, text in _sources().items()
              if f'"{HARNESS_DIR}"' in text or f"'{HARNESS_DIR}'" in text]
    assert quoted == ["core/facts.py"]


def test_one_strict_base_model() -> None:
    forbidding = [p.relative_to(PACKAGE).as_posix() for p, text in _sources().items() if 'extra="forbid"' in text]
    assert forbidding == ["core/model.py"]
    with pytest.raises(pydantic.ValidationError):
        ErrorEnvelope(message="m", surprise=1)  # type: ignore[call-arg]
    from hermes_nb.core.manifest import AdapterManifest
    from hermes_nb.core.records import Outcome
    from hermes_nb.core.spec import Spec

    for cls in (hermes_nb.Exchange, Outcome, ErrorEnvelope, hermes_nb.HermesProxyRuntimeConfig, AdapterManifest,
                hermes_nb.WireReport, hermes_nb.Target, Spec):
        assert issubclass(cls, StrictModel), cls.__name__


def test_outcome_has_one_meaning() -> None:
    """``Outcome`` is a chat exchange's classification; a probed route's result is a ``RouteOutcome``."""
    from hermes_nb.proxy import report

    assert not hasattr(report, "Outcome")
    defined = [p.name for p, text in _sources().items() if re.search(r"^(class )?Outcome\b", text, re.M)]
    assert defined == ["records.py"]


def test_the_three_handles_share_one_helper(tmp_path: Path) -> None:
    from hermes_nb.core.model import EndpointHandle
    from hermes_nb.emulator import EmulatorHandle, serve_emulator
    from hermes_nb.rig.rig import CommandUpstream, RigHandle

    for cls in (EmulatorHandle, RigHandle, CommandUpstream):
        assert issubclass(cls, EndpointHandle) and "__new__" not in vars(cls), cls.__name__
    with serve_emulator() as emu:
        assert emu == emu.endpoint and isinstance(emu, str) and emu.port > 0
    handle = RigHandle("http://127.0.0.1:1/v1", state="live")
    assert (handle, handle.state, handle.upstream, handle.upstream_kind) == (
        "http://127.0.0.1:1/v1", "live", None, None)
    assert "(str)" not in inspect.getsource(inspect.getmodule(RigHandle))  # no second str-subclass handle
