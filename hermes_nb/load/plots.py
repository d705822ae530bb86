"""The load report's pictures: standalone SVG written by one small helper (:func:`chart`), no plotting dependency.

Each picture is one ``<svg>`` document that renders the same inline in Jupyter, as an ``image/svg+xml`` output on
GitHub and as an image in a receipt's HTML. Concurrency axes are logarithmic (levels usually grow geometrically);
a percentile resting on too few samples is drawn hollow. Why not matplotlib: 41 MB of wheels and 0.9 s to import
pyplot here, for line charts (docs/load.md, "Why no matplotlib"); this is deterministic for one report and costs
well under a millisecond a picture.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hermes_nb.load.metrics import ERROR_CLASSES, LevelResult, Percentiles, e2e
from hermes_nb.load.report import LoadReport

__all__ = ["PLOTS", "SvgPlot", "Series", "Panel", "chart", "plot"]

PLOTS = ("latency", "gaps", "throughput", "errors", "distribution")
_PALETTE = ("#0969da", "#8250df", "#cf222e", "#1a7f37", "#9a6700", "#57606a", "#bf3989", "#0a7ea4")
_QUANTILES = (("p50", "#0969da"), ("p95", "#8250df"), ("p99", "#cf222e"))
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
    #: (x, y) points; a None y breaks the line
    points: Sequence[tuple[float, float | None]]
    dashed: bool = False
    #: indexes of points drawn hollow (resting on too few samples)
    hollow: frozenset[int] = frozenset()
    #: False: points only (a scatter)
    line: bool = True


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    series: Sequence[Series]
    x_label: str = "concurrency"
    #: a logarithmic axis with these ticks (the levels); empty: a linear axis from 0
    x_ticks: Sequence[float] = ()


def _nice(value: float) -> tuple[float, float]:
    """An axis top ≥ ``value`` and its tick step (1, 2 or 5 × 10^k, four or five ticks)."""
    if value <= 0:
        return 1.0, 0.25
    power = 10 ** math.floor(math.log10(value / 4))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= value / 4)
    return step * math.ceil(value / step), step


def _num(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


def _panel(x0: float, panel: Panel) -> list[str]:
    left, top, width, height = x0 + _L, _T, _W - _L - _R, _H - _T - _B
    ys = [y for s in panel.series for _, y in s.points if y is not None]
    xs = [x for s in panel.series for x, _ in s.points]
    ymax, ystep = _nice(max(ys, default=0.0))
    if panel.x_ticks:
        lo, hi = math.log2(min(panel.x_ticks)), math.log2(max(panel.x_ticks))
        def fx(v: float) -> float:
            return left + width * (0.5 if hi == lo else 0.05 + 0.9 * (math.log2(v) - lo) / (hi - lo))
        ticks = [(v, _num(v)) for v in panel.x_ticks]
    else:
        xmax, xstep = _nice(max(xs, default=0.0))
        def fx(v: float) -> float:
            return left + width * v / xmax
        ticks = [(k * xstep, _num(k * xstep)) for k in range(int(round(xmax / xstep)) + 1)]

    def fy(v: float) -> float:
        return round(top + height - height * v / ymax, 1)

    out = [f'<text x="{x0 + _W / 2}" y="14" text-anchor="middle" font-weight="bold">{html.escape(panel.title)}</text>',
           f'<text x="{x0 + 4}" y="{top - 9}" fill="#57606a">{html.escape(panel.unit)}</text>']
    for k in range(int(round(ymax / ystep)) + 1):
        gy = fy(k * ystep)
        out.append(f'<line x1="{left}" y1="{gy}" x2="{left + width}" y2="{gy}" stroke="#eaeef2"/><text x="{left - 4}" '
                   f'y="{gy + 4}" text-anchor="end" fill="#57606a">{_num(k * ystep)}</text>')
    for v, label in ticks:
        out.append(f'<text x="{round(fx(v), 1)}" y="{top + height + 14}" text-anchor="middle">{label}</text>')
    out.append(f'<line x1="{left}" y1="{top + height}" x2="{left + width}" y2="{top + height}" stroke="#57606a"/>'
               f'<text x="{left + width / 2}" y="{top + height + 27}" text-anchor="middle" fill="#57606a">'
               f"{html.escape(panel.x_label)}</text>")
    for s in panel.series:
        dash = ' stroke-dasharray="4,3"' if s.dashed else ""
        runs: list[list[str]] = [[]]
        for i, (x, y) in enumerate(s.points):
            if y is None:
                runs.append([])
                continue
            px, py = round(fx(x), 1), fy(y)
            runs[-1].append(f"{px},{py}")
            fill = "#fff" if i in s.hollow else s.colour
            out.append(f'<circle cx="{px}" cy="{py}" r="{2.5 if s.line else 1.8}" fill="{fill}" stroke="{s.colour}">'
                       f"<title>{html.escape(s.label)} at {_num(x)}: {_num(y)} {html.escape(panel.unit)}"
                       f"{' (too few samples)' if i in s.hollow else ''}</title></circle>")
        if s.line:
            out += [f'<polyline points="{" ".join(r)}" fill="none" stroke="{s.colour}" stroke-width="1.5"{dash}/>'
                    for r in runs if len(r) > 1]
    for k, s in enumerate(panel.series[:9]):  # the legend: three columns under the axis
        lx, ly = left + (k % 3) * 82, top + height + 40 + (k // 3) * 13
        dash = ' stroke-dasharray="4,3"' if s.dashed else ""
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{s.colour}" stroke-width="2"'
                   f'{dash}/><text x="{lx + 20}" y="{ly}">{html.escape(s.label)}</text>')
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
    return [Series(f"upstream {q}" if upstream else q, "#57606a" if upstream else colour,
                   [(lv.concurrency, getattr(read(lv), q)) for lv in levels], dashed=upstream,
                   hollow=frozenset(i for i, lv in enumerate(levels) if q in read(lv).thin))
            for q, colour in qs]


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
                     f"c={lv.concurrency} TTFT p50 {_opt(lv.ttft_ms.p50)} ms" for lv in report.levels))


def _opt(value: float | None) -> str:
    return "-" if value is None else _num(value)


def _gaps(report: LoadReport, levels: list[int]) -> SvgPlot:
    gaps = Panel("Gaps between tokens", "ms", _quantiles(report.levels, lambda lv: lv.gaps.gap_ms,
                                                         qs=(("p50", "#0969da"), ("p99", "#cf222e"),
                                                             ("max", "#9a6700"))), x_ticks=levels)
    share = Panel(f"Streams with a stall (gap > {_num(report.settings.get('stall_s', 0.5) * 1000)} ms)", "%",
                  [Series("stalled", "#cf222e", [(lv.concurrency, lv.gaps.stall_share * 100) for lv in report.levels])],
                  x_ticks=levels)
    return chart("gaps", "gaps between tokens by concurrency", [gaps, share], "gaps between tokens: " + "; ".join(
        f"c={lv.concurrency} largest {_opt(lv.gaps.gap_ms.max)} ms, {lv.gaps.stalled} of {lv.gaps.streams} streams "
        "stalled" for lv in report.levels))


def _throughput(report: LoadReport, levels: list[int]) -> SvgPlot:
    def rates(source: list[LevelResult], label: str, colour: str, dashed: bool = False) -> list[Series]:
        return [Series(f"{label} req/s", colour, [(lv.concurrency, lv.request_throughput) for lv in source], dashed),
                Series(f"{label} tok/s ÷ 10", "#9a6700" if not dashed else "#57606a",
                       [(lv.concurrency, lv.output_token_throughput / 10) for lv in source], dashed)]

    per_level = rates(report.levels, "proxy", "#1a7f37") + (rates(report.direct_levels, "upstream", "#57606a", True)
                                                           if report.direct_levels else [])
    curve = [Series(f"{name} p50", colour, [(lv.request_throughput, getattr(lv, field).p50) for lv in report.levels])
             for name, field, colour in (("E2E", "e2e_ms", "#0969da"), ("TTFT", "ttft_ms", "#8250df"))]
    return chart("throughput", "throughput by concurrency, and latency against it", [
        Panel("Throughput by concurrency", "per second", per_level, x_ticks=levels),
        Panel("Latency vs achieved throughput", "ms", curve, x_label="requests per second")],
        "throughput: " + "; ".join(f"c={lv.concurrency} {_num(lv.request_throughput)} req/s, E2E p50 "
                                   f"{_opt(lv.e2e_ms.p50)} ms" for lv in report.levels))


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
                      if s.target == "proxy" and s.concurrency == c and s.error is None and (v := e2e(s)) is not None)
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


def plot(report: LoadReport, name: str) -> SvgPlot:
    """The picture ``name`` (one of :data:`PLOTS`) of ``report``."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown plot {name!r}; choose one of {', '.join(PLOTS)}")
    return _BUILDERS[name](report, [lv.concurrency for lv in report.levels])
