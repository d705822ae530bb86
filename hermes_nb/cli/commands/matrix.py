"""For each hermes-agent release: its own cached venv, the real proxy rig in --state, the smoke into
<out>/<version>/; then <out>/matrix.json and matrix.md naming what drifted between versions (also appended to
$GITHUB_STEP_SUMMARY when set). Versions that cannot run the state are listed as unsupported.
exit: 0 every version that ran passed, 1 any failed, 3 any blocked or unavailable (or none ran; --blocked-exit
maps it), 2 usage, 130/143 stopped by SIGINT/SIGTERM."""

from __future__ import annotations

from hermes_nb.cli.output import Output
from hermes_nb.nbrun.matrix import MatrixSpec, matrix

HELP = "run the smoke against several hermes-agent releases"
SPEC = MatrixSpec


def handle(spec: MatrixSpec, out: Output) -> int:
    result, doc = matrix(spec.versions, state=spec.state, out=spec.out, only=spec.only or None,
                         timeout_s=spec.cell_timeout_s, html=spec.html, install=spec.install,
                         junit_xml=spec.junit_xml, summary_md=spec.summary_md, blocked_exit=spec.blocked_exit,
                         progress=None if out.json_mode else out.info, providers=spec.providers, model=spec.model)
    for warning in doc["warnings"]:
        out.info(f"warning: {warning}")
    for problem in doc["problems"]:  # an output not written: the matrix fails naming it
        out.info(f"hermes-nb: error: {problem}")
    for v in doc["versions"]:
        reason = f"  ({v['reason']})" if v["status"] != "ran" else ""
        out.line(f"{v['version']:8} {v['provider']:5} {v['status']:11} {v['verdict'] or '—':8} "
                 + " ".join(f"{k}={w}" for k, w in v["notebooks"].items()) + reason)
    for c in doc["changes"]:
        moved = len(c["verdicts"]) + len(c["drift_added"]) + len(c["drift_removed"])
        out.line(f"{c['from']} → {c['to']} ({c['provider']}): {moved or 'no'} changes")
    out.line(f"matrix {result.verdict}; summary in {result.out_dir / 'matrix.md'} and {result.out_dir / 'matrix.json'}")
    out.emit(doc)
    return result.exit_code
