"""What a load run will do, checked before anything is sent: the levels, the budget of each, the hard caps,
and the endpoints it may talk to.

Pure (no IO): :func:`plan_load` turns arguments into a :class:`LoadPlan` or raises
:class:`~hermes_nb.core.errors.UsageError` (exit 2) naming the first problem. A non-loopback endpoint
(``--endpoint`` or ``--direct``) is refused unless ``allow_non_loopback``: load spends the quota of the
subscription behind the proxy, so it is never sent anywhere by accident; when allowed, the plan carries a
warning that every output repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from hermes_nb.core.endpoint_safety import is_loopback_host, plain_http_warning
from hermes_nb.core.errors import UsageError

__all__ = ["CAPS", "DEFAULT_CONCURRENCY", "LoadPlan", "plan_load", "parse_levels", "default_requests"]

#: the hard caps (a flag above one is a usage error, exit 2); ``total_s`` bounds a whole run, levels included
CAPS = {"concurrency": 1024, "levels": 16, "requests": 20_000, "duration_s": 600.0, "rate": 1000.0,
        "prompt_tokens": 100_000, "max_tokens": 32_768, "timeout_s": 600.0, "total_s": 3600.0}
DEFAULT_CONCURRENCY = (1, 4, 16, 64)
#: requests per level when neither ``requests`` nor ``duration_s`` is given: four rounds of the level, at least 8
_ROUNDS, _MIN_REQUESTS = 4, 8


def default_requests(concurrency: int) -> int:
    return max(_MIN_REQUESTS, _ROUNDS * concurrency)


@dataclass(frozen=True)
class LoadPlan:
    """A checked load run (see :func:`plan_load`)."""

    endpoint: str
    model: str
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    #: requests per level (None: ``duration_s`` bounds each level instead)
    requests: int | None = None
    duration_s: float | None = None
    #: open loop: Poisson arrivals at this many requests/s (each level's concurrency caps those in flight)
    rate: float | None = None
    prompt_tokens: int = 64
    max_tokens: int = 16
    timeout_s: float = 60.0
    #: the upstream itself: each level runs again against it, and the report gives the proxy's added latency
    direct: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def requests_at(self, concurrency: int) -> int | None:
        """The request budget of a level (None when the level is bounded by ``duration_s``)."""
        if self.duration_s is not None:
            return self.requests
        return self.requests if self.requests is not None else default_requests(concurrency)

    def settings(self) -> dict[str, object]:
        """The plan as the report records it."""
        return {"concurrency": list(self.concurrency), "requests": self.requests, "duration_s": self.duration_s,
                "rate": self.rate, "prompt_tokens": self.prompt_tokens, "max_tokens": self.max_tokens,
                "timeout_s": self.timeout_s, "mode": "open loop (Poisson)" if self.rate else "closed loop"}


def parse_levels(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"1,4,16"`` (or a sequence) → ascending distinct levels; UsageError for anything else."""
    if isinstance(text, str):
        try:
            levels = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise UsageError(f"--concurrency {text!r}: give comma-separated whole numbers, e.g. 1,4,16") from None
    else:
        levels = [int(v) for v in text]
    if not levels:
        raise UsageError("--concurrency: give at least one level")
    if min(levels) < 1:
        raise UsageError(f"--concurrency: every level must be >= 1, got {min(levels)}")
    return tuple(sorted(set(levels)))


def _cap(flag: str, value: float | None, cap: float, *, minimum: float = 0.0, strict: bool = True) -> None:
    if value is None:
        return
    if (value <= minimum) if strict else (value < minimum):
        raise UsageError(f"{flag} must be > {minimum:g}, got {value:g}" if strict
                         else f"{flag} must be >= {minimum:g}, got {value:g}")
    if value > cap:
        raise UsageError(f"{flag} {value:g} is above the hard cap of {cap:g}")


def _host(flag: str, url: str) -> str:
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError for a port outside 0-65535
    except ValueError as exc:
        raise UsageError(f"{flag} {url!r}: not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise UsageError(f"{flag} {url!r}: give an http(s) URL including /v1, e.g. http://127.0.0.1:8645/v1")
    return host


def _endpoint_warnings(flag: str, url: str, *, allow_non_loopback: bool) -> list[str]:
    host = _host(flag, url)
    if is_loopback_host(host):
        return []
    if not allow_non_loopback:
        raise UsageError(f"{flag} {url}: {host} is not loopback; load spends the quota of the subscription behind "
                         "the proxy, so nothing was sent (pass --allow-non-loopback to load it anyway)")
    warnings = [f"{flag} {url} is not loopback: this load spent the quota of the subscription behind it "
                "(--allow-non-loopback)"]
    insecure = plain_http_warning(url)
    return warnings + ([insecure] if insecure else [])


def plan_load(endpoint: str, *, model: str, concurrency: str | Sequence[int] = DEFAULT_CONCURRENCY,
              requests: int | None = None, duration_s: float | None = None, rate: float | None = None,
              prompt_tokens: int = 64, max_tokens: int = 16, timeout_s: float = 60.0, direct: str | None = None,
              allow_non_loopback: bool = False) -> LoadPlan:
    """Check every argument against the caps and the loopback rule; nothing is sent here."""
    levels = parse_levels(concurrency)
    if len(levels) > CAPS["levels"]:
        raise UsageError(f"--concurrency: {len(levels)} levels is above the hard cap of {CAPS['levels']:g}")
    _cap("--concurrency", max(levels), CAPS["concurrency"])
    if requests is not None and duration_s is not None:
        raise UsageError("--requests and --duration are exclusive: one bounds each level")
    _cap("--requests", requests, CAPS["requests"])
    _cap("--duration", duration_s, CAPS["duration_s"])
    _cap("--rate", rate, CAPS["rate"])
    _cap("--prompt-tokens", prompt_tokens, CAPS["prompt_tokens"], strict=False)
    _cap("--max-tokens", max_tokens, CAPS["max_tokens"])
    _cap("--timeout", timeout_s, CAPS["timeout_s"])
    if not model or not model.strip():
        raise UsageError("--model must not be empty")
    warnings = _endpoint_warnings("--endpoint", endpoint, allow_non_loopback=allow_non_loopback)
    if direct is not None:
        warnings += _endpoint_warnings("--direct", direct, allow_non_loopback=allow_non_loopback)
        if direct.rstrip("/") == endpoint.rstrip("/"):
            raise UsageError("--direct is the endpoint itself; give the upstream behind the proxy")
    return LoadPlan(endpoint=endpoint, model=model, concurrency=levels, requests=requests, duration_s=duration_s,
                    rate=rate, prompt_tokens=int(prompt_tokens), max_tokens=int(max_tokens), timeout_s=timeout_s,
                    direct=direct, warnings=tuple(warnings))
