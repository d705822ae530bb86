"""``hermes-nb run MISSION | --prompt TEXT | --prompt - | --prompt-file PATH``: one
:func:`hermes_nb.harness.run.run` (or ``dry_run``) call.

Human mode streams the assistant text to stdout as it arrives; the verdict
line, errors, warnings and hint go to stderr (so stdout is the answer, as in
UH). ``--json`` prints the runtime-result document plus ``run_dir``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hermes_nb.cli.options import add_config_flags, config_from_args, root_of
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import MAX_PROMPT_BYTES
from hermes_nb.harness.mission import Mission, harness_root_of, load_mission, load_workflow, mission_warnings

__all__ = ["register", "handle"]

DESCRIPTION = """Run a UH mission (mission.yaml) or a plain prompt against the proxy and write UH's
artifact tree under <root>/.harness/missions/<dir>/ (run id YYYYMMDDTHHMMSSZ-xxxxxx): <dir> is the
mission's own directory for <root>/.harness/missions/<dir>/mission.yaml, else the mission id
('adhoc' for --prompt). <root> is --root, else R for R/.harness/missions/<dir>/mission.yaml, else cwd.
exit: 0 passed, 1 failed or cancelled, 2 usage/configuration error (nothing written),
3 blocked (locked credentials, proxy not running, rate-limited, model not available)."""

_TAGS = {"passed": "PASS", "failed": "FAIL", "blocked": "BLOCKED", "cancelled": "CANCELLED"}


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run", parents=[parent], help="run a mission or a prompt and write UH artifacts",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mission", nargs="?", metavar="MISSION",
                   help="mission.yaml (or its directory); <R>/.harness/missions/<dir>/mission.yaml "
                        "defaults --root to R")
    p.add_argument("--prompt", metavar="TEXT", help="run a plain prompt as mission 'adhoc' ('-': read it from stdin)")
    p.add_argument("--prompt-file", metavar="PATH", help="run the prompt in this UTF-8 file as mission 'adhoc'")
    p.add_argument("--max-prompt-bytes", type=int, default=MAX_PROMPT_BYTES, metavar="N",
                   help=f"refuse a --prompt-file or --prompt - larger than N bytes (default {MAX_PROMPT_BYTES}, just "
                        "above the proxy's 10 MB body cap)")
    add_config_flags(p)
    p.add_argument("--dry-run", action="store_true",
                   help="write prompt.md and a planned runtime-session.yaml under <mission dir>/dry-runs/<id>/ "
                        "(outside runs/); send nothing")
    p.add_argument("--no-sandbox", action="store_true", help="work in the project itself, not a sandbox copy")
    p.add_argument("--run-id", metavar="ID", help="explicit run id (^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$)")
    p.set_defaults(handler=handle)


def _prompt_text(args: argparse.Namespace) -> str | None:
    """The ad-hoc prompt: ``--prompt TEXT``, ``--prompt -`` (stdin) or ``--prompt-file PATH``, read with a limit;
    None for none."""
    from hermes_nb.harness.prompt import read_prompt

    if args.prompt_file is not None:
        return read_prompt(args.prompt_file, what=f"--prompt-file {args.prompt_file}: prompt file",
                           max_bytes=args.max_prompt_bytes)
    if args.prompt == "-":  # bytes when stdin has them (a text stream only in tests)
        return read_prompt(getattr(sys.stdin, "buffer", sys.stdin), what="--prompt - (stdin)",
                           max_bytes=args.max_prompt_bytes)
    return args.prompt


def _mission(args: argparse.Namespace) -> Mission:
    given = [x for x in (args.mission, args.prompt, args.prompt_file) if x is not None]
    if len(given) != 1:
        raise UsageError("hermes-nb run: give exactly one of MISSION, --prompt TEXT (- for stdin) "
                         "or --prompt-file PATH")
    prompt = _prompt_text(args)
    if prompt is not None:
        return Mission.adhoc(prompt)
    return load_mission(args.mission)


def _stream(delta: str) -> None:
    sys.stdout.write(delta)
    sys.stdout.flush()


def handle(args: argparse.Namespace, out: Any) -> int:
    from hermes_nb.harness.run import dry_run, run

    mission = _mission(args)
    if args.root is None and (inferred := harness_root_of(mission)) is not None:
        args.root = str(inferred)  # <R>/.harness/missions/<dir>/mission.yaml runs under R
    root = root_of(args)
    config = config_from_args(args, mission_overrides=mission.runtime_config_overrides)
    workflow, warnings = load_workflow(root, mission)
    warnings = mission_warnings(mission) + warnings
    if args.dry_run:
        planned = dry_run(mission, config, root=root, run_id=args.run_id, workflow=workflow, warnings=warnings)
        out.line(f"[PLANNED] mission {mission.id} (dry run: nothing sent)")
        out.line(f"  command: {planned.plan.command}")
        out.line(f"  run dir: {planned.run_dir}")
        for warning in warnings:
            out.line(f"  warning: {warning}")
        out.emit(planned.to_json())
        return 0
    # on_delta gets exactly what runtime.stdout.log gets (redacted; a non-streamed answer too)
    result = run(mission, config, root=root, sandbox=not args.no_sandbox, run_id=args.run_id,
                 workflow=workflow, warnings=warnings, on_delta=None if out.json_mode else _stream)
    if not out.json_mode:
        if result.text and not result.text.endswith("\n"):
            _stream("\n")
        doc = result.result
        tag = _TAGS.get(result.status, result.status.upper())
        out.info(f"[{tag}] mission {doc['mission_id']} {result.status} (run {result.run_id}, exit {result.exit_code})")
        for error in doc.get("errors", []):
            out.info(f"  error: {error}")
        for warning in doc.get("warnings", []):
            out.info(f"  warning: {warning}")
        if doc.get("hint"):
            out.info(f"  hint: {doc['hint']}")
        out.info(f"  run dir: {result.run_dir}")
    out.emit(result.to_json())
    return result.exit_code
