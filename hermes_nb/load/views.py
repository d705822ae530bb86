"""How a :class:`~hermes_nb.load.report.LoadReport` shows itself: the same tables as text and HTML, and five SVG
pictures from one helper (:func:`chart`; docs/load.md, "Why no matplotlib"). A thin percentile is marked ``*``, drawn
hollow. The record never imports this module: :func:`register_displays` hands it to IPython."""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.load.report import ERROR_CLASSES, LevelResult, LoadReport, Percentiles, Sample, percentile
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
                  "upstream E2E ms p50/p99": next((_triple(d.e2e_ms, ("p50", "p99")) for d in report.direct_levels
                                                   if d.concurrency == a.concurrency), "-")} for a in report.added]
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
            + [("warning", w) for w in report.warnings]
            + [("warning", lv.overhead.warning) for lv in report.levels + report.direct_levels if lv.overhead.warning])


def level_line(level: LevelResult) -> str:
    """One line per level (the progress the CLI prints)."""
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} ms"

    errors = ", ".join(f"{n} {name}" for name, n in level.errors.by_class().items() if n)
    tail = (f"; errors: {errors}" if errors else "") + (f"; stopped: {level.stopped_by}" if level.stopped_by else "")
    return (f"{level.target} concurrency {level.concurrency}: {level.succeeded}/{level.sent} ok, TTFT p50 "
            f"{ms(level.ttft_ms.p50)}, ITL p50 {ms(level.itl_ms.p50)}, E2E p50 {ms(level.e2e_ms.p50)}, largest gap "
            f"{ms(level.gaps.gap_ms.max)}, {level.request_throughput:g} req/s{tail}")


def progress_line(tag: str, samples: Sequence[Sample], in_flight: int, spent: float, budget: int | None,
                  budget_s: float | None) -> str:
    """Inside a level, every second: done / in flight / E2E p50 so far / ETA."""
    so_far = sorted(v for s in samples if s.error is None and (v := s.e2e()) is not None)
    done = len(samples)
    eta = max((budget_s or 0.0) - spent, 0.0) if budget is None else (budget - done) * spent / done if done else None
    return (f"{tag}: {done}/{'…' if budget is None else budget} done, {in_flight} in flight, E2E p50 "
            f"{f'{percentile(so_far, 50) * 1000:.1f} ms' if so_far else '-'} so far, ETA "
            + (f"{eta:.0f} s" if eta is not None else "-"))


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


# --------------------------------------------------------------------------- the pictures

_PALETTE = ("#0969da", "#8250df", "#cf222e", "#1a7f37", "#9a6700", "#57606a", "#bf3989", "#0a7ea4")
BLUE, VIOLET, RED, GREEN, AMBER, GREY = _PALETTE[:6]
_QUANTILES = (("p50", BLUE), ("p95", VIOLET), ("p99", RED))
_FONT = "font:11px system-ui,-apple-system,Segoe UI,sans-serif"
_W, _H, _L, _R, _T, _B = 300, 220, 46, 12, 26, 66


@dataclass(frozen=True)
class SvgPlot:
    """One picture: ``_repr_svg_`` for Jupyter (an ``image/svg+xml`` output), ``repr`` a one-line description."""

    name: str
    svg: str
    alt: str

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return self.alt


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    points: Sequence[tuple[float, float | None]]  # a None y breaks the line
    dashed: bool = False
    hollow: frozenset[int] = frozenset()  # the points resting on too few samples
    line: bool = True  # False: a scatter


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    series: Sequence[Series]
    x_label: str = "concurrency"
    x_ticks: Sequence[float] = ()  # a logarithmic axis at these (the levels); none: linear from 0


def _nice(value: float) -> tuple[float, float]:
    """An axis top ≥ ``value`` and its tick step (1, 2 or 5 × 10^k, four or five ticks)."""
    if value <= 0:
        return 1.0, 0.25
    power = 10 ** math.floor(math.log10(value / 4))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= value / 4)
    return step * math.ceil(value / step), step


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


def _text(x: float, y: float, text: str, extra: str = "") -> str:
    return f'<text x="{round(x, 1)}" y="{round(y, 1)}"{extra}>{html.escape(text)}</text>'


def _panel(x0: float, panel: Panel) -> list[str]:
    left, top, width, height = x0 + _L, _T, _W - _L - _R, _H - _T - _B
    bottom = top + height
    ymax, ystep = _nice(max((y for s in panel.series for _, y in s.points if y is not None), default=0.0))
    if panel.x_ticks:
        lo, hi = math.log2(min(panel.x_ticks)), math.log2(max(panel.x_ticks))
        ticks = list(panel.x_ticks)

        def fx(v: float) -> float:
            return left + width * (0.5 if hi == lo else 0.05 + 0.9 * (math.log2(v) - lo) / (hi - lo))
    else:
        xmax, xstep = _nice(max((x for s in panel.series for x, _ in s.points), default=0.0))
        ticks = [k * xstep for k in range(int(round(xmax / xstep)) + 1)]

        def fx(v: float) -> float:
            return left + width * v / xmax

    def fy(v: float) -> float:
        return round(bottom - height * v / ymax, 1)

    middle, grey = ' text-anchor="middle"', ' fill="#57606a"'
    out = [_text(x0 + _W / 2, 14, panel.title, middle + ' font-weight="bold"'),
           _text(x0 + 4, top - 9, panel.unit, grey)]
    for k in range(int(round(ymax / ystep)) + 1):
        out.append(f'<line x1="{left}" y1="{fy(k * ystep)}" x2="{left + width}" y2="{fy(k * ystep)}" stroke="#eaeef2"/>'
                   + _text(left - 4, fy(k * ystep) + 4, _num(k * ystep), ' text-anchor="end"' + grey))
    out += [_text(fx(v), bottom + 14, _num(v), middle) for v in ticks]
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}" stroke="#57606a"/>'
               + _text(left + width / 2, bottom + 27, panel.x_label, middle + grey))
    for k, s in enumerate(panel.series):
        dash = ' stroke-dasharray="4,3"' if s.dashed else ""
        runs: list[list[str]] = [[]]
        for i, (x, y) in enumerate(s.points):
            if y is None:
                runs.append([])
                continue
            px, py = round(fx(x), 1), fy(y)
            runs[-1].append(f"{px},{py}")
            out.append(f'<circle cx="{px}" cy="{py}" r="{2.5 if s.line else 1.8}" fill="'
                       f'{"#fff" if i in s.hollow else s.colour}" stroke="{s.colour}"><title>{html.escape(s.label)} '
                       f"at {_num(x)}: {_num(y)} {html.escape(panel.unit)}"
                       f"{' (too few samples)' if i in s.hollow else ''}</title></circle>")
        if s.line:
            out += [f'<polyline points="{" ".join(r)}" fill="none" stroke="{s.colour}" stroke-width="1.5"{dash}/>'
                    for r in runs if len(r) > 1]
        if k < 9:  # the legend: three columns under the axis
            lx, ly = left + (k % 3) * 82, bottom + 40 + (k // 3) * 13
            out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{s.colour}" '
                       f'stroke-width="2"{dash}/>' + _text(lx + 20, ly, s.label))
    return out


def chart(name: str, title: str, panels: Sequence[Panel], alt: str) -> SvgPlot:
    """Panels side by side in one standalone SVG document."""
    width, body = _W * len(panels), [line for k, p in enumerate(panels) for line in _panel(k * _W, p)]
    svg = (f'<svg class="hermes-load-plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_H}" '
           f'viewBox="0 0 {width} {_H}" role="img" aria-label="{html.escape(title)}" style="{_FONT};max-width:100%;'
           f'background:#fff"><title>{html.escape(title)}</title><rect width="{width}" height="{_H}" fill="#fff"/>'
           f'{"".join(body)}</svg>')
    return SvgPlot(name, svg, alt)


def _quantiles(levels: Sequence[LevelResult], read: Callable[[LevelResult], Percentiles], *, upstream: bool = False,
               qs: Sequence[tuple[str, str]] = _QUANTILES) -> list[Series]:
    return [Series(f"upstream {q}" if upstream else q, GREY if upstream else colour,
                   [(lv.concurrency, getattr(read(lv), q)) for lv in levels], dashed=upstream,
                   hollow=frozenset(i for i, lv in enumerate(levels) if q in read(lv).thin)) for q, colour in qs]


def _latency(report: LoadReport, levels: list[int]) -> SvgPlot:
    def panel(title: str, read: Callable[[LevelResult], Percentiles]) -> Panel:
        upstream = _quantiles(report.direct_levels, read, upstream=True, qs=_QUANTILES[::2])
        return Panel(title, "ms", _quantiles(report.levels, read) + (upstream if report.direct_levels else []),
                     x_ticks=levels)

    panels = [panel("TTFT by concurrency", lambda lv: lv.ttft_ms), panel("ITL by concurrency", lambda lv: lv.itl_ms),
              panel("E2E by concurrency", lambda lv: lv.e2e_ms)]
    if any(lv.ttfat_ms.p50 != lv.ttft_ms.p50 for lv in report.levels):
        panels.insert(1, panel("first answer token (TTFAT)", lambda lv: lv.ttfat_ms))
    return chart("latency", "latency percentiles by concurrency", panels,
                 "TTFT, ITL and E2E p50/p95/p99 (ms) by concurrency: " + "; ".join(
                     f"c={lv.concurrency} TTFT p50 {_num(lv.ttft_ms.p50)} ms" for lv in report.levels))


def _gaps(report: LoadReport, levels: list[int]) -> SvgPlot:
    gaps = Panel("Gaps between tokens", "ms", _quantiles(report.levels, lambda lv: lv.gaps.gap_ms,
                                                         qs=(("p50", BLUE), ("p99", RED), ("max", AMBER))),
                 x_ticks=levels)
    share = Panel(f"Streams with a stall (gap > {_num(report.settings.get('stall_s', 0.5) * 1000)} ms)", "%",
                  [Series("stalled", RED, [(lv.concurrency, lv.gaps.stall_share * 100) for lv in report.levels])],
                  x_ticks=levels)
    return chart("gaps", "gaps between tokens by concurrency", [gaps, share], "gaps between tokens: " + "; ".join(
        f"c={lv.concurrency} largest {_num(lv.gaps.gap_ms.max)} ms, {lv.gaps.stalled} of {lv.gaps.streams} streams "
        "stalled" for lv in report.levels))


def _throughput(report: LoadReport, levels: list[int]) -> SvgPlot:
    def rates(source: list[LevelResult], label: str, colour: str, dashed: bool = False) -> list[Series]:
        return [Series(f"{label} req/s", colour, [(lv.concurrency, lv.request_throughput) for lv in source], dashed),
                Series(f"{label} tok/s ÷ 10", GREY if dashed else AMBER,
                       [(lv.concurrency, lv.output_token_throughput / 10) for lv in source], dashed)]

    per_level = rates(report.levels, "proxy", GREEN) + (rates(report.direct_levels, "upstream", GREY, True)
                                                       if report.direct_levels else [])
    curve = [Series(f"{name} p50", colour, [(lv.request_throughput, getattr(lv, field).p50) for lv in report.levels])
             for name, field, colour in (("E2E", "e2e_ms", BLUE), ("TTFT", "ttft_ms", VIOLET))]
    return chart("throughput", "throughput by concurrency, and latency against it", [
        Panel("Throughput by concurrency", "per second", per_level, x_ticks=levels),
        Panel("Latency vs achieved throughput", "ms", curve, x_label="requests per second")],
        "throughput: " + "; ".join(f"c={lv.concurrency} {_num(lv.request_throughput)} req/s, E2E p50 "
                                   f"{_num(lv.e2e_ms.p50)} ms" for lv in report.levels))


def _errors(report: LoadReport, levels: list[int]) -> SvgPlot:
    series = [Series(name.replace("_", " "), _PALETTE[k], [(lv.concurrency, 100 * getattr(lv.errors, name) / lv.sent
                                                            if lv.sent else None) for lv in report.levels])
              for k, name in enumerate(ERROR_CLASSES)]
    return chart("errors", "failed requests by class and concurrency",
                 [Panel("Failed requests by class (share of those sent)", "%", series, x_ticks=levels)],
                 "failed requests by class: " + "; ".join(
                     f"c={lv.concurrency} {lv.errors.total}/{lv.sent}" for lv in report.levels))


def _distribution(report: LoadReport, levels: list[int]) -> SvgPlot:
    cdf, timeline = [], []
    for k, c in enumerate(levels):
        mine = sorted((s.start_s, v * 1000) for s in report.samples
                      if s.target == "proxy" and s.concurrency == c and s.error is None and (v := s.e2e()) is not None)
        values, step = sorted(v for _, v in mine), max(1, len(mine) // 200)
        colour = _PALETTE[k % len(_PALETTE)]
        cdf.append(Series(f"c={c}", colour, [(v, 100 * (i + 1) / len(values)) for i, v in enumerate(values)
                                             if i % step == 0 or i == len(values) - 1]))
        timeline.append(Series(f"c={c}", colour, mine[::step], line=False))
    return chart("distribution", "E2E distribution and per-request time series", [
        Panel("E2E CDF per level (from the raw samples)", "% of requests", cdf, x_label="E2E ms"),
        Panel("E2E of each request over the run", "ms", timeline, x_label="sent at, s")],
        f"E2E CDF and time series of {len(report.samples)} requests")


_BUILDERS = {"latency": _latency, "gaps": _gaps, "throughput": _throughput, "errors": _errors,
             "distribution": _distribution}
PLOTS = tuple(_BUILDERS)


def plot(report: LoadReport, name: str) -> SvgPlot:
    """The picture ``name`` (one of :data:`PLOTS`) of ``report``."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown plot {name!r}; choose one of {', '.join(PLOTS)}")
    return _BUILDERS[name](report, [lv.concurrency for lv in report.levels])
