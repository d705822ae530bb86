"""The error tree is true: every error class is drawn in core/errors.py, every exported error is raised where it
fits."""

from __future__ import annotations

import importlib
import pkgutil
import re
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes_nb
from hermes_nb import (
    HermesClient,
    HermesError,
    HermesProxyRuntimeConfig,
    ProtocolViolation,
    ProxyStatusError,
    ProxyTimeout,
    ProxyUnreachable,
)
from hermes_nb.core import errors

PACKAGE = Path(hermes_nb.__file__).parent
CORE_ERRORS = [n for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, errors.HermesError)]


def _error_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package (private ones left out)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(hermes_nb.__path__, "hermes_nb."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == info.name
                    and not name.startswith("_")):
                found[name] = obj
    return found


def test_every_error_class_is_drawn_in_the_tree() -> None:
    tree = errors.__doc__ or ""
    missing = [name for name in _error_classes() if not re.search(rf"\b{name}\b", tree)]
    assert missing == []


def test_every_hermes_error_lives_in_core_errors_and_the_package_exports_what_its_verbs_raise() -> None:
    hermes = {n for n, cls in _error_classes().items() if issubclass(cls, HermesError)}
    assert hermes == set(CORE_ERRORS)
    exported = {n for n in hermes_nb.__all__ if n in hermes}
    assert {"HermesError", "ConfigError", "UsageError", "ProxyUnreachable", "ProxyTimeout", "ProxyStatusError",
            "ProtocolViolation", "NotebookFailed", "RigError"} == exported


@pytest.mark.parametrize("name", CORE_ERRORS)
def test_every_exported_error_is_raised_somewhere(name: str) -> None:
    if name == "HermesError":
        pytest.skip("the root is never raised itself")
    raised = re.compile(rf"raise {name}\(|raise format_validation_error|raise UnknownKeyError")
    sources = [p for p in PACKAGE.rglob("*.py") if p.name != "errors.py"]
    hits = [p for p in sources if re.search(rf"raise {name}\(", p.read_text())]
    if name == "UnknownKeyError":  # built by the one validation-error formatter, then raised by its callers
        hits = [p for p in sources if "UnknownKeyError(" in p.read_text() and raised.search(p.read_text())]
    assert hits, f"{name} is exported but raised nowhere"


# --------------------------------------------------------------------------- where they are raised

def test_serve_raises_proxy_unreachable_when_it_cannot_listen() -> None:
    from hermes_nb.emulator import serve_emulator

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ProxyUnreachable, match=f"could not listen on 127.0.0.1:{port}") as info:
            serve_emulator(port=port)
    assert isinstance(info.value, ConnectionError) and info.value.exit_code == 3


def _exchange(handler: Any, **config: Any) -> Any:
    cfg = HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:9/v1", model="m", **config)
    with HermesClient(cfg, transport=httpx.MockTransport(handler)) as client:
        return client.chat([{"role": "user", "content": "hi"}], stream=True)


def _raise(exc: Exception) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc
    return handler


SSE = {"content-type": "text/event-stream"}


@pytest.mark.parametrize("handler, error, match", [
    (_raise(httpx.ConnectError("[Errno 111] Connection refused")), ProxyUnreachable, "refused"),
    (_raise(httpx.ConnectTimeout("timed out")), ProxyTimeout, "timed out"),
    (_raise(httpx.ReadTimeout("timed out")), ProxyTimeout, "no progress for 300 s"),
    (lambda r: httpx.Response(429, json={"error": {"message": "slow down", "type": "rate_limit_exceeded"}}),
     ProxyStatusError, "HTTP 429 slow down"),
    (lambda r: httpx.Response(200, headers=SSE, content=b'data: {"error": {"message": "upstream auth failed", '
                                                        b'"status": 401}}\n\n'),
     ProxyStatusError, "error inside the 200 stream: upstream auth failed"),
    (lambda r: httpx.Response(200, headers=SSE, content=b"data: {not json\n\ndata: [DONE]\n\n"),
     ProtocolViolation, "JSON"),
])
def test_raise_for_status_names_what_went_wrong(handler: Any, error: type[HermesError], match: str) -> None:
    exchange = _exchange(handler)
    with pytest.raises(error, match=match):
        exchange.raise_for_status()


def test_raise_for_status_keeps_status_and_body_and_no_secret() -> None:
    secret = "sk-raise-for-status-0123456789"
    exchange = _exchange(lambda r: httpx.Response(500, json={"error": {"message": f"bad key {secret}"}}),
                         auth_token=secret)
    with pytest.raises(ProxyStatusError) as info:
        exchange.raise_for_status()
    assert info.value.status == 500 and "bad key" in info.value.body
    assert secret not in str(info.value) and secret not in info.value.body
    in_band = _exchange(lambda r: httpx.Response(200, headers=SSE, content=b'data: {"error": {"message": "x", '
                                                                              b'"status": 429}}\n\n'))
    with pytest.raises(ProxyStatusError) as info:
        in_band.raise_for_status()
    assert info.value.status == 429


def test_raise_for_status_returns_a_whole_answer() -> None:
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}\n\n'
    exchange = _exchange(lambda r: httpx.Response(200, headers=SSE, content=chunk + b"data: [DONE]\n\n"))
    assert exchange.raise_for_status() is exchange and exchange.text == "hi"


def test_notebook_failed_carries_the_notebook() -> None:
    from hermes_nb.receipts.verdict import verdict_summary

    summary = verdict_summary("adapter_check", "blocked", reason="locked", errors=["locked"])
    with pytest.raises(errors.NotebookFailed) as info:
        from hermes_nb import kit

        kit.record_verdict(summary)
    assert info.value.notebook == "adapter_check" and info.value.exit_code == 1
