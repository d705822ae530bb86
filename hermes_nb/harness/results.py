"""What a finished run (or a dry run) hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.facts import RUN_ARTIFACTS
from hermes_nb.core.records import Exchange, Outcome

if TYPE_CHECKING:  # an annotation only: the kit's verdict cells import this module without the harness's models
    from hermes_nb.harness.plan import RunPlan

__all__ = ["RunResult", "DryRunResult", "RUN_ARTIFACTS", "artifact_digests"]


def artifact_digests(run_dir: Any, names: tuple[str, ...] = RUN_ARTIFACTS) -> dict[str, str]:
    """sha256 of each run artifact present in ``run_dir`` (missing ones are left out)."""
    from hermes_nb.core.digests import sha256_file

    if run_dir is None:
        return {}
    base = Path(run_dir)
    return {name: sha256_file(base / name) for name in names if (base / name).is_file()}


@dataclass
class RunResult:
    """A finished run: the runtime-result document and where it lives."""

    result: dict[str, Any]
    run_dir: Path
    run_id: str
    exit_code: int
    plan: RunPlan
    outcome: Outcome | None = None
    exchange: Exchange | None = None
    text: str = ""

    @property
    def status(self) -> str:
        return str(self.result["status"])

    def to_json(self) -> dict[str, Any]:
        """The runtime-result document plus ``run_dir`` (absolute) for ``--json``."""
        return {**self.result, "run_dir": str(self.run_dir)}

    # rich display: a cell can end with the result itself (allow-listed fields, secret shapes masked)
    def _repr_text_(self) -> str:
        from hermes_nb.core.redaction import Redactor

        reason = self.result.get("reason") or (self.outcome.reason if self.outcome else None)
        took = f", {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return Redactor().text(f"RunResult({self.status}{f' ({reason})' if reason else ''}, "
                               f"mission {self.result.get('mission_id')}, exit {self.exit_code}{took}, "
                               f"{len(self.text)} chars of assistant text)")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("RunResult(...)" if cycle else self._repr_text_())

    def _repr_html_(self) -> str:
        from hermes_nb.core.usage import Usage
        from hermes_nb.views.reprs import box, kv_html, seconds, table_html
        from hermes_nb.views.timeline import StreamTimeline, timeline_svg

        doc, out = self.result, self.outcome
        t = self.exchange.timings if self.exchange is not None else None
        pairs: list[tuple[str, Any]] = [
            ("status", doc.get("status")), ("exit_code", self.exit_code), ("mission_id", doc.get("mission_id")),
            ("runtime", doc.get("runtime")), ("provider", doc.get("provider")),
            ("reason", doc.get("reason") or (out.reason if out else None)),
            ("hint", out.hint if out else None),
            ("headers / first delta / total", " / ".join(seconds(v) or "—" for v in (
                t.headers_s, t.first_delta_s, t.total_s)) if t else None),
            ("usage", Usage.from_exchange(self.exchange).line() if self.exchange is not None else None),
            ("final message", out.final_message if out else None),
        ]
        pairs += [("error", e) for e in doc.get("errors") or []]
        pairs += [("warning", w) for w in (out.warnings if out else [])]
        parts = [kv_html(pairs, badges=("status",))]
        if self.exchange is not None and self.exchange.streamed:
            parts.append(timeline_svg(StreamTimeline.from_exchange(self.exchange), title="answer stream"))
        if self.text:
            from hermes_nb.views.htmlkit import pre

            parts.append("<div><b>assistant text (stdout)</b></div>" + pre(self.text))
        digests = artifact_digests(self.run_dir)
        if digests:
            parts.append("<div><b>run artifacts</b></div>" + table_html(
                [{"artifact": k, "sha256": v} for k, v in digests.items()], ("artifact", "sha256")))
        return box("runtime result", doc.get("status"), *parts)


@dataclass
class DryRunResult:
    plan: RunPlan
    run_dir: Path
    run_id: str
    session: dict[str, Any]
    exit_code: int = 0
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "session": self.session,
            "plan": self.plan.model_dump(mode="json"),
        }
