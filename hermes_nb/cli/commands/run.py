"""``hermes-nb run MISSION | --prompt TEXT | --prompt - | --prompt-file PATH``: one
:func:`hermes_nb.harness.prepare.prepare_mission` (the way every face prepares a run), then its
``run`` (or ``dry_run``).

Human mode streams the assistant text to stdout as it arrives; the verdict
line, errors, warnings and hint go to stderr (so stdout is the answer, as in
UH). ``--json`` prints the runtime-result document plus ``run_dir``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hermes_nb.cli.options import add_config_flags
from hermes_nb.cli.output import Output
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import MAX_PROMPT_BYTES
from hermes_nb.harness.mission import Mission

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


def _mission(args: argparse.Namespace) -> Mission | str:
    """The mission file, or an ad-hoc mission made from the prompt."""
    given = [x for x in (args.mission, args.prompt, args.prompt_file) if x is not None]
    if len(given) != 1:
        raise UsageError("hermes-nb run: give exactly one of MISSION, --prompt TEXT (- for stdin) "
                         "or --prompt-file PATH")
    prompt = _prompt_text(args)
    return Mission.adhoc(prompt) if prompt is not None else args.mission


def _stream(delta: str) -> None:
    sys.stdout.write(delta)
    sys.stdout.flush()


def handle(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.harness.prepare import prepare_mission

    # <root>: --root, else R for R/.harness/missions/<dir>/mission.yaml, else the current directory
    prepared = prepare_mission(_mission(args), root=args.root, fallback_root=Path.cwd(), manifest=args.manifest,
                               overrides=args.runtime_config_overrides, endpoint=args.endpoint, model=args.model)
    if args.dry_run:
        planned = prepared.dry_run(run_id=args.run_id)
        out.line(f"[PLANNED] mission {prepared.mission.id} (dry run: nothing sent)")
        out.line(f"  command: {planned.plan.command}")
        out.line(f"  run dir: {planned.run_dir}")
        for warning in prepared.warnings:
            out.line(f"  warning: {warning}")
        out.emit(planned.to_json())
        return 0
    # on_delta gets exactly what runtime.stdout.log gets (redacted; a non-streamed answer too)
    result = prepared.run(sandbox=not args.no_sandbox, run_id=args.run_id,
                          on_delta=None if out.json_mode else _stream)
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
