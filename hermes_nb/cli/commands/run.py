"""Run a UH mission (mission.yaml) or a plain prompt against the proxy and write UH's artifact tree under
<root>/.harness/missions/<dir>/ (run id YYYYMMDDTHHMMSSZ-xxxxxx): <dir> is the mission's own directory for
<root>/.harness/missions/<dir>/mission.yaml, else the mission id ('adhoc' for --prompt). <root> is --root, else R
for R/.harness/missions/<dir>/mission.yaml, else the current directory. The answer streams to stdout, the
verdict to stderr; --json prints the runtime-result document plus run_dir.
exit: 0 passed, 1 failed or cancelled, 2 usage/configuration error (nothing written),
3 blocked (locked credentials, proxy not running, not local, rate-limited, model not available)."""

from __future__ import annotations

import sys
from pathlib import Path

from hermes_nb.cli.output import Output
from hermes_nb.harness.prepare import RunSpec, prepare_mission

HELP = "run a mission or a prompt and write UH artifacts"
SPEC = RunSpec
_TAGS = {"passed": "PASS", "failed": "FAIL", "blocked": "BLOCKED", "cancelled": "CANCELLED"}


def _stream(delta: str) -> None:
    sys.stdout.write(delta)
    sys.stdout.flush()


def handle(spec: RunSpec, out: Output) -> int:
    # <root>: --root, else R for R/.harness/missions/<dir>/mission.yaml, else the current directory
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
        out.info(f"[{_TAGS.get(result.status, result.status.upper())}] mission {doc['mission_id']} {result.status} "
                 f"(run {result.run_id}, exit {result.exit_code})")
        for error in doc.get("errors", []):
            out.info(f"  error: {error}")
        for warning in doc.get("warnings", []):
            out.info(f"  warning: {warning}")
        if doc.get("hint"):
            out.info(f"  hint: {doc['hint']}")
        out.info(f"  run dir: {result.run_dir}")
    out.emit(result.to_json())
    return result.exit_code
