"""``%load_ext hermes_nb``: the magics in-process (IPython's shell) and in a real kernel executed by nbclient."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from hermes_nb.emulator import serve
from hermes_nb.proxy.check import CheckResult
from hermes_nb.proxy.report import WireReport


@pytest.fixture(scope="module")
def ip():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


def test_chat_streams_into_one_display_updated_in_place_then_the_verdict(ip, monkeypatch) -> None:
    monkeypatch.delenv("HERMES_NB_ENDPOINT", raising=False)
    with capture_output() as cap:
        result = ip.run_cell_magic("hermes_chat", "--scenario slow", "Say hello\n")
    first, *updates = cap.outputs
    assert not first.update and updates and all(o.update for o in updates)
    assert {o.transient["display_id"] for o in cap.outputs} == {first.transient["display_id"]}
    texts = [o.data["text/plain"] for o in cap.outputs]
    assert len(updates) >= 2 and len(set(texts)) >= 3  # placeholder, at least one partial, the whole answer
    assert all(later.startswith(earlier) for earlier, later in zip(texts[1:], texts[2:]))  # only ever grows
    assert texts[-1] == result.text and "Say hello" in result.text
    assert result.verdict == "passed" and result.outcome.reason == "ok"
    assert ">passed<" in result._repr_html_() and "hermes-timeline" in result._repr_html_()
    assert result._repr_text_().startswith("verdict: passed (ok)")


def test_chat_verdict_follows_the_scenario_and_an_empty_prompt_is_refused(ip) -> None:
    with capture_output():
        result = ip.run_cell_magic("hermes_chat", "--scenario auth-stale", "hi")
    assert (result.verdict, result.outcome.reason) == ("blocked", "auth")
    with pytest.raises(UsageError, match="prompt"):
        ip.run_cell_magic("hermes_chat", "", "  \n")
    with pytest.raises(UsageError):
        ip.run_line_magic("hermes_check", "--bogus")


def test_check_and_probe_return_their_results(ip) -> None:
    result = ip.run_line_magic("hermes_check", "")
    assert isinstance(result, CheckResult) and result.state == "ready"
    report = ip.run_line_magic("hermes_probe", "--compare hermes-agent-0.19.0")
    assert isinstance(report, WireReport) and report.reachable and list(report.drift) == []
    assert "chat_stream" in report.timelines and "hermes-timeline" in report._repr_html_()
    drifted = ip.run_line_magic("hermes_probe", "--compare seed")
    assert drifted.drift and f"drift: {len(drifted.drift)} proxy-owned lines vs seed" in drifted._repr_html_()
    with pytest.raises(UsageError, match="no-such-contract"):
        ip.run_line_magic("hermes_probe", "--compare no-such-contract")


def test_same_config_resolution_as_the_cli(ip, monkeypatch) -> None:
    with serve(scenario="auth-stale") as emu:
        monkeypatch.setenv("HERMES_NB_ENDPOINT", emu.endpoint)
        assert ip.run_line_magic("hermes_check", "").state == "locked"  # HERMES_NB_ENDPOINT wins over the emulator
        with serve(scenario="ok") as other:
            assert ip.run_line_magic("hermes_check", f"--endpoint {other.endpoint}").state == "ready"  # flag wins


def test_magics_in_a_kernel_executed_by_nbclient(tmp_path) -> None:
    import nbformat
    from nbclient import NotebookClient

    from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext hermes_nb"),
                nbformat.v4.new_code_cell("%%hermes_chat --scenario slow\nSay hello"),
                nbformat.v4.new_code_cell("result = _\nprint(result.verdict, 'Say hello' in result.text)"),
                nbformat.v4.new_code_cell("%hermes_check")]
    seen: list[str] = []

    class Recording(NotebookClient):
        def process_message(self, msg, cell, cell_index):  # type: ignore[no-untyped-def]
            seen.append(msg["msg_type"])
            return super().process_message(msg, cell, cell_index)

    with KernelPool() as pool:
        client = Recording(nb, timeout=60, kernel_name=KERNEL_NAME, kernel_manager_class=pool.manager_class(),
                           resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    chat = nb.cells[1].outputs
    assert seen.count("update_display_data") >= 2  # the answer streamed into the output
    display = next(o for o in chat if o.output_type == "display_data")
    assert "Say hello" in display.data["text/plain"]  # nbclient applied the updates in place: the whole answer
    verdict = next(o for o in chat if o.output_type == "execute_result")
    assert ">passed<" in verdict.data["text/html"]
    assert nb.cells[2].outputs[0].text.strip() == "passed True"  # the result is there for the next cell
    assert ">ready<" in nb.cells[3].outputs[0].data["text/html"]
