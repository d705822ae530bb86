"""How a :class:`~hermes_nb.load.report.LoadReport` shows itself: the same tables rendered as the CLI's text and as
HTML (:mod:`hermes_nb.views.htmlkit`, with the pictures). The record never imports this module:
:func:`register_displays` hands it to IPython. A percentile resting on too few samples is marked ``*``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.load.metrics import LevelResult, Percentiles
from hermes_nb.load.plots import PLOTS, plot
from hermes_nb.load.report import LoadReport
from hermes_nb.views.htmlkit import box, esc, kv_html, table_html

_SHAPES = Redactor()
_COLUMNS = ("concurrency", "sent", "ok", "errors", "TTFT ms p50/p95/p99", "ITL ms p50/p95/p99",
            "E2E ms p50/p95/p99", "gap ms p50/p99/max", "stalls", "req/s", "tok/s", "CPU", "lag p99", "machine")
_ADDED = ["concurrency", "TTFT added ms p50/p95/p99", "E2E added ms p50/p95/p99", "upstream E2E ms p50/p99"]
_THIN = "* rests on fewer samples than it needs (p90: 10, p95: 20, p99: 100): read it as a bound, not a percentile"
Table = tuple[str, list[dict[str, Any]], list[str]]


def _triple(p: Percentiles, names: Sequence[str] = ("p50", "p95", "p99")) -> str:
    return "/".join("-" if getattr(p, q) is None else f"{getattr(p, q):.1f}" + ("*" if q in p.thin else "")
                    for q in names)


def _rows(levels: Sequence[LevelResult]) -> list[dict[str, Any]]:
    rows = []
    for lv in levels:
        o, errors = lv.overhead, [f"{n} {name}" for name, n in lv.errors.by_class().items() if n]
        rows.append({
            "concurrency": lv.concurrency if lv.rate is None else f"{lv.concurrency} @ {lv.rate:g}/s",
            "sent": lv.sent, "ok": lv.succeeded,
            "errors": ", ".join(errors + ([f"{lv.cancelled} cancelled"] if lv.cancelled else [])) or "0",
            "TTFT ms p50/p95/p99": _triple(lv.ttft_ms), "TTFAT ms p50/p95/p99": _triple(lv.ttfat_ms),
            "ITL ms p50/p95/p99": _triple(lv.itl_ms), "E2E ms p50/p95/p99": _triple(lv.e2e_ms),
            "last byte ms p50/p99": _triple(lv.last_byte_ms, ("p50", "p99")),
            "gap ms p50/p99/max": _triple(lv.gaps.gap_ms, ("p50", "p99", "max")),
            "stalls": f"{lv.gaps.stalled}/{lv.gaps.streams}", "req/s": f"{lv.request_throughput:g}",
            "tok/s": f"{lv.output_token_throughput:g}", "CPU": f"{o.cpu_share:.0%}",
            "lag p99": "-" if o.loop_lag_ms.p99 is None else f"{o.loop_lag_ms.p99:.1f} ms",
            "machine": "-" if o.machine_busy is None else f"{o.machine_busy:.0%} busy, load {o.load_avg}",
            "SLO met": f"{lv.slo.share:.0%}{' ✓' if lv.slo.meets else ''}, {lv.slo.goodput:g}/s" if lv.slo else ""})
    return rows


def _columns(report: LoadReport, levels: Sequence[LevelResult]) -> list[str]:
    """TTFAT and the last byte only where they differ from TTFT and E2E."""
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


def _tables(report: LoadReport) -> list[Table]:
    """The proxy's levels; with ``direct``, the upstream's and what the proxy added."""
    tables: list[Table] = [("proxy", _rows(report.levels), _columns(report, report.levels))]
    if report.direct_levels:
        added = [{"concurrency": a.concurrency,
                  "TTFT added ms p50/p95/p99": _signed(a.ttft_ms, a.ttft_p50_ci, a.ttft_p50_by_repeat),
                  "E2E added ms p50/p95/p99": _signed(a.e2e_ms, a.e2e_p50_ci, a.e2e_p50_by_repeat),
                  "upstream E2E ms p50/p99": _triple(d.e2e_ms, ("p50", "p99")) if (
                      d := report.level(a.concurrency, target="direct")) else "-"} for a in report.added]
        tables += [(f"upstream {report.direct} (direct)", _rows(report.direct_levels),
                    _columns(report, report.direct_levels)),
                   ("added by the proxy (its percentile minus the upstream's, ms)", added, _ADDED)]
    return tables


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


def _remarks(report: LoadReport) -> list[tuple[str, str]]:
    """Notes (saturation, SLO, first errors, thin percentiles), errors and warnings."""
    notes = []
    if report.saturated_at is not None:
        notes.append(f"throughput stopped growing at concurrency {report.saturated_at}: saturated")
    if report.settings.get("slo"):
        targets = ", ".join(f"{k}={v:g}" for k, v in report.settings["slo"].items())
        notes.append(f"SLO {targets}: highest concurrency meeting it {report.slo_max_concurrency or 'none'}")
    if report.first_error_concurrency is not None:
        notes.append(f"first errors at concurrency {report.first_error_concurrency}")
    if any(p.thin for lv in report.levels + report.direct_levels for p in (lv.ttft_ms, lv.itl_ms, lv.e2e_ms,
                                                                           lv.gaps.gap_ms)):
        notes.append(_THIN)
    return ([("note", n) for n in notes] + [("error", e) for e in report.errors]
            + [("warning", w) for w in report.all_warnings()])


def report_text(report: LoadReport) -> str:
    """The report as lines of text (the CLI's human output)."""
    lines = [f"load {report.endpoint} ({_target(report)}) · model {report.model} · {report.verdict} "
             f"({report.reason}) in {report.duration_s:.3f} s", _plan(report)]
    for k, (title, rows, columns) in enumerate(_tables(report)):
        lines += ([f"{title}:"] if k else []) + _text_table(rows, columns)
    lines += [text if kind == "note" else f"{kind}: {text}" for kind, text in _remarks(report)]
    return _SHAPES.text("\n".join(lines))


def report_html(report: LoadReport, *, plots: bool = True) -> str:
    """The report as one HTML block: summary, notes, errors and warnings, the tables, the pictures."""
    pairs: list[tuple[str, Any]] = [
        ("verdict", report.verdict), ("reason", report.reason), ("endpoint", report.endpoint),
        ("target", _target(report)), ("direct (upstream)", report.direct), ("model", report.model),
        ("load", _plan(report)), ("measured in", f"{report.duration_s:.3f} s"),
        ("generator", f"hermes-nb {report.generator.get('hermes_nb')}, {report.generator.get('client')}")]
    if report.rate_limited is not None:
        after = ", ".join(f"{v:g} s" for v in report.rate_limited.retry_after_s) or "none given"
        pairs.append(("rate limited", f"{report.rate_limited.count} × 429 at concurrency "
                                      f"{report.rate_limited.concurrency}, Retry-After {after}; ramp stopped"))
    parts = [kv_html(pairs + _remarks(report), badges=("verdict",))]
    for title, rows, columns in _tables(report):
        parts += [f"<h4>{esc(title)}</h4>", table_html(rows, columns)]
    if plots and report.levels:
        parts += [f'<div class="hermes-load-plots">{plot(report, name).svg}</div>' for name in PLOTS]
    return box("load", report.verdict, *parts)


def register_displays() -> None:
    """Hand :class:`LoadReport` to IPython's formatters (HTML, and the text for ``repr``) when IPython runs."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if shell is not None:
        formatters = shell.display_formatter.formatters
        formatters["text/html"].for_type(LoadReport, report_html)
        formatters["text/plain"].for_type(LoadReport, lambda report, p, cycle: p.text(report_text(report)))
