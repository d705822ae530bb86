"""Timestamps and run ids in UH's formats (uh-contract §3)."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

from hermes_nb.core.errors import ArtifactError

__all__ = ["RUN_ID_RE", "iso_now", "new_run_id", "validate_run_id"]

#: an explicit run id (``--run-id``)
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def iso_now(now: datetime | None = None) -> str:
    """``2026-12-02T15:40:20.123Z`` (UTC, milliseconds)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-`` plus 6 lowercase hex (UTC)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def validate_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id) or run_id in (".", ".."):
        raise ArtifactError(f"invalid run id {run_id!r}: must match {RUN_ID_RE.pattern}")
    return run_id
