"""The one HTML toolkit (views/htmlkit.py): theme colours and their contrast, one colour map, one table style,
sanitised Markdown, the standalone page stylesheet, and timeline labels that never overlap.

The browser test measures the contrast of what JupyterLab really draws (tests/product/test_browser.py); here the
colour arithmetic is checked against JupyterLab's own theme values, and the rules that keep it so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hermes_nb.core.records import StreamTimeline, Usage
from hermes_nb.views import htmlkit
from hermes_nb.views.htmlkit import (
    CHAR_W,
    TONES,
    VERDICT_COLOURS,
    badge,
    kv_html,
    markdown_html,
    page_css,
    place_labels,
    table_html,
    timeline_svg,
)

PACKAGE = Path(htmlkit.__file__).resolve().parent.parent

# JupyterLab 4's theme values (theme-light-extension / theme-dark-extension index.css), and the backgrounds
# text sits on there: the notebook, the rendered table rows, the cell editor
LAB = {
    "light": ({"good": "#388e3c", "bad": "#d32f2f", "warn": "#f57c00", "accent": "#1976d2", "info": "#0097a7",
               "muted": "rgba(0,0,0,.54)"}, "#000000", ("#ffffff", "#f5f5f5", "#eeeeee")),
    "dark": ({"good": "#4caf50", "bad": "#f44336", "warn": "#ff9800", "accent": "#2196f3", "info": "#00bcd4",
              "muted": "rgba(255,255,255,.7)"}, "#ffffff", ("#111111", "#212121")),
}


def parse_colour(text: str) -> tuple[float, float, float, float]:
    """``#rgb``, ``#rrggbb``, ``rgb()``/``rgba()`` → (r, g, b, alpha) with channels 0-255."""
    value = text.strip().lower()
    if value.startswith("#"):
        digits = value[1:] if len(value) == 7 else "".join(c * 2 for c in value[1:])
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16), 1.0
    parts = [p.strip() for p in value[value.index("(") + 1:value.rindex(")")].replace("/", ",").split(",")]
    r, g, b = (float(p) for p in parts[:3])
    return r, g, b, float(parts[3]) if len(parts) > 3 else 1.0


def _luminance(rgb: tuple[float, ...]) -> float:
    r, g, b = ((c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast of ``fg`` over the opaque ``bg`` (a translucent ``fg`` composited over ``bg`` first)."""
    r, g, b, a = parse_colour(fg)
    br, bgg, bb, _ = parse_colour(bg)
    over = (r * a + br * (1 - a), g * a + bgg * (1 - a), b * a + bb * (1 - a))
    hi, lo = sorted((_luminance(over), _luminance((br, bgg, bb))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _mix(tone: str, font: str, share: float, bg: str) -> str:
    """CSS ``color-mix(in srgb, tone share, font)`` of an opaque result, tone composited over ``bg`` first."""
    r, g, b, a = parse_colour(tone)
    br, bgg, bb, _ = parse_colour(bg)
    tr, tg, tb = (r * a + br * (1 - a), g * a + bgg * (1 - a), b * a + bb * (1 - a))
    fr, fg, fb, _ = parse_colour(font)
    mix = [round(x * share + y * (1 - share)) for x, y in zip((tr, tg, tb), (fr, fg, fb), strict=True)]
    return "#" + "".join(f"{v:02x}" for v in mix)


@pytest.mark.parametrize("theme", sorted(LAB))
@pytest.mark.parametrize("tone", sorted(TONES))
def test_every_tone_reads_at_4_5_to_1_on_every_background_of_both_themes(theme: str, tone: str) -> None:
    values, font, backgrounds = LAB[theme]
    share = htmlkit._TONE_SHARE / 100
    for bg in backgrounds:
        assert contrast_ratio(_mix(values[tone], font, share, bg), bg) >= 4.5, (theme, tone, bg)


def test_the_standalone_pages_define_the_same_theme_values_as_jupyterlab() -> None:
    css = page_css()
    for theme, block in (("light", css.split("@media")[0]), ("dark", css.split("@media")[1])):
        values, font, backgrounds = LAB[theme]
        short = {"#000000": "#000", "#ffffff": "#fff", "#111111": "#111"}
        assert f"--jp-content-font-color0:{short[font]}" in block
        assert f"--jp-layout-color0:{short[backgrounds[0]]}" in block
        for tone, var in ((t, TONES[t][0]) for t in TONES if t != "muted"):
            assert f"{var}:{values[tone]}" in block, (theme, tone)
    assert "prefers-color-scheme: dark" in css and "color-scheme:light dark" in css


def test_contrast_ratio_is_wcags() -> None:
    assert contrast_ratio("#000", "#fff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("rgba(0,0,0,.54)", "#ffffff") == pytest.approx(4.6, abs=0.05)  # composited first
    # the old answer box in the dark theme, white text on its fixed light background
    assert contrast_ratio("#ffffff", "#f6f8fa") < 1.1


#: self-contained images (``image/svg+xml`` with their own white background): no page variable reaches inside
#: an image, so they carry their colours themselves
IMAGES = {"load/views.py"}


def test_one_colour_map_no_fixed_colour_anywhere_else_in_the_package() -> None:
    """Every colour of the HTML comes from the toolkit (theme variables with fallbacks): no hex colour outside it."""
    hexes = re.compile(r"(?<![\w&])#[0-9a-fA-F]{6}\b|[:\"' ]#[0-9a-fA-F]{3}\b")
    found = {str(p.relative_to(PACKAGE)): hexes.findall(p.read_text(encoding="utf-8"))
             for p in PACKAGE.rglob("*.py") if p.name != "htmlkit.py" and str(p.relative_to(PACKAGE)) not in IMAGES}
    assert {k: v for k, v in found.items() if v} == {}
    for colour in VERDICT_COLOURS.values():
        assert colour.startswith("color-mix(in srgb,var(--jp-") and "var(--jp-content-font-color0,#000)" in colour


def test_one_table_style_headers_wrap_at_word_boundaries_values_anywhere() -> None:
    kv = kv_html([("time to first delta", "x" * 200)])
    rows = table_html([{"error type": "a"}], ("error type",))
    for html in (kv, rows):
        assert 'class="hermes-nb-box" style="max-width:100%;overflow-x:auto"' in html  # scrolls in its box
        th = re.search(r'<th style="([^"]+)"', html)[1]
        assert "overflow-wrap:normal" in th and "word-break:normal" in th and "anywhere" not in th
        td = re.search(r'<td style="([^"]+)"', html)[1]
        assert "overflow-wrap:anywhere" in td
    assert badge("passed") == f'<b style="color:{VERDICT_COLOURS["passed"]}">passed</b>'
    assert badge("failed", "drift: 2 lines") == f'<b style="color:{VERDICT_COLOURS["failed"]}">drift: 2 lines</b>'


@pytest.mark.parametrize("hostile", [
    "<script>window.x=1</script>",
    '<img src=x onerror="window.x=1">',
    "[a](javascript:window.x=1)",
    "[a](JaVaScRiPt:window.x=1)",
    "<javascript:window.x=1>",
    "[a](&#106;avascript:window.x=1)",
    "[x](data:text/html,<script>window.x=1</script>)",
    '<a href="javascript:1" onclick="window.x=1">x</a>',
    "![x](javascript:window.x=1)",
    '<svg onload="window.x=1">',
    "<iframe src=javascript:window.x=1>",
])
def test_markdown_never_carries_html_or_script_from_an_answer(hostile: str) -> None:
    from html.parser import HTMLParser

    out = markdown_html(f"**answer** {hostile}")
    assert "<strong>answer</strong>" in out
    tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, attrs))

    Tags().feed(out)
    assert {t for t, _ in tags} <= {"p", "strong", "a", "code"}, out  # the hostile markup is text, not elements
    for _, attrs in tags:
        for name, value in attrs:
            assert not name.startswith("on"), out
            assert not (name == "href" and re.match(r"\s*(javascript|data|vbscript):", value or "", re.I)), out


def test_markdown_renders_what_answers_use_and_fetches_nothing() -> None:
    out = markdown_html("# T\n\n- one\n- `two`\n\n```python\nx < 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                        "[site](https://example.org) ![pic](https://example.org/p.png)")
    for tag in ("<h1>", "<li>", "<code>two</code>", 'class="language-python"', "x &lt; 1", "<table>"):
        assert tag in out
    assert "<img" not in out and '>image: pic</a>' in out  # an image is a link: nothing is fetched
    assert 'rel="noopener noreferrer" href="https://example.org"' in out


def test_markdown_masks_secret_shapes() -> None:
    assert "sk-canary-0123456789abcdef" not in markdown_html("key sk-canary-0123456789abcdef")


def test_labels_are_placed_in_rows_without_overlap() -> None:
    spans = [(0, 50), (10, 60), (55, 90), (100, 130), (20, 40)]
    rows = place_labels(spans)
    for i, (a0, a1) in enumerate(spans):
        for j, (b0, b1) in enumerate(spans):
            if i < j and rows[i] == rows[j]:
                assert a1 + 4 <= b0 or b1 + 4 <= a0, (spans[i], spans[j])
    assert place_labels(spans, max_rows=1).count(None) == 2  # no room left: those keep only their tooltip


def _text_boxes(svg: str) -> list[tuple[float, float, float]]:
    """(x0, x1, baseline) of every label, widths estimated as the layout does."""
    out = []
    for x, y, anchor, text in re.findall(r'<text class="label" x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)"[^>]*>'
                                         r"([^<]*)</text>", svg):
        w = len(text) * CHAR_W
        x0 = {"start": float(x), "middle": float(x) - w / 2, "end": float(x) - w}[anchor]
        out.append((x0, x0 + w, float(y)))
    return out


@pytest.mark.parametrize("tl", [
    # the console's slow scenario: a delta every 0.5 s, each pause an idle gap with its own label
    StreamTimeline(headers_s=0.004, first_delta_s=0.5, deltas=tuple(0.5 * i for i in range(1, 25)), last_byte_s=12.1,
                   total_s=12.1),
    # marks close together at the end: headers, first delta and last byte within milliseconds
    StreamTimeline(headers_s=0.019, first_delta_s=0.033, deltas=(0.033, 0.033), last_byte_s=0.033, total_s=0.033),
    # the emulator's burst as the console at 800 px drew it: first delta and last byte in the same millisecond
    StreamTimeline(headers_s=0.008, first_delta_s=0.009, deltas=(0.009,) * 8, last_byte_s=0.009, total_s=0.009),
    StreamTimeline(headers_s=0.01, first_delta_s=0.02, deltas=(0.02, 0.05, 1.05, 1.08), last_byte_s=1.1,
                   total_s=1.1, stopped=True),
])
def test_timeline_labels_never_overlap(tl: StreamTimeline) -> None:
    svg = timeline_svg(tl)
    boxes = _text_boxes(svg)
    assert len(boxes) >= 4
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            same_line = abs(a[2] - b[2]) < 14  # an 11 px text box is ~13 px tall, descenders included
            assert not (same_line and a[0] < b[1] and b[0] < a[1]), (a, b)
    height = float(re.search(r'height="([\d.]+)"', svg)[1])
    assert all(y <= height for *_, y in boxes)


def test_usage_line_from_each_source() -> None:
    assert Usage().line() == "not reported"
    assert Usage.from_mapping({"prompt_tokens": 2, "completion_tokens": 3}, output_s=1.5).line() == (
        "2 prompt + 3 completion = 5 tokens · 2.0 tokens/s")
    run = Usage.from_mapping({"input_tokens": 4, "output_tokens": 6, "total_tokens": 10, "source": "estimated"})
    assert run.line() == "4 prompt + 6 completion = 10 tokens (estimated)" and run.tokens_per_s is None
    assert Usage.output_seconds(0.1, 0.12, 2.0) == 2.0 and Usage.output_seconds(0.1, 1.1, 2.0) == pytest.approx(1.0)
    assert Usage.from_mapping({"total_tokens": True}).line() == "not reported"  # junk is not usage
