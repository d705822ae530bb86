"""The redaction audit: every job, canaries everywhere a secret can come from, zero hits in anything produced.

Canaries: the auth token in the adapter manifest, another in ``HERMES_NB_AUTH_TOKEN``, a key in the
``x-api-key`` extra header and one under each of ``X-Auth-Token``, ``X-Goog-Api-Key``, ``Private-Token`` and
``X-Amz-Security-Token`` (names no list had to know: the name rule masks them), and -- in the prompt's
neighbourhood -- an ``sk-`` key and a JWT that no configuration names (only their shapes can catch them; the
emulator echoes the prompt back). The jobs (docs/hardening.md lists them): check, probe, run (and its dry run),
adapter show, smoke (three notebooks, receipts, HTML, index), the widgets console's actions (check, probe, run
prompt), the IPython magics (check, probe, chat) and promote. Every
file they produced (the project tree, the receipts) and everything they printed (stdout and stderr) is scanned
for each canary and for JWT-, bearer- and key-shaped strings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_nb.cli.app import main
from hermes_nb.core.facts import SHIPPED_NOTEBOOKS
from hermes_nb.core.redaction import find_secrets
from hermes_nb.emulator import serve_emulator
from tests.helpers import ROOT

MANIFEST_TOKEN = "sk-canary-audit-manifest-0123456789abcdef"
ENV_TOKEN = "canary-audit-env-Tok3n-0123456789abcdef"
HEADER_KEY = "canary-audit-header-K3y-0123456789abcdef"
PROMPT_KEY = "sk-canary-audit-prompt-0123456789abcdef"
PROMPT_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnktYXVkaXQifQ.c2lnbmF0dXJlLWNhbmFyeQ"
#: credential-named extra headers no list in the package had to name
NAMED_HEADERS = {name: f"canary-audit-{name.lower()}-0123456789abcdef"
                 for name in ("X-Auth-Token", "X-Goog-Api-Key", "Private-Token", "X-Amz-Security-Token")}
CANARIES = [MANIFEST_TOKEN, ENV_TOKEN, HEADER_KEY, PROMPT_KEY, PROMPT_JWT, *NAMED_HEADERS.values()]
PROMPT = f"Audit {PROMPT_KEY} and {PROMPT_JWT} please.\nThe rest of the mission."


def _files(root: Path) -> dict[Path, float]:
    return {p: p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def test_every_job_leaks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "project"
    manifest = root / ".harness" / "adapters" / "hermes-proxy.yaml"
    manifest.parent.mkdir(parents=True)
    outputs: list[str] = []
    with serve_emulator() as emu:
        manifest.write_text(
            "id: hermes-proxy\nname: Hermes proxy\nruntime: hermes-proxy\nstatus: experimental\n"
            "config:\n  pass_session_id: false\n  runtime_config:\n"
            f"    endpoint: {emu.endpoint}\n    model: nousresearch/hermes-4-405b\n"
            f"    auth_token: {MANIFEST_TOKEN}\n    request_timeout_ms: 20000\n"
            f"    extra_headers:\n      x-api-key: {HEADER_KEY}\n"
            + "".join(f"      {name}: {value}\n" for name, value in NAMED_HEADERS.items()))
        before = _files(root)
        monkeypatch.chdir(root)
        monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", ENV_TOKEN)
        env = {"HERMES_NB_AUTH_TOKEN": ENV_TOKEN}

        def job(*argv: str) -> int:
            code = main(list(argv))
            captured = capsys.readouterr()
            outputs.append(f"hermes-nb {argv[0]}\n{captured.out}\n{captured.err}")  # not argv: it holds the prompt
            return code

        assert job("check", "--root", str(root)) == 0
        assert job("check", "--json", "--root", str(root)) == 0
        job("probe", "--endpoint", emu.endpoint, "--budget-s", "10", "--out", str(root / "probe.json"))
        assert job("run", "--prompt", PROMPT, "--root", str(root), "--no-sandbox") == 0
        assert job("run", "--json", "--prompt", PROMPT, "--root", str(root), "--no-sandbox") == 0
        assert job("run", "--json", "--dry-run", "--prompt", PROMPT, "--root", str(root)) == 0
        assert job("adapter", "show", "--root", str(root)) == 0
        assert job("adapter", "show", "--json", "--root", str(root)) == 0
        receipts = root / "runbooks" / "receipts" / "audit"
        assert job("smoke", "--out", str(receipts)) == 0

        from hermes_nb.kit import ConsoleSession

        actions = ConsoleSession(environ=env)
        try:
            outputs.append(actions.check(emu.endpoint, "m", "ok"))
            outputs.append(actions.probe(emu.endpoint, "m", "ok", budget_s=10))
            outputs.append(actions.run_prompt(emu.endpoint, "m", "ok", PROMPT, root=str(root)))
        finally:
            actions.close()
        outputs.extend(_magics(emu.endpoint, str(manifest)))
        e2e = next(receipts.rglob("e2e_smoke.ipynb"))
        job("promote", "--receipt", str(e2e), "--manifest", str(manifest),
            "--runbook", str(root / "runbooks" / "hermes-proxy-smoke.md"))
        job("receipts", "verify", str(receipts))

    produced = {p for p, mtime in _files(root).items() if before.get(p) != mtime}
    assert len(produced) > 30, sorted(str(p) for p in produced)  # the jobs really wrote their trees
    assert any(p.suffix == ".ipynb" for p in produced) and any(p.name == "events.ndjson" for p in produced)
    hits: list[str] = []
    for path in sorted(produced):
        text = path.read_bytes().decode("utf-8", "replace")
        hits += [f"{path.relative_to(root)}: {what}" for what in find_secrets(text, CANARIES)]
    for number, text in enumerate(outputs):
        hits += [f"output #{number} ({text.splitlines()[0][:60]}): {what}" for what in find_secrets(text, CANARIES)]
    assert hits == []
    # the canaries did travel: the prompt's key came back from the emulator and was masked, not lost
    stdout_logs = [p for p in produced if p.name == "runtime.stdout.log"]
    assert sum("<redacted>" in p.read_text() for p in stdout_logs) >= 3  # two CLI runs and the console's
    assert json.loads((root / "probe.json").read_text())["endpoint"] == emu.endpoint


def _magics(endpoint: str, manifest: str) -> list[str]:
    """``%load_ext hermes_nb`` in IPython's shell: every display the magics publish and each result's reprs."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    try:
        with capture_output() as cap:
            results = [shell.run_line_magic("hermes_check", f"--endpoint {endpoint} --manifest {manifest}"),
                       shell.run_line_magic("hermes_probe", f"--endpoint {endpoint} --compare hermes-agent-0.19.0"),
                       shell.run_cell_magic("hermes_chat", f"--endpoint {endpoint} --manifest {manifest}", PROMPT)]
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")
    assert results[0].state == "ready" and results[2].verdict == "passed"
    texts = [cap.stdout, cap.stderr] + [json.dumps(o.data) for o in cap.outputs]
    texts += [f"%magic result\n{r._repr_html_()}\n{r._repr_text_()}" for r in results]
    assert any("<redacted>" in t for t in texts)  # the echoed prompt key streamed into the display, masked
    return ["%magics\n" + t for t in texts]


def test_the_committed_notebooks_hold_no_secret_shapes() -> None:
    """The notebooks in the repository and in the wheel (stored outputs included): no JWT, bearer or key."""
    from hermes_nb.core.facts import data_dir

    repo = ROOT / "notebooks"
    notebooks = sorted(repo.glob("*.ipynb")) + sorted(data_dir().joinpath("notebooks").glob("*.ipynb"))
    shipped = {p.stem for p in notebooks if p.parent != repo}
    assert shipped == set(SHIPPED_NOTEBOOKS) and len(notebooks) == 2 * len(shipped)  # the repo's copies and the wheel's
    assert {str(p): find_secrets(p.read_text(encoding="utf-8")) for p in notebooks} == {str(p): [] for p in notebooks}
