"""``%load_ext hermes_nb``: the magics in-process (IPython's shell) and in a real kernel executed by nbclient."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from hermes_nb import CheckResult, WireReport
from hermes_nb.emulator import serve_emulator


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
    assert all(later.startswith(earlier) for earlier, later in pairwise(texts[1:]))  # only ever grows
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
    with serve_emulator(scenario="auth-stale") as emu:
        monkeypatch.setenv("HERMES_NB_ENDPOINT", emu.endpoint)
        assert ip.run_line_magic("hermes_check", "").state == "locked"  # HERMES_NB_ENDPOINT wins over the emulator
        with serve_emulator(scenario="ok") as other:
            assert ip.run_line_magic("hermes_check", f"--endpoint {other.endpoint}").state == "ready"  # flag wins


def test_magics_in_a_kernel_executed_by_nbclient(tmp_path) -> None:
    import nbformat
    from nbclient import NotebookClient

    from hermes_nb.nbrun.smoke import KERNEL_NAME, KernelPool

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
        km = pool.start(tmp_path)
        try:
            Recording(nb, km=km, timeout=60, kernel_name=KERNEL_NAME).execute()
        finally:
            pool.stop(km)
    chat = nb.cells[1].outputs
    assert seen.count("update_display_data") >= 2  # the answer streamed into the output
    display = next(o for o in chat if o.output_type == "display_data")
    assert "Say hello" in display.data["text/plain"]  # nbclient applied the updates in place: the whole answer
    verdict = next(o for o in chat if o.output_type == "execute_result")
    assert ">passed<" in verdict.data["text/html"]
    assert nb.cells[2].outputs[0].text.strip() == "passed True"  # the result is there for the next cell
    assert ">ready<" in nb.cells[3].outputs[0].data["text/html"]


# --------------------------------------------------------------------------- formats, status, usage, models

def _final_html(cap) -> str:
    return next(o for o in reversed(cap.outputs) if o.update or "hermes-stream" in o.data.get("text/html", "")
                ).data["text/html"]


@pytest.mark.parametrize(("fmt", "present", "absent"), [
    ("markdown", "<strong>hello</strong>", "**hello**"),
    ("text", "**hello**", "<strong>"),
    ("code", "**hello**", "<strong>"),
    ("json", "not JSON", "<strong>"),
])
def test_chat_formats_the_answer_and_never_runs_markup_from_it(ip, fmt: str, present: str, absent: str) -> None:
    with capture_output() as cap:
        result = ip.run_cell_magic("hermes_chat", f"--format {fmt}", 'Say **hello** <img src=x onerror="alert(1)">')
    final = _final_html(cap)
    assert present in final and absent not in final and "<img" not in final
    assert result.verdict == "passed" and final.count("done: passed (ok)") == 1
    assert re.search(r"usage: \d+ prompt \+ \d+ completion = \d+ tokens", final)  # usage under the answer


def test_json_format_pretty_prints_a_json_answer() -> None:
    from hermes_nb.kit.console import answer_html

    html = answer_html("done: passed (ok)", '```json\n{"b": 1, "a": [1, 2]}\n```', fmt="json")
    assert '{\n  &quot;b&quot;: 1,\n  &quot;a&quot;: [\n    1,' in html and "not JSON" not in html


def test_a_failed_chat_never_says_done_and_its_result_carries_usage(ip) -> None:
    with capture_output() as cap:
        result = ip.run_cell_magic("hermes_chat", "--scenario auth-stale", "hi")
    final = _final_html(cap)
    assert "blocked: auth" in final and "done" not in final
    assert result.status == "blocked: auth"
    with capture_output():
        ok = ip.run_cell_magic("hermes_chat", "", "hi")
    assert re.search(r"<td[^>]*>\d+ prompt \+ \d+ completion = \d+ tokens", ok._repr_html_())
    assert ok.usage.reported and ok.usage.completion_tokens > 0


def test_an_unlisted_model_is_warned_about_with_one_models_call_per_endpoint(ip, models_calls: list[str]) -> None:
    with serve_emulator(scenario="ok") as emu:
        with capture_output() as cap:
            result = ip.run_cell_magic("hermes_chat", f"--endpoint {emu.endpoint} --model no-such-model", "hi")
        assert cap.outputs[0].data["text/plain"].startswith("warning: model 'no-such-model' is not listed")
        assert result.warnings and "no-such-model" in result._repr_html_()
        with capture_output() as cap:
            listed = ip.run_cell_magic("hermes_chat", f"--endpoint {emu.endpoint}", "hi")
        assert not listed.warnings and not any("warning" in o.data["text/plain"] for o in cap.outputs)
    assert models_calls == [emu.endpoint]  # one GET /models for the endpoint, then the session's cache
