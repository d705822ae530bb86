"""Safety of the target: a plain-http endpoint that is not loopback is warned about; no traffic leaves loopback.

The non-loopback endpoints here are ``.invalid`` names (RFC 6761: they never resolve; ``getaddrinfo`` is
answered for them here without asking a resolver), so the warning logic is exercised while nothing is sent
anywhere. Redirects to another host are never followed: tests/product/test_faults.py (the redirect row) proves that
with a second listener that sees no connection.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_nb.core.config import validate_config
from hermes_nb.core.facts import is_loopback_host, plain_http_warning

REMOTE = "http://hermes-proxy.nonexistent.invalid:8645/v1"


@pytest.fixture(autouse=True)
def no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not is_loopback_host(name):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known (test: loopback only)")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize(("endpoint", "warned"), [
    ("http://127.0.0.1:8645/v1", False),
    ("http://127.8.9.10:8645/v1", False),
    ("http://localhost:8645/v1", False),
    ("http://[::1]:8645/v1", False),
    ("https://proxy.example.invalid/v1", False),
    ("HTTP://10.0.0.5:8645/v1", True),
    ("http://[fe80::1]:8645/v1", True),
    ("http://127.0.0.1.nip.invalid:8645/v1", True),
    (REMOTE, True),
    ("", False),
    (None, False),
])
def test_plain_http_to_a_host_that_is_not_loopback_is_warned(endpoint: str | None, warned: bool) -> None:
    warning = plain_http_warning(endpoint)
    assert (warning is not None) is warned
    if warning:
        assert "not loopback" in warning and "unencrypted" in warning


def test_check_warns(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb import check
    from hermes_nb.cli.app import main

    result = check({"endpoint": REMOTE, "model": "m"}, budget_s=1)
    assert any("not loopback" in w for w in result.warnings)
    main(["check", "--endpoint", REMOTE])
    assert "not loopback" in capsys.readouterr().out


def test_run_and_dry_run_warn_in_their_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.cli.app import main
    from hermes_nb.harness.mission import Mission
    from hermes_nb.harness.run import dry_run, run

    config = validate_config({"endpoint": REMOTE, "model": "m", "request_timeout_ms": 1000})
    planned = dry_run(Mission.adhoc("hi"), config, root=tmp_path)
    assert any("not loopback" in w for w in planned.plan.warnings)
    result = run(Mission.adhoc("hi"), config, root=tmp_path, handle_signals=False, sandbox=False)
    assert result.outcome.reason == "dns"  # nothing was sent
    doc = yaml.safe_load((result.run_dir / "runtime-result.yaml").read_text())
    assert any("not loopback" in w for w in doc["warnings"])
    main(["run", "--prompt", "hi", "--endpoint", REMOTE, "--root", str(tmp_path), "--no-sandbox"])
    assert "warning: endpoint " in capsys.readouterr().err


def test_the_smoke_receipt_and_output_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import hermes_nb.nbrun.jobs as jobs
    from hermes_nb.cli.app import main
    from hermes_nb.core.redaction import Redactor
    from hermes_nb.nbrun.smoke import KernelPool, NotebookRun, receipt_metadata
    from hermes_nb.target import Target

    with KernelPool() as pool:
        meta = receipt_metadata(NotebookRun("e2e_smoke", Path(__file__), {}), run_id="r",
                                target=Target(endpoint=REMOTE, kind="live"), pool=pool, timeout_s=1,
                                redactor=Redactor())
        assert any("not loopback" in w for w in meta["target_warnings"])
        meta = receipt_metadata(NotebookRun("e2e_smoke", Path(__file__), {}), run_id="r",
                                target=Target(endpoint="http://127.0.0.1:1/v1", kind="emulator"), pool=pool,
                                timeout_s=1, redactor=Redactor())
        assert meta["target_warnings"] == []

    class Stop(Exception):
        pass

    def no_smoke(*args: Any, **kwargs: Any) -> Any:
        raise Stop  # the warning is printed before any notebook runs; nothing is sent anywhere

    monkeypatch.setattr(jobs, "run_smoke", no_smoke)
    monkeypatch.setattr(jobs, "establish", lambda config, stack, **kw: (Target(endpoint=REMOTE, kind="live"), config))
    with pytest.raises(Stop):
        main(["smoke", "--endpoint", REMOTE, "--out", str(tmp_path)])
    assert "warning: endpoint " in capsys.readouterr().err

def test_the_client_never_follows_redirects() -> None:
    from hermes_nb import HermesClient

    with HermesClient(validate_config({"endpoint": "http://127.0.0.1:1/v1", "model": "m"})) as client:
        assert client._http.follow_redirects is False
