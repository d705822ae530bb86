"""The figures: their definitions on samples (pure), and against the emulator's known timing, scaled down (a
trailer, reasoning before the answer, a stall in every stream). Tolerances hold on a loaded 2-core machine: a
paced sleep never ends early, so the emulator's pacing is a floor and the figures are asserted against it and
against what the old definitions would have read; the ±10 % fidelity itself is a benchmark row
(benchmarks/load_generator.py, docs/performance.md P8)."""

from __future__ import annotations

import json

import pytest

from hermes_nb.load.report import (
    SAMPLES_CSV,
    LevelResult,
    LoadReport,
    Overhead,
    Percentiles,
    Sample,
    added_latency,
    compute,
    level_result,
    percentile,
    read_samples,
    sample_files,
)
from hermes_nb.load.run import run_load
from hermes_nb.load.views import report_text
from tests.load.conftest import csv_samples


def _sample(start: float, first: float | None, last: float | None, tokens: int, **kw) -> Sample:
    return Sample("proxy", kw.pop("concurrency", 4), kw.pop("repeat", 0), start,
                  first_token_s=None if first is None else start + first,
                  first_answer_s=None if first is None else start + first,
                  last_token_s=None if last is None else start + last,
                  last_byte_s=start + (last or 0.0) + kw.pop("trailer", 0.0), tokens=tokens, **kw)


def test_percentile_interpolates_linearly_between_ranks() -> None:
    values = [float(v) for v in range(1, 11)]  # numpy.percentile([1..10], q) with linear interpolation
    assert [percentile(values, q) for q in (0, 50, 90, 99, 100)] == pytest.approx([1.0, 5.5, 9.1, 9.91, 10.0])
    with pytest.raises(ValueError):
        percentile([], 50)


def test_every_block_has_count_and_p95_and_says_when_it_rests_on_too_few() -> None:
    few, many = Percentiles.of([0.01 * i for i in range(12)]), Percentiles.of([0.001 * i for i in range(200)])
    assert few.count == 12 and few.p95 is not None and few.thin == ["p95", "p99"]
    assert many.thin == [] and many.p50_ci is not None and many.p50_ci[0] <= many.p50 <= many.p50_ci[1]
    assert Percentiles.of([0.1] * 9).thin == ["p90", "p95", "p99"] and Percentiles.of([]).count == 0


def test_level_figures_follow_the_definitions() -> None:
    samples = [
        _sample(0.0, 0.100, 0.250, 16, token_source="usage", trailer=0.2),  # ITL (0.25-0.1)/15 = 10 ms
        _sample(0.1, 0.120, 0.420, 31, token_source="usage"),
        _sample(0.2, 0.050, 0.050, 1),  # one token: no ITL
        Sample("proxy", 4, 0, 0.3, last_byte_s=0.31, status=429, error="rate_limited", retry_after_s=2.0,
               detail="429 (Retry-After 2 s)"),
        Sample("proxy", 4, 0, 0.4, last_byte_s=0.9, error="timeout", detail="no byte for 0.5 s"),
    ]
    lv = level_result(samples, LevelResult(concurrency=4))
    assert (lv.sent, lv.succeeded, lv.errors.total, lv.errors.retry_after_s) == (5, 3, 2, [2.0])
    assert lv.ttft_ms.p50 == pytest.approx(100.0) and lv.itl_ms.count == 2 and lv.itl_ms.p50 == pytest.approx(10.0)
    assert lv.e2e_ms.p50 == pytest.approx(250.0) and lv.last_byte_ms.max == pytest.approx(450.0)  # the trailer apart
    assert lv.duration_s == pytest.approx(0.9) and lv.request_throughput == pytest.approx(3 / 0.9, abs=1e-3)
    assert lv.output_tokens == 48 and lv.token_source == "mixed"
    refused = level_result([Sample("proxy", 1, 0, 0.0, last_byte_s=0.001, error="transport", connect_failed=True)],
                           LevelResult(concurrency=1))
    assert refused.unreachable and refused.ttft_ms == Percentiles()


def test_hidden_reasoning_is_taken_out_of_the_itl_count() -> None:
    """10 reasoning tokens counted in the usage but never streamed, 20 answer tokens 10 ms apart: 10 ms."""
    hidden = _sample(0.0, 0.2, 0.39, 30, reasoning_tokens=10)
    streamed = _sample(0.0, 0.1, 0.39, 30, reasoning_tokens=10, reasoning_deltas=10)
    assert hidden.itl() == pytest.approx(0.010) and streamed.itl() == pytest.approx(0.010)


def test_added_latency_has_an_interval_and_the_paired_repeats() -> None:
    proxy = [_sample(0.0, 0.15 + 0.001 * i, 0.3, 4, repeat=i % 2) for i in range(20)]
    direct = [Sample("direct", 4, s.repeat, 0.0, first_token_s=0.1, last_token_s=0.2, last_byte_s=0.2, tokens=4)
              for s in proxy]
    added = added_latency(proxy, direct, concurrency=4, seed=1)
    assert added.ttft_ms["p50"] == pytest.approx(59.5) and added.e2e_ms["p95"] == pytest.approx(100.0)
    assert added.ttft_p50_ci is not None and added.ttft_p50_ci[0] <= 59.5 <= added.ttft_p50_ci[1]
    assert len(added.ttft_p50_by_repeat) == 2 and added == added_latency(proxy, direct, concurrency=4, seed=1)


def test_a_busy_machine_or_a_late_loop_warns_on_fixed_bounds() -> None:
    quiet = Overhead.of("proxy concurrency 1", 0.1, 1.0, 10, [0.001] * 50, (0, 100), (50, 200))
    busy = Overhead.of("proxy concurrency 256", 0.5, 1.0, 10, [0.001] * 50, (0, 100), (95, 200))
    late = Overhead.of("proxy concurrency 64", 0.1, 1.0, 10, [0.03] * 50, (0, 100), (10, 200))
    assert quiet.warning is None and quiet.machine_busy == 0.5 and quiet.cpu_per_request_ms == 10.0
    assert "95% busy" in busy.warning and "30.0 ms late" in late.warning


def test_the_samples_files_round_trip() -> None:
    samples = [_sample(0.0, 0.1, 0.2, 3, gaps_ms=[50.0, 50.0]), Sample("direct", 1, 1, 0.5, error="timeout")]
    jsonl, csv = sample_files(samples).values()
    assert read_samples(jsonl) == samples == csv_samples(csv)


# --------------------------------------------------------------------------- against known timing


def test_a_trailer_moves_the_last_byte_not_the_itl(hermes_emulator_factory) -> None:
    """A usage chunk and [DONE] 150 ms after 20 tokens 5 ms apart: the old ITL (to the last byte) would read 12.9 ms."""
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.02, token_interval_s=0.005, trailer_s=0.15)
    lv = run_load(emu.endpoint, concurrency="4", requests=8, max_tokens=20).levels[0]
    assert 5.0 <= lv.itl_ms.p50 <= 9.0  # the pacing is a floor; the old reading (to the last byte): 12.9 ms
    assert lv.last_byte_ms.p50 - lv.e2e_ms.p50 >= 0.9 * 150


def test_reasoning_first_token_first_answer_token_and_itl(hermes_emulator_factory) -> None:
    """5 reasoning + 10 answer tokens, the first after 20 ms, then 5 ms apart: TTFT 20, TTFAT 45, ITL 5 ms."""
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.02, token_interval_s=0.005, reasoning_tokens=5)
    lv = run_load(emu.endpoint, concurrency="2", requests=6, max_tokens=10).levels[0]
    assert 20.0 <= lv.ttft_ms.p50 < lv.ttfat_ms.p50 - 15.0 and lv.ttfat_ms.p50 >= 45.0
    assert 5.0 <= lv.itl_ms.p50 <= 9.0  # the answer's span over every token (the old reading): about 3.6 ms


def test_a_stall_in_every_stream_shows_as_a_gap(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.02, token_interval_s=0.002, stall_s=0.3)
    report = run_load(emu.endpoint, concurrency="2", requests=4, stall_s=0.2, warmup_rounds=0)
    gaps = report.levels[0].gaps
    assert gaps.gap_ms.max >= 280.0 and gaps.gap_ms.p50 < 50.0
    assert (gaps.stalled, gaps.streams, gaps.stall_share) == (4, 4, 1.0)
    assert "stalls" in report_text(report) and all(len(s.gaps_ms) == 15 for s in report.samples)


def test_the_report_is_recomputed_from_its_samples(hermes_emulator_factory) -> None:
    emu = hermes_emulator_factory(scenario="paced", **{"first_delta_s": 0.02, "token_interval_s": 0.002})
    report = run_load(emu.endpoint, concurrency="1,2", requests=4)
    kept = LoadReport.model_validate_json(report.model_dump_json())
    assert kept.samples == [] and "samples" not in json.loads(report.model_dump_json())
    again = compute(kept, csv_samples(sample_files(report.samples)[SAMPLES_CSV]))
    assert again.model_dump() == report.model_dump() and len(again.samples) == 8
    for block in (lv.ttft_ms for lv in report.levels):
        assert {"count", "p50", "p95", "p99"} <= set(block.model_dump()) and block.count == 4
