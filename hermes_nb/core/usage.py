"""Token usage of one answer, as every face shows it: prompt / completion / total tokens and output tokens/s.

Where it comes from, in order: the stream's last chunk (asked for with ``stream_options.include_usage``,
which the real proxy forwards untouched), else the non-streamed body's ``usage``, else nothing — shown as
"not reported", never guessed. Output speed is completion tokens over the time the text took to arrive
(first delta to last byte; the whole exchange when nothing streamed, or when the text came in one burst
shorter than :data:`MIN_SPAN_S`, where a rate would mean nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Usage", "NOT_REPORTED"]

NOT_REPORTED = "not reported"
#: a streamed text that arrived within less than this is rated over the whole exchange instead
MIN_SPAN_S = 0.05


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    #: ``stream`` (include_usage chunk), ``response`` (non-streamed body), ``runtime``/``estimated`` (a run's
    #: result document), None: not reported
    source: str | None = None
    #: seconds the output took to arrive (None: unknown)
    output_s: float | None = None

    @classmethod
    def from_mapping(cls, usage: Mapping[str, Any] | None, *, source: str | None = None,
                     output_s: float | None = None) -> Usage:
        """OpenAI's ``prompt_tokens``/``completion_tokens`` or the Responses/UH ``input_tokens``/``output_tokens``."""
        if not isinstance(usage, Mapping) or not usage:
            return cls()
        prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
        total = _int(usage.get("total_tokens"))
        if total is None and prompt is not None and completion is not None:
            total = prompt + completion
        if prompt is None and completion is None and total is None:
            return cls()
        return cls(prompt, completion, total, source or str(usage.get("source") or "response"), output_s)

    @classmethod
    def from_exchange(cls, exchange: Any) -> Usage:
        if exchange is None:
            return cls()
        t = exchange.timings
        output_s = cls.output_seconds(t.first_delta_s if exchange.streamed else None, t.last_byte_s, t.total_s)
        return cls.from_mapping(exchange.usage, source="stream" if exchange.streamed else "response",
                                output_s=output_s)

    @staticmethod
    def output_seconds(first_delta_s: float | None, last_byte_s: float | None, total_s: float | None) -> float | None:
        """The time the output took: first delta to last byte, else (a burst, or no stream) the whole exchange."""
        if first_delta_s is not None and last_byte_s is not None and last_byte_s - first_delta_s >= MIN_SPAN_S:
            return last_byte_s - first_delta_s
        return total_s

    @property
    def reported(self) -> bool:
        return self.source is not None

    @property
    def tokens_per_s(self) -> float | None:
        if self.completion_tokens is None or not self.output_s or self.output_s <= 0:
            return None
        return self.completion_tokens / self.output_s

    def line(self) -> str:
        """``12 prompt + 34 completion = 46 tokens · 85.2 tokens/s`` (or ``not reported``)."""
        if not self.reported:
            return NOT_REPORTED

        def n(v: int | None) -> str:
            return "?" if v is None else str(v)

        text = (f"{n(self.prompt_tokens)} prompt + {n(self.completion_tokens)} completion = "
                f"{n(self.total_tokens)} tokens")
        speed = self.tokens_per_s
        if speed is not None:
            text += f" · {speed:.1f} tokens/s"
        if self.source == "estimated":
            text += " (estimated)"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "tokens_per_s": self.tokens_per_s, "source": self.source}
