"""Blocked reads as blocked: a blocked notebook's receipt shows the verdict card and the operator
action and ends without a traceback, while papermill still stops and reports it; index.html gives each run's
reason and action; the target label follows the state the proxy was seen in (a stale proxy is not "live")."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from hermes_nb import NotebookFailed, verify_receipts
from hermes_nb.receipts.index import load_index, target_label


@pytest.fixture(scope="module")
def stale_smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The e2e smoke and the adapter check against a proxy whose credentials are refused (the emulator's
    auth-stale scenario: the real proxy's 401 after a failed token refresh)."""
    from hermes_nb import smoke
    from hermes_nb.emulator import serve_emulator

    out = tmp_path_factory.mktemp("receipts")
    with serve_emulator(scenario="auth-stale") as emu:
        outcome = smoke(endpoint=emu.endpoint, out=out, only=["e2e_smoke", "adapter_check"], cell_timeout_s=60,
                        environ={}, handle_signals=False)
    return out, outcome.to_dict()


def _receipt(out: Path, notebook: str) -> tuple[nbformat.NotebookNode, str]:
    [entry] = [e for e in load_index(out)["receipts"] if e["notebook"] == notebook]
    path = out / entry["path"]
    return nbformat.read(str(path), as_version=4), path.with_suffix(".html").read_text()


def test_a_blocked_e2e_receipt_shows_the_verdict_and_action_and_no_traceback(stale_smoke) -> None:
    out, doc = stale_smoke
    assert doc["verdict"] == "blocked" and doc["exit_code"] == 3
    nb, page = _receipt(out, "e2e_smoke")
    receipt = nb.metadata.receipt
    assert receipt["verdict"] == "blocked" and receipt["status"] == "cell_error"  # papermill stopped and reported it
    assert "hermes auth status nous" in receipt["operator_action"]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert [(e.ename, len(e.traceback)) for e in errors] == [("NotebookFailed", 1)]
    assert errors[0].traceback[0].startswith("NotebookFailed: e2e_smoke blocked: ")
    assert not any("papermill-error-cell-tag" in c.metadata.get("tags", []) for c in nb.cells)  # no red banner
    assert "Traceback" not in page and "most recent call last" not in page and "raise " not in page
    assert "Exception was encountered" not in page
    assert "operator action" in page and "hermes auth status nous" in page  # the verdict card says what to do
    assert verify_receipts(out).ok


def test_index_html_gives_each_runs_reason_and_action_and_the_proxy_state(stale_smoke) -> None:
    out, _ = stale_smoke
    page = (out / "index.html").read_text()
    assert '<td class="why">locked<br><b>action:</b>' in page and '<td class="why">auth<br><b>action:</b>' in page
    entries = load_index(out)["receipts"]
    assert {e["notebook"]: e["proxy_state"] for e in entries}["adapter_check"] == "stale"
    label = target_label(entries)
    assert label.endswith("proxy stale") and "target live " not in page.replace(label, "")


def test_the_target_label_follows_the_proxy_state() -> None:
    live = {"target_kind": "live", "proxy_state": "live"}
    assert target_label([live, {"target_kind": "live", "proxy_state": None}]) == "live"
    assert target_label([live, {"target_kind": "live", "proxy_state": "stale"}]) == "live endpoint, proxy stale"
    assert target_label([{"target_kind": "rig", "proxy_state": "unreachable"}]) == "rig, proxy unreachable"


def test_the_verdict_exception_renders_as_one_line() -> None:
    """IPython's ``_render_traceback_`` hook (the kernel's real use of it: the receipt test above)."""
    error = NotebookFailed("check blocked: locked")
    assert error._render_traceback_() == ["NotebookFailed: check blocked: locked"]
