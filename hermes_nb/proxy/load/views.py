"""How a :class:`~hermes_nb.proxy.load.report.LoadReport` shows itself: the text the CLI prints (and a
notebook's ``text/plain``) and the HTML a notebook renders (tables from :mod:`hermes_nb.views.reprs` and the
three pictures of :mod:`hermes_nb.proxy.load.plots`). Every string passes through the reprs' redaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.proxy.load.plots import PLOTS, plot
from hermes_nb.proxy.load.report import LevelResult, LoadReport, Percentiles
from hermes_nb.views.reprs import box, esc, kv_html, table_html

__all__ = ["report_text", "report_html", "level_rows"]

_SHAPES = Redactor()  # secret shapes (sk-…, JWTs, bearer values), as the HTML's tables redact them
_COLUMNS = ("concurrency", "sent", "ok", "errors", "TTFT ms p50/p90/p99", "ITL ms p50/p90/p99",
            "E2E ms p50/p90/p99", "req/s", "tok/s", "generator CPU", "loop lag p99")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _triple(p: Percentiles) -> str:
    return "/".join(_ms(v) for v in (p.p50, p.p90, p.p99))


def _errors_cell(level: LevelResult) -> str:
    parts = [f"{n} {name}" for name, n in level.errors.by_class().items() if n]
    if level.cancelled:
        parts.append(f"{level.cancelled} cancelled")
    return ", ".join(parts) or "0"


def level_rows(levels: Sequence[LevelResult]) -> list[dict[str, Any]]:
    """One row per level, the columns the text and the HTML tables show."""
    return [{"concurrency": lv.concurrency if lv.rate is None else f"{lv.concurrency} @ {lv.rate:g}/s",
             "sent": lv.sent, "ok": lv.succeeded, "errors": _errors_cell(lv),
             "TTFT ms p50/p90/p99": _triple(lv.ttft_ms), "ITL ms p50/p90/p99": _triple(lv.itl_ms),
             "E2E ms p50/p90/p99": _triple(lv.e2e_ms), "req/s": f"{lv.request_throughput:g}",
             "tok/s": f"{lv.output_token_throughput:g}",
             "generator CPU": f"{lv.overhead.cpu_share:.0%}",
             "loop lag p99": f"{_ms(lv.overhead.loop_lag_ms.p99)} ms"} for lv in levels]


def _added_rows(report: LoadReport) -> list[dict[str, Any]]:
    return [{"concurrency": a.concurrency,
             "TTFT added ms p50/p90/p99": "/".join(_signed(a.ttft_ms.get(q)) for q in ("p50", "p90", "p99")),
             "E2E added ms p50/p90/p99": "/".join(_signed(a.e2e_ms.get(q)) for q in ("p50", "p90", "p99"))}
            for a in report.added]


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _text_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    cells = [list(columns)] + [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def _headline(report: LoadReport) -> str:
    where = (f"emulator, scenario {report.scenario}" if report.target_kind == "emulator" else "given endpoint")
    return (f"load {report.endpoint} ({where}) · model {report.model} · {report.verdict} ({report.reason}) "
            f"in {report.duration_s:.3f} s")


def _plan_line(report: LoadReport) -> str:
    s = report.settings
    budget = (f"{s.get('duration_s'):g} s per level" if s.get("duration_s") is not None
              else f"{s.get('requests')} requests per level" if s.get("requests") is not None
              else "4 rounds of each level (at least 8 requests)")
    rate = f" at {s.get('rate'):g} requests/s" if s.get("rate") else ""
    return (f"{s.get('mode', 'closed loop')}{rate}; {budget}; prompt ~{s.get('prompt_tokens', '?')} tokens; "
            f"max_tokens {s.get('max_tokens', '?')}; timeout {_g(s.get('timeout_s'))} s")


def _g(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "?"


def report_text(report: LoadReport) -> str:
    """The report as lines of text (the CLI's human output)."""
    lines = [_headline(report), _plan_line(report), *_text_table(level_rows(report.levels), _COLUMNS)]
    if report.direct_levels:
        lines += [f"upstream {report.direct} (direct):", *_text_table(level_rows(report.direct_levels), _COLUMNS)]
    if report.added:
        lines += ["added by the proxy (its percentile minus the upstream's, ms):",
                  *_text_table(_added_rows(report), ("concurrency", "TTFT added ms p50/p90/p99",
                                                     "E2E added ms p50/p90/p99"))]
    if report.first_error_concurrency is not None:
        lines.append(f"first errors at concurrency {report.first_error_concurrency}")
    lines += [f"error: {e}" for e in report.errors]
    lines += [f"warning: {w}" for w in report.all_warnings()]
    return _SHAPES.text("\n".join(lines))


def report_html(report: LoadReport, *, plots: bool = True) -> str:
    """The report as one HTML block: summary, levels, added latency, errors, warnings, the pictures."""
    pairs: list[tuple[str, Any]] = [
        ("verdict", report.verdict), ("reason", report.reason), ("endpoint", report.endpoint),
        ("target", f"embedded emulator, scenario {report.scenario}" if report.target_kind == "emulator"
         else "given endpoint"),
        ("direct (upstream)", report.direct), ("model", report.model), ("load", _plan_line(report)),
        ("first errors at concurrency", report.first_error_concurrency),
        ("duration", f"{report.duration_s:.3f} s"), ("generator", report.generator.get("client")),
    ]
    if report.rate_limited is not None:
        after = ", ".join(f"{v:g} s" for v in report.rate_limited.retry_after_s) or "none given"
        pairs.append(("rate limited", f"{report.rate_limited.count} × 429 at concurrency "
                                      f"{report.rate_limited.concurrency}, Retry-After {after}; ramp stopped"))
    pairs += [("error", e) for e in report.errors] + [("warning", w) for w in report.all_warnings()]
    parts = [kv_html(pairs, badges=("verdict",)), "<h4>proxy</h4>", table_html(level_rows(report.levels), _COLUMNS)]
    if report.direct_levels:
        parts += [f"<h4>upstream (direct): {esc(report.direct)}</h4>",
                  table_html(level_rows(report.direct_levels), _COLUMNS),
                  "<h4>added by the proxy (its percentile minus the upstream's)</h4>",
                  table_html(_added_rows(report), ("concurrency", "TTFT added ms p50/p90/p99",
                                                   "E2E added ms p50/p90/p99"))]
    if plots and report.levels:
        parts += [f'<div class="hermes-load-plots">{plot(report, name).svg}</div>' for name in PLOTS]
    return box("load", report.verdict, *parts)
