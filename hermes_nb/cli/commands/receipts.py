"""``hermes-nb receipts verify DIR`` / ``hermes-nb receipts list [DIR]``.

verify: recompute every digest (files, metadata.receipt, index) and re-scan every
file under DIR for secrets (the shapes, plus ``HERMES_NB_AUTH_TOKEN`` when set).
Exit 0 when everything checks out, 1 when anything does not, 2 for usage errors.
DIR may be a storage URL (``s3://bucket/prefix``, any papermill I/O handler): it is mirrored into a
temporary directory and checked there (:mod:`hermes_nb.receipts.store`); paths are reported as URLs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from hermes_nb.cli.output import Output
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import RECEIPTS_RELPATH, env_secrets


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("receipts", parents=[parent], help="verify or list smoke receipts")
    action = p.add_subparsers(dest="action", metavar="ACTION")
    v = action.add_parser("verify", parents=[parent], help="recompute digests and re-scan for secrets (exit 0/1)")
    v.add_argument("dir", metavar="DIR", help="receipts directory or storage URL (s3://bucket/prefix)")
    v.set_defaults(handler=handle_verify)
    ls = action.add_parser("list", parents=[parent], help="print the receipts index, newest first")
    ls.add_argument("dir", metavar="DIR", nargs="?", default=str(RECEIPTS_RELPATH / "emulator"),
                    help=f"receipts directory or storage URL (default {RECEIPTS_RELPATH / 'emulator'})")
    ls.set_defaults(handler=handle_list)
    p.set_defaults(handler=_usage)


def _usage(args: argparse.Namespace, out: Output) -> int:
    raise UsageError("receipts: choose an action: verify DIR | list [DIR]")


def _dir(value: str) -> Path:
    path = Path(value)
    if not path.is_dir():
        raise UsageError(f"{path}: not a directory")
    return path


def handle_verify(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.receipts.store import is_url, mirrored
    from hermes_nb.receipts.verify import verify_receipts

    secrets = env_secrets(os.environ)
    if is_url(args.dir):
        with mirrored(args.dir) as (store, local):
            report = verify_receipts(local, secrets=secrets)
            report = _relabel(report, str(local), store.url)
    else:
        report = verify_receipts(_dir(args.dir), secrets=secrets)
    for r in report.receipts:
        out.line(f"[{'OK' if r['ok'] else 'BAD'}] {r['path']} ({r['verdict']})")
    for problem in report.problems:
        out.line(f"  problem: {problem}")
    out.line(f"{len(report.receipts)} receipts, {report.files_scanned} files scanned: "
             + ("verified" if report.ok else f"{len(report.problems)} problems"))
    out.emit(report.to_dict())
    return 0 if report.ok else 1


def _relabel(report: Any, local: str, url: str) -> Any:
    """A report about a mirror, naming the storage URL instead of the temporary directory."""
    report.directory = url
    report.problems = [p.replace(local, url) for p in report.problems]
    return report


def handle_list(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.receipts.store import index_documents, is_url, mirrored

    if is_url(args.dir):
        with mirrored(args.dir, only_indexes=True) as (_, local):
            indexes = index_documents(local)
        directory = args.dir
    else:
        directory = str(_dir(args.dir))
        indexes = index_documents(Path(directory))
    # newest first (by start, then run id): a local chain and the per-run index objects alike
    entries = sorted((e for _, index in indexes for e in index["receipts"]),
                     key=lambda e: (str(e.get("started_at") or ""), str(e.get("run_id") or "")), reverse=True)
    for e in entries:
        out.line(f"{e.get('started_at')}  {e.get('verdict', '?'):8} {e.get('target_kind', '?'):8} "
                 f"{e.get('notebook')}  {e.get('path')}")
    if not entries:
        out.line(f"no receipts in {directory}")
    out.emit({"directory": directory, "receipts": entries})
    return 0
