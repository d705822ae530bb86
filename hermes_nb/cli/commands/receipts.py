"""verify: recompute every digest (files, metadata.receipt, index) and re-scan every file under DIR for secrets
(the shapes, plus HERMES_NB_AUTH_TOKEN when set); exit 0 when everything checks out, 1 when anything does not.
list: every receipt in the index(es), newest first. DIR may be a storage URL (s3://bucket/prefix, any papermill
I/O handler): it is mirrored into a temporary directory and checked there; paths are reported as URLs."""

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from hermes_nb.cli.app import Output
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import RECEIPTS_RELPATH, env_secrets
from hermes_nb.core.spec import Opt, Spec
from hermes_nb.receipts.store import index_documents, is_url, mirrored
from hermes_nb.receipts.verify import verify_receipts

HELP = "verify or list receipts"


class VerifySpec(Spec):
    dir: Annotated[str | None, Opt(positional=True, metavar="DIR")] = Field(
        None, description="receipts directory or storage URL (s3://bucket/prefix)")


class ListSpec(Spec):
    dir: Annotated[str, Opt(positional=True, metavar="DIR")] = Field(
        str(RECEIPTS_RELPATH / "emulator"), description="receipts directory or storage URL")


def _dir(value: str | None) -> Path:
    if value is None:
        raise UsageError("receipts verify: give the receipts directory (DIR)")
    if not (path := Path(value)).is_dir():
        raise UsageError(f"{path}: not a directory")
    return path


def handle_verify(spec: VerifySpec, out: Output) -> int:
    secrets = env_secrets(os.environ)
    if spec.dir is not None and is_url(spec.dir):
        with mirrored(spec.dir) as (store, local):
            report = verify_receipts(local, secrets=secrets)
            report.directory = store.url
            report.problems = [p.replace(str(local), store.url) for p in report.problems]
    else:
        report = verify_receipts(_dir(spec.dir), secrets=secrets)
    for r in report.receipts:
        out.line(f"[{'OK' if r['ok'] else 'BAD'}] {r['path']} ({r['verdict']})")
    for problem in report.problems:
        out.line(f"  problem: {problem}")
    out.line(f"{len(report.receipts)} receipts, {report.files_scanned} files scanned: "
             + ("verified" if report.ok else f"{len(report.problems)} problems"))
    out.emit(report.to_dict())
    return 0 if report.ok else 1


def handle_list(spec: ListSpec, out: Output) -> int:
    if is_url(spec.dir):
        with mirrored(spec.dir, only_indexes=True) as (_, local):
            indexes = index_documents(local)
    else:
        indexes = index_documents(_dir(spec.dir))
    # newest first (by start, then run id): a local chain and the per-run index objects alike
    entries = sorted((e for _, index in indexes for e in index["receipts"]),
                     key=lambda e: (str(e.get("started_at") or ""), str(e.get("run_id") or "")), reverse=True)
    for e in entries:
        out.line(f"{e.get('started_at')}  {e.get('verdict', '?'):8} {e.get('target_kind', '?'):8} "
                 f"{e.get('notebook')}  {e.get('path')}")
    if not entries:
        out.line(f"no receipts in {spec.dir}")
    out.emit({"directory": spec.dir, "receipts": entries})
    return 0


ACTIONS = {"verify": (VerifySpec, handle_verify, "recompute digests and re-scan for secrets (exit 0/1)"),
           "list": (ListSpec, handle_list, "print the receipts index, newest first")}
