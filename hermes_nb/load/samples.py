"""The raw record: one :class:`Sample` per measured request, and its two files (JSON Lines and CSV).

Every figure of the report is computed from these (:func:`hermes_nb.load.metrics.level_result`), so anyone can
recompute it, merge repeats, take another percentile or draw a CDF from the receipt's ``load-samples.jsonl`` or
``load-samples.csv``. Times are seconds since the run started (one clock: ``time.perf_counter``); ``gaps_ms``
are the pauses between consecutive tokens of the stream, in milliseconds.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields

__all__ = ["Sample", "SAMPLES_JSONL", "SAMPLES_CSV", "to_jsonl", "to_csv", "read_samples"]

SAMPLES_JSONL, SAMPLES_CSV = "load-samples.jsonl", "load-samples.csv"


@dataclass(slots=True)
class Sample:
    """One request as the generator saw it (None: that moment never came, e.g. no token before an error)."""

    #: ``proxy`` or ``direct`` (the upstream itself), the level, the repeat (0-based)
    target: str
    concurrency: int
    repeat: int
    start_s: float
    #: the first token of any kind (reasoning included), the first answer token, the last answer token
    first_token_s: float | None = None
    first_answer_s: float | None = None
    last_token_s: float | None = None
    #: the stream's (or the answer's) last byte: after the usage chunk and ``[DONE]``
    last_byte_s: float | None = None
    #: completion tokens (the usage chunk's, reasoning included; else the deltas counted: ``token_source``)
    tokens: int = 0
    reasoning_tokens: int = 0
    #: reasoning deltas seen in the stream (0: none streamed; reasoning tokens, if any, were hidden)
    reasoning_deltas: int = 0
    token_source: str = "deltas"
    status: int | None = None
    #: the error class (:data:`hermes_nb.load.metrics.ERROR_CLASSES`), None for a success
    error: str | None = None
    retry_after_s: float | None = None
    #: a one-line description of the error, redacted by the generator
    detail: str | None = None
    #: the connection was refused or could not be made
    connect_failed: bool = False
    gaps_ms: list[float] = field(default_factory=list)

    def since_start(self, moment: float | None) -> float | None:
        return None if moment is None else moment - self.start_s


_FIELDS = [f.name for f in fields(Sample)]
_FLOATS = {"start_s", "first_token_s", "first_answer_s", "last_token_s", "last_byte_s", "retry_after_s"}
_INTS = {"concurrency", "repeat", "tokens", "reasoning_tokens", "reasoning_deltas", "status"}


def to_jsonl(samples: Iterable[Sample]) -> str:
    return "".join(json.dumps(asdict(s), separators=(",", ":")) + "\n" for s in samples)


def to_csv(samples: Iterable[Sample]) -> str:
    """One row per request; ``gaps_ms`` space-separated in one column."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=_FIELDS, lineterminator="\n")
    writer.writeheader()
    for s in samples:
        row = asdict(s)
        row["gaps_ms"] = " ".join(map(str, s.gaps_ms))
        writer.writerow(row)
    return buffer.getvalue()


def _cell(name: str, text: str) -> object:
    if text == "":
        return [] if name == "gaps_ms" else None
    if name == "gaps_ms":
        return [float(v) for v in text.split()]
    if name in _FLOATS:
        return float(text)
    if name in _INTS:
        return int(text)
    return text == "True" if name == "connect_failed" else text


def read_samples(text: str, *, csv_format: bool = False) -> list[Sample]:
    """The samples of a ``load-samples.jsonl`` (or, ``csv_format``, ``.csv``) file's text."""
    if csv_format:
        return [Sample(**{k: _cell(k, v) for k, v in row.items()})  # type: ignore[arg-type]  # typed by _cell
                for row in csv.DictReader(io.StringIO(text))]
    return [Sample(**json.loads(line)) for line in text.splitlines() if line.strip()]
