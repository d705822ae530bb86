"""How a :class:`~hermes_nb.load.report.LoadReport` shows itself: the text the CLI prints, the HTML a notebook
renders (tables from the one HTML toolkit, :mod:`hermes_nb.views.htmlkit`, and the pictures of
:mod:`hermes_nb.load.plots`). The record never imports this module: :func:`register_displays` hands it to
IPython's formatters (called when the wing is imported inside a running IPython). Every string passes through
the redactor of secret shapes. A percentile resting on too few samples is marked ``*``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.load.metrics import AddedLatency, LevelResult, Percentiles
from hermes_nb.load.plots import PLOTS, plot
from hermes_nb.load.report import LoadReport
from hermes_nb.views.htmlkit import box, esc, kv_html, table_html

__all__ = ["report_text", "report_html", "level_rows", "register_displays"]

_SHAPES = Redactor()
_COLUMNS = ("concurrency", "sent", "ok", "errors", "TTFT ms p50/p95/p99", "ITL ms p50/p95/p99",
            "E2E ms p50/p95/p99", "gap ms p50/p99/max", "stalls", "req/s", "tok/s", "CPU", "lag p99", "machine")
_THIN = "* rests on fewer samples than it needs (p90: 10, p95: 20, p99: 100): read it as a bound, not a percentile"


def _triple(p: Percentiles, names: Sequence[str] = ("p50", "p95", "p99")) -> str:
    return "/".join("-" if getattr(p, q) is None else f"{getattr(p, q):.1f}" + ("*" if q in p.thin else "")
                    for q in names)


def _errors_cell(level: LevelResult) -> str:
    parts = [f"{n} {name}" for name, n in level.errors.by_class().items() if n]
    return ", ".join(parts + ([f"{level.cancelled} cancelled"] if level.cancelled else [])) or "0"


def level_rows(levels: Sequence[LevelResult]) -> list[dict[str, Any]]:
    """One row per level: the columns the text and the HTML tables show (TTFAT only where it differs)."""
    rows = []
    for lv in levels:
        o = lv.overhead
        row = {"concurrency": lv.concurrency if lv.rate is None else f"{lv.concurrency} @ {lv.rate:g}/s",
               "sent": lv.sent, "ok": lv.succeeded, "errors": _errors_cell(lv),
               "TTFT ms p50/p95/p99": _triple(lv.ttft_ms), "TTFAT ms p50/p95/p99": _triple(lv.ttfat_ms),
               "ITL ms p50/p95/p99": _triple(lv.itl_ms), "E2E ms p50/p95/p99": _triple(lv.e2e_ms),
               "last byte ms p50/p99": _triple(lv.last_byte_ms, ("p50", "p99")),
               "gap ms p50/p99/max": _triple(lv.gaps.gap_ms, ("p50", "p99", "max")),
               "stalls": f"{lv.gaps.stalled}/{lv.gaps.streams}", "req/s": f"{lv.request_throughput:g}",
               "tok/s": f"{lv.output_token_throughput:g}", "CPU": f"{o.cpu_share:.0%}",
               "lag p99": "-" if o.loop_lag_ms.p99 is None else f"{o.loop_lag_ms.p99:.1f} ms",
               "machine": "-" if o.machine_busy is None else f"{o.machine_busy:.0%} busy, load {o.load_avg}"}
        if lv.slo is not None:
            row["SLO met"] = f"{lv.slo.share:.0%}{' ✓' if lv.slo.meets else ''}, {lv.slo.goodput:g}/s"
        rows.append(row)
    return rows


def _columns(report: LoadReport, levels: Sequence[LevelResult]) -> list[str]:
    columns = list(_COLUMNS)
    if any(lv.ttfat_ms.p50 != lv.ttft_ms.p50 for lv in levels):
        columns.insert(5, "TTFAT ms p50/p95/p99")
    if any(lv.last_byte_ms.p50 != lv.e2e_ms.p50 for lv in levels):
        columns.insert(columns.index("gap ms p50/p99/max"), "last byte ms p50/p99")
    return columns + (["SLO met"] if report.settings.get("slo") else [])


def _signed(values: dict[str, float | None], ci: tuple[float, float] | None, by_repeat: list[float]) -> str:
    text = "/".join("-" if values.get(q) is None else f"{values[q]:+.1f}" for q in ("p50", "p95", "p99"))
    text += f" (p50 95% {ci[0]:+.1f}..{ci[1]:+.1f})" if ci else ""
    return text + (f" repeats {min(by_repeat):+.1f}..{max(by_repeat):+.1f}" if by_repeat else "")


def _added_rows(report: LoadReport) -> list[dict[str, Any]]:
    def upstream(a: AddedLatency) -> str:
        d = report.level(a.concurrency, target="direct")
        return _triple(d.e2e_ms, ("p50", "p99")) if d else "-"

    return [{"concurrency": a.concurrency, "TTFT added ms p50/p95/p99": _signed(a.ttft_ms, a.ttft_p50_ci,
                                                                                   a.ttft_p50_by_repeat),
             "E2E added ms p50/p95/p99": _signed(a.e2e_ms, a.e2e_p50_ci, a.e2e_p50_by_repeat),
             "upstream E2E ms p50/p99": upstream(a)} for a in report.added]


_ADDED = ("concurrency", "TTFT added ms p50/p95/p99", "E2E added ms p50/p95/p99", "upstream E2E ms p50/p99")


def _text_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    cells = [list(columns)] + [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def _target(report: LoadReport) -> str:
    t = report.target
    if t.kind == "emulator":
        return "emulator" + (f", scenario {t.scenario}, {t.emulator_processes} process(es)" if t.scenario else "")
    return ("the real proxy, the emulator as its upstream" if t.kind == "rig" else "live") + (
        f", hermes-agent {t.release}" if t.release else "")


def _plan(report: LoadReport) -> str:
    s = report.settings
    budget = (f"{s.get('level_budget_s'):g} s per level" if s.get("level_budget_s") is not None else
              f"{','.join(map(str, s['requests']))} requests per level" if s.get("requests") else
              f"{s.get('rounds')} rounds per level")
    mode = f"open loop at {s['rate']:g}/s" if s.get("rate") else "closed loop"
    return (f"{mode}; {budget}; warm-up {s.get('warmup_rounds')} round(s); repeat {s.get('repeat')}; seed "
            f"{s.get('seed')}; prompt ~{s.get('prompt_tokens')} tokens; max_tokens {s.get('max_tokens')}"
            f"{'' if s.get('stream', True) else '; not streamed'}")


def _summary(report: LoadReport) -> list[str]:
    lines = []
    if report.saturated_at is not None:
        lines.append(f"throughput stopped growing at concurrency {report.saturated_at}: saturated")
    if report.settings.get("slo"):
        targets = ", ".join(f"{k}={v:g}" for k, v in report.settings["slo"].items())
        lines.append(f"SLO {targets}: highest concurrency meeting it {report.slo_max_concurrency or 'none'}")
    if report.first_error_concurrency is not None:
        lines.append(f"first errors at concurrency {report.first_error_concurrency}")
    levels = report.levels + report.direct_levels
    if any(p.thin for lv in levels for p in (lv.ttft_ms, lv.itl_ms, lv.e2e_ms, lv.gaps.gap_ms)):
        lines.append(_THIN)
    return lines


def report_text(report: LoadReport) -> str:
    """The report as lines of text (the CLI's human output)."""
    lines = [f"load {report.endpoint} ({_target(report)}) · model {report.model} · {report.verdict} "
             f"({report.reason}) in {report.duration_s:.3f} s", _plan(report),
             *_text_table(level_rows(report.levels), _columns(report, report.levels))]
    if report.direct_levels:
        lines += [f"upstream {report.direct} (direct):",
                  *_text_table(level_rows(report.direct_levels), _columns(report, report.direct_levels)),
                  "added by the proxy (its percentile minus the upstream's, ms):",
                  *_text_table(_added_rows(report), _ADDED)]
    lines += _summary(report) + [f"error: {e}" for e in report.errors]
    lines += [f"warning: {w}" for w in report.all_warnings()]
    return _SHAPES.text("\n".join(lines))


def report_html(report: LoadReport, *, plots: bool = True) -> str:
    """The report as one HTML block: summary, levels, added latency, notes, errors, warnings, the pictures."""
    pairs: list[tuple[str, Any]] = [
        ("verdict", report.verdict), ("reason", report.reason), ("endpoint", report.endpoint),
        ("target", _target(report)), ("direct (upstream)", report.direct), ("model", report.model),
        ("load", _plan(report)), ("measured in", f"{report.duration_s:.3f} s"),
        ("generator", f"hermes-nb {report.generator.get('hermes_nb')}, {report.generator.get('client')}")]
    if report.rate_limited is not None:
        after = ", ".join(f"{v:g} s" for v in report.rate_limited.retry_after_s) or "none given"
        pairs.append(("rate limited", f"{report.rate_limited.count} × 429 at concurrency "
                                      f"{report.rate_limited.concurrency}, Retry-After {after}; ramp stopped"))
    pairs += [("note", n) for n in _summary(report)] + [("error", e) for e in report.errors]
    pairs += [("warning", w) for w in report.all_warnings()]
    parts = [kv_html(pairs, badges=("verdict",)), "<h4>proxy</h4>",
             table_html(level_rows(report.levels), _columns(report, report.levels))]
    if report.direct_levels:
        parts += [f"<h4>upstream (direct): {esc(report.direct)}</h4>",
                  table_html(level_rows(report.direct_levels), _columns(report, report.direct_levels)),
                  "<h4>added by the proxy (its percentile minus the upstream's)</h4>",
                  table_html(_added_rows(report), _ADDED)]
    if plots and report.levels:
        parts += [f'<div class="hermes-load-plots">{plot(report, name).svg}</div>' for name in PLOTS]
    return box("load", report.verdict, *parts)


def register_displays() -> None:
    """Hand :class:`LoadReport` to IPython's formatters (HTML, and the text for ``repr``) when IPython runs."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(LoadReport, report_html)
    formatters["text/plain"].for_type(LoadReport, lambda report, p, cycle: p.text(report_text(report)))
