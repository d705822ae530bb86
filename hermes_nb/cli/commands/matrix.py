"""For each release (hermes-agent --versions, --package SPEC, --hermes-bin PATH: hermes, hermesx): its own venv, the
real proxy rig in --state, the smoke into <out>/<package>-<version>/ (its spike compared with the release's own
recorded contract, or --contract); then <out>/matrix.json and matrix.md naming what changed between releases (also
appended to $GITHUB_STEP_SUMMARY when set). Releases that cannot run the state are listed as unsupported.
exit: 0 every release that ran passed, 1 any failed, 3 any blocked or unavailable (or none ran; --blocked-exit
maps it), 2 usage, 130/143 stopped by SIGINT/SIGTERM."""

from hermes_nb.cli.app import Output
from hermes_nb.rig.matrix import MatrixSpec, matrix

HELP = "run the smoke against several Hermes Agent releases"
SPEC = MatrixSpec


def handle(spec: MatrixSpec, out: Output) -> int:
    result, doc = matrix(spec, progress=None if out.json_mode else out.info)
    for line in [f"warning: {w}" for w in doc["warnings"]] + [f"hermes-nb: error: {p}" for p in doc["problems"]]:
        out.info(line)  # a problem: an output not written, the matrix fails naming it
    for v in doc["versions"]:
        reason = f"  ({v['reason']})" if v["status"] != "ran" else ""
        out.line(f"{v['release']:34} {v['provider']:5} {v['status']:11} {v['verdict'] or '—':8} "
                 + " ".join(f"{k}={w}" for k, w in v["notebooks"].items()) + reason)
    for c in doc["changes"]:
        moved = len(c["verdicts"]) + len(c["contracts"] or [])
        out.line(f"{c['from']} → {c['to']} ({c['provider']}): {moved or 'no'} changes"
                 + (" (no recorded contract for one of them)" if c["contracts"] is None else ""))
    out.line(f"matrix {result.verdict}; summary in {result.out_dir / 'matrix.md'} and {result.out_dir / 'matrix.json'}")
    out.emit(doc)
    return result.exit_code
