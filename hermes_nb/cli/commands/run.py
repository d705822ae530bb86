"""Run a UH mission (mission.yaml) or a plain prompt against the proxy and write UH's artifact tree under
<root>/.harness/missions/<dir>/ (run id YYYYMMDDTHHMMSSZ-xxxxxx): <dir> is the mission's own directory for
<root>/.harness/missions/<dir>/mission.yaml, else the mission id ('adhoc' for --prompt). <root> is --root, else R
for R/.harness/missions/<dir>/mission.yaml, else the current directory. The answer streams to stdout, the
verdict to stderr; --json prints the runtime-result document plus run_dir.
exit: 0 passed, 1 failed or cancelled, 2 usage/configuration error (nothing written),
3 blocked (locked credentials, proxy not running, not local, rate-limited, model not available)."""

import sys
from pathlib import Path

from hermes_nb.cli.app import Output
from hermes_nb.harness.prepare import RunSpec, prepare_mission

HELP = "run a mission or a prompt and write UH artifacts"
SPEC = RunSpec


def _stream(delta: str) -> None:
    sys.stdout.write(delta)
    sys.stdout.flush()


def handle(spec: RunSpec, out: Output) -> int:
    prepared = prepare_mission(spec.source(), root=spec.root, fallback_root=Path.cwd(), manifest=spec.manifest,
                               overrides=spec.runtime_config_overrides, endpoint=spec.endpoint, model=spec.model,
                               provider=spec.provider)
    if spec.dry_run:
        planned = prepared.dry_run(run_id=spec.run_id)
        out.line(f"[PLANNED] mission {prepared.mission.id} (dry run: nothing sent)\n"
                 f"  command: {planned.plan.command}\n  run dir: {planned.run_dir}")
        for warning in prepared.warnings:
            out.line(f"  warning: {warning}")
        out.emit(planned.to_json())
        return 0
    # on_delta gets exactly what runtime.stdout.log gets (redacted; a non-streamed answer too)
    result = prepared.run(sandbox=spec.sandbox, run_id=spec.run_id, on_delta=None if out.json_mode else _stream)
    if not out.json_mode:
        if result.text and not result.text.endswith("\n"):
            _stream("\n")
        doc = result.result
        tag = {"passed": "PASS", "failed": "FAIL"}.get(result.status, result.status.upper())
        out.info(f"[{tag}] mission {doc['mission_id']} {result.status} (run {result.run_id}, exit {result.exit_code})")
        lines = [f"  error: {e}" for e in doc.get("errors", [])] + [f"  warning: {w}" for w in doc.get("warnings", [])]
        if doc.get("hint"):
            lines.append(f"  hint: {doc['hint']}")
        for line in [*lines, f"  run dir: {result.run_dir}"]:
            out.info(line)
    out.emit(result.to_json())
    return result.exit_code
