"""Execute wire_format_spike, adapter_check and e2e_smoke concurrently through papermill (a fresh kernel each)
against the embedded emulator (default), the real proxy rig (--rig) or a live proxy (--endpoint, else
HERMES_NB_ENDPOINT), and write receipts: <out>/<UTC date>/<run id>/<notebook>.ipynb + .html + .receipt.json, and
<out>/index.json + index.html + README.md. An endpoint that answers from the emulator gives emulator receipts.
exit: 0 all passed, 1 any failed, 3 any blocked (none failed; --blocked-exit maps it), 2 usage, 130/143 stopped by
SIGINT/SIGTERM (the receipts, index and CI outputs written, the running notebooks cancelled)."""

from hermes_nb.cli.app import Output
from hermes_nb.nbrun.jobs import SmokeSpec, smoke

HELP = "run the notebooks headlessly into receipt notebooks"
SPEC = SmokeSpec


def handle(spec: SmokeSpec, out: Output) -> int:
    outcome = smoke(spec, progress=None if out.json_mode else out.info)
    for line in [f"warning: {w}" for w in outcome.warnings] + [f"hermes-nb: error: {p}" for p in outcome.problems]:
        out.info(line)  # a problem: an output not written, the smoke fails naming it
    result, report = outcome.result, outcome.report
    if result is None:
        out.line(f"[{outcome.verdict.upper()}] {report.get('target_kind')}: {outcome.error}")
    for r in result.runs if result else ():
        out.line(f"[{r.verdict.upper()}] {r.name}: {r.reason}" + (f"  {r.receipt_path}" if r.receipt_path else ""))
        details = (r.summary or {}).get("details") or {}
        for line in details.get("drift") or []:
            out.line(f"  drift: {line}")
        if details.get("upstream_differences"):
            out.line(f"  upstream differences (information): {len(details['upstream_differences'])}")
        if details.get("not_judged") and r.reason != "unreachable":  # unreachable: the action says it all
            out.line(f"  not judged (the upstream's trouble, not drift): {len(details['not_judged'])}, "
                     f"e.g. {details['not_judged'][0]}")
    if result:
        for action in dict.fromkeys(n["operator_action"] for n in report["notebooks"] if n.get("operator_action")):
            out.line(f"action: {action}")  # one line per distinct action (an unreachable proxy: one)
        provider = f"; provider {report['provider']}" if report.get("provider") else ""
        out.line(f"smoke {result.verdict} in {result.duration_s:.2f} s{provider}; receipts in {result.out_dir} "
                 f"(run {result.run_id})")
    out.emit(outcome.to_dict())
    return outcome.exit_code
