"""The load report's pictures as standalone SVG, written by hand (no plotting dependency).

Three pictures, each one ``<svg>`` document that renders the same inline in Jupyter, as an
``image/svg+xml`` notebook output on GitHub and as an image in a receipt's HTML:

* ``latency``: TTFT, ITL and E2E p50/p90/p99 (ms) against concurrency, the upstream's own p50 dashed when
  ``--direct`` ran;
* ``throughput``: requests/s and output tokens/s against concurrency (proxy solid, upstream dashed);
* ``errors``: the share of each level's requests that failed, stacked by class.

Why not matplotlib: with numpy, Pillow, fonttools, kiwisolver and contourpy it is 41 MB of wheels and ~170 MB
installed (measured from this machine's mirror), and 0.9 s to import pyplot here, for three line charts; this
module is pure, deterministic for the same report and costs well under a millisecond per picture (docs/load.md,
"Why no matplotlib"). Concurrency levels are spaced evenly (they usually grow geometrically: 1, 4, 16, 64).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hermes_nb.proxy.load.report import ERROR_CLASSES, LevelResult, LoadReport

__all__ = ["PLOTS", "SvgPlot", "plot"]

PLOTS = ("latency", "throughput", "errors")
_QUANTILES = (("p50", "#0969da"), ("p90", "#8250df"), ("p99", "#cf222e"))
_ERROR_COLOURS = {"rate_limited": "#9a6700", "client_error": "#bf8700", "server_error": "#cf222e",
                  "timeout": "#8250df", "transport": "#57606a", "stream_error": "#0969da"}
_FONT = "font:11px system-ui,-apple-system,Segoe UI,sans-serif"
_PANEL_W, _PANEL_H, _PAD_L, _PAD_R, _PAD_T, _PAD_B = 300, 210, 46, 10, 26, 58


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
class _Series:
    label: str
    colour: str
    values: Sequence[float | None]
    dashed: bool = False


def _nice_top(value: float) -> tuple[float, float]:
    """An axis top ≥ ``value`` and its tick step (1, 2 or 5 × 10^k, four or five ticks)."""
    if value <= 0:
        return 1.0, 0.25
    raw = value / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step * math.ceil(value / step), step


def _num(value: float) -> str:
    return f"{value:.0f}" if value >= 100 or value == int(value) else f"{value:.3g}"


def _panel(x0: float, title: str, levels: Sequence[int], series: Sequence[_Series], unit: str) -> list[str]:
    """One chart: axes, ticks, a line per series (missing values break the line), its legend below."""
    left, top = x0 + _PAD_L, _PAD_T
    width, height = _PANEL_W - _PAD_L - _PAD_R, _PANEL_H - _PAD_T - _PAD_B
    peak = max([v for s in series for v in s.values if v is not None] or [0.0])
    ymax, step = _nice_top(peak)
    n = len(levels)

    def x(i: int) -> float:
        return round(left + (width * (i + 0.5) / n), 1)

    def y(v: float) -> float:
        return round(top + height - height * v / ymax, 1)

    out = [f'<text x="{x0 + _PANEL_W / 2}" y="14" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>',
           f'<text x="{x0 + 4}" y="{top - 9}" fill="#57606a">{html.escape(unit)}</text>']
    tick = 0.0
    while tick <= ymax + 1e-9:
        out.append(f'<line x1="{left}" y1="{y(tick)}" x2="{left + width}" y2="{y(tick)}" stroke="#eaeef2"/>'
                   f'<text x="{left - 4}" y="{y(tick) + 4}" text-anchor="end" fill="#57606a">{_num(tick)}</text>')
        tick += step
    out.append(f'<line x1="{left}" y1="{top + height}" x2="{left + width}" y2="{top + height}" stroke="#57606a"/>')
    for i, level in enumerate(levels):
        out.append(f'<text x="{x(i)}" y="{top + height + 14}" text-anchor="middle">{level}</text>')
    out.append(f'<text x="{left + width / 2}" y="{top + height + 27}" text-anchor="middle" fill="#57606a">'
               "concurrency</text>")
    for s in series:
        dash = ' stroke-dasharray="4,3"' if s.dashed else ""
        runs: list[list[str]] = [[]]
        for i, v in enumerate(s.values):
            if v is None:
                runs.append([])
                continue
            runs[-1].append(f"{x(i)},{y(v)}")
            out.append(f'<circle cx="{x(i)}" cy="{y(v)}" r="2.5" fill="{s.colour}"><title>{html.escape(s.label)} at '
                       f"concurrency {levels[i]}: {_num(v)} {html.escape(unit)}</title></circle>")
        out += [f'<polyline points="{" ".join(r)}" fill="none" stroke="{s.colour}" stroke-width="1.5"{dash}/>'
                for r in runs if len(r) > 1]
    for k, s in enumerate(series):  # legend: three columns under the axis
        lx, ly = x0 + _PAD_L + (k % 3) * 82, top + height + 40 + (k // 3) * 13
        dash = ' stroke-dasharray="4,3"' if s.dashed else ""
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{s.colour}" stroke-width="2"'
                   f'{dash}/><text x="{lx + 20}" y="{ly}">{html.escape(s.label)}</text>')
    return out


def _svg(panels: int, body: list[str], title: str) -> str:
    width, height = _PANEL_W * panels, _PANEL_H
    return (f'<svg class="hermes-load-plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}" style="{_FONT};'
            f'max-width:100%;background:#fff"><title>{html.escape(title)}</title>'
            f'<rect width="{width}" height="{height}" fill="#fff"/>{"".join(body)}</svg>')


def _values(levels: Sequence[LevelResult], metric: str, quantile: str) -> list[float | None]:
    return [getattr(getattr(lv, metric), quantile) for lv in levels]


def _aligned(report: LoadReport, concurrency: Sequence[int]) -> list[LevelResult | None]:
    return [report.level(c, target="direct") for c in concurrency]


def _latency(report: LoadReport) -> SvgPlot:
    levels = [lv.concurrency for lv in report.levels]
    direct = _aligned(report, levels)
    body: list[str] = []
    for k, (metric, title) in enumerate((("ttft_ms", "TTFT"), ("itl_ms", "ITL"), ("e2e_ms", "E2E"))):
        series = [_Series(q, colour, _values(report.levels, metric, q)) for q, colour in _QUANTILES]
        if any(d is not None for d in direct):
            series.append(_Series("upstream p50", "#57606a",
                                  [getattr(d, metric).p50 if d else None for d in direct], dashed=True))
        body += _panel(k * _PANEL_W, f"{title} by concurrency", levels, series, "ms")
    alt = "TTFT, ITL and E2E p50/p90/p99 (ms) by concurrency: " + "; ".join(
        f"c={lv.concurrency} TTFT p50 {_opt(lv.ttft_ms.p50)} ms" for lv in report.levels)
    return SvgPlot("latency", _svg(3, body, "latency percentiles by concurrency"), alt)


def _opt(value: float | None) -> str:
    return "-" if value is None else _num(value)


def _throughput(report: LoadReport) -> SvgPlot:
    levels = [lv.concurrency for lv in report.levels]
    direct = _aligned(report, levels)
    body: list[str] = []
    for k, (field, title, unit) in enumerate((("request_throughput", "Requests per second", "req/s"),
                                              ("output_token_throughput", "Output tokens per second", "tok/s"))):
        series = [_Series("proxy", "#1a7f37", [getattr(lv, field) for lv in report.levels])]
        if any(d is not None for d in direct):
            series.append(_Series("upstream", "#57606a", [getattr(d, field) if d else None for d in direct],
                                  dashed=True))
        body += _panel(k * _PANEL_W, title, levels, series, unit)
    alt = "throughput by concurrency: " + "; ".join(
        f"c={lv.concurrency} {_num(lv.request_throughput)} req/s {_num(lv.output_token_throughput)} tok/s"
        for lv in report.levels)
    return SvgPlot("throughput", _svg(2, body, "throughput by concurrency"), alt)


def _errors(report: LoadReport) -> SvgPlot:
    levels = report.levels
    left, top = _PAD_L, _PAD_T
    width, height = 2 * _PANEL_W - _PAD_L - _PAD_R, _PANEL_H - _PAD_T - _PAD_B
    n = max(len(levels), 1)
    bar = min(48.0, width / n * 0.6)
    body = ['<text x="8" y="14" font-weight="bold">Failed requests by class (share of the requests sent)</text>']
    for pct in (0, 25, 50, 75, 100):
        yy = round(top + height - height * pct / 100, 1)
        body.append(f'<line x1="{left}" y1="{yy}" x2="{left + width}" y2="{yy}" stroke="#eaeef2"/>'
                    f'<text x="{left - 4}" y="{yy + 4}" text-anchor="end" fill="#57606a">{pct}%</text>')
    for i, lv in enumerate(levels):
        cx = left + width * (i + 0.5) / n
        base = top + height
        for name in ERROR_CLASSES:
            count = getattr(lv.errors, name)
            if not count or not lv.sent:
                continue
            h = round(height * count / lv.sent, 1)
            base -= h
            body.append(f'<rect x="{round(cx - bar / 2, 1)}" y="{round(base, 1)}" width="{round(bar, 1)}" '
                        f'height="{h}" fill="{_ERROR_COLOURS[name]}"><title>{name}: {count} of {lv.sent} at '
                        f"concurrency {lv.concurrency}</title></rect>")
        body.append(f'<text x="{round(cx, 1)}" y="{top + height + 14}" text-anchor="middle">{lv.concurrency}</text>')
        if not lv.errors.total:
            body.append(f'<text x="{round(cx, 1)}" y="{top + height - 4}" text-anchor="middle" fill="#1a7f37">'
                        "0%</text>")
    body.append(f'<line x1="{left}" y1="{top + height}" x2="{left + width}" y2="{top + height}" stroke="#57606a"/>'
                f'<text x="{left + width / 2}" y="{top + height + 27}" text-anchor="middle" fill="#57606a">'
                "concurrency</text>")
    for k, name in enumerate(ERROR_CLASSES):
        lx, ly = left + (k % 3) * 170, top + height + 40 + (k // 3) * 13
        body.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{_ERROR_COLOURS[name]}"/>'
                    f'<text x="{lx + 14}" y="{ly}">{name.replace("_", " ")}</text>')
    alt = "failed requests by class: " + "; ".join(
        f"c={lv.concurrency} {lv.errors.total}/{lv.sent}" for lv in levels)
    return SvgPlot("errors", _svg(2, body, "failed requests by class and concurrency"), alt)


_BUILDERS = {"latency": _latency, "throughput": _throughput, "errors": _errors}


def plot(report: LoadReport, name: str) -> SvgPlot:
    """The picture ``name`` (one of :data:`PLOTS`) of ``report``."""
    try:
        return _BUILDERS[name](report)
    except KeyError:
        raise ValueError(f"unknown plot {name!r}; choose one of {', '.join(PLOTS)}") from None
