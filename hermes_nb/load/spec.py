"""Every option of the load probe, declared once in :class:`LoadSpec` (the CLI, the magic and the notebook are made
from it); :func:`guard` refuses a non-loopback target before anything is sent (load spends the quota behind it)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from hermes_nb.core.config import normalise_endpoint
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import is_loopback_host, plain_http_warning
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import CommaList, Opt, conflict
from hermes_nb.emulator.scenarios import ALL_SCENARIOS

CLI = frozenset({"cli"})
#: not notebook parameters: a parameter named like a token is refused there (no secret is ever a parameter)
SHELL = frozenset({"cli", "magic"})
SLO_KEYS = ("ttft_s", "ttfat_s", "itl_s", "e2e_s")  # what ``--slo`` may bound, per request (seconds)
MIN_REQUESTS = 8  # per level when neither ``requests`` nor ``level_budget_s`` is given


def _pairs(value: Any) -> Any:
    """``ttft_s=0.5,itl_s=0.05`` → ``{"ttft_s": "0.5", "itl_s": "0.05"}``."""
    if not isinstance(value, str):
        return value
    pairs = [part.partition("=") for part in value.split(",") if part.strip()]
    return {key.strip(): number.strip() for key, _, number in pairs}


class LoadSpec(ConfigOptions):
    """The load probe's options (docs/load.md) besides the runtime config's (every job's). ``*_timeout_s`` a
    silence, ``*_budget_s`` a whole."""

    concurrency: Annotated[list[Annotated[int, Field(ge=1, le=1024)]], CommaList, Opt(metavar="N,N,…"),
                           AfterValidator(lambda levels: sorted(set(levels)))] = Field(
        [1, 4, 16, 64], min_length=1, max_length=16, description="concurrency levels, run in ascending order")
    requests: Annotated[list[Annotated[int, Field(ge=1, le=20_000)]], CommaList,
                        BeforeValidator(lambda v: [v] if isinstance(v, int) else v), Opt(metavar="N,N,…")] = Field(
        default_factory=list, description="measured requests per level: one for every level, or one per level "
                                          "(60,320,1280); default: --rounds")
    rounds: int = Field(4, ge=1, le=100, description=f"measured requests per level: rounds x concurrency (at least "
                                                     f"{MIN_REQUESTS}) when --requests is not given")
    level_budget_s: float | None = Field(
        None, gt=0, le=600, description="send for this long per level instead of a request count (those in flight "
                                        "finish)")
    warmup_rounds: int = Field(1, ge=0, le=10, description="unmeasured requests before each level is measured, "
                                                           "rounds x concurrency (connections opened)")
    repeat: int = Field(1, ge=1, le=20, description="measure each level this many times (proxy and --direct "
                                                    "interleaved); the report gives the spread")
    seed: int = Field(0, ge=0, description="seed of the prompts, the open-loop arrivals and the bootstrap")
    rate: Annotated[float | None, Opt(metavar="R")] = Field(
        None, gt=0, le=1000, description="open loop: Poisson arrivals at this many requests/s (each level's "
                                         "concurrency caps those in flight)")
    prompt_tokens: Annotated[int, Opt(faces=SHELL)] = Field(64, ge=0, le=100_000,
                                                            description="prompt length in tokens (about)")
    max_tokens: Annotated[int, Opt(faces=SHELL)] = Field(16, ge=1, le=32_768, description="max_tokens of each request")
    stream: bool = Field(True, description="stream the answers (turned off: whole answers, E2E only)")
    request_timeout_s: float = Field(60.0, gt=0, le=600, description="a request fails as a timeout after this long "
                                                                     "without a byte")
    run_budget_s: float = Field(3600.0, gt=0, le=3600, description="no request is sent after this long")
    stall_s: float = Field(0.5, gt=0, le=600, description="a gap between two tokens longer than this is a stall")
    slo: Annotated[dict[str, Annotated[float, Field(gt=0)]], BeforeValidator(_pairs), Opt(metavar="KEY=S,…")] = Field(
        default_factory=dict, description="targets per request, seconds, keyed ttft_s, ttfat_s, itl_s or e2e_s: "
                                          "goodput and the highest concurrency meeting them")
    slo_share: float = Field(0.9, gt=0, le=1, description="a level meets the SLO when this share of its requests "
                                                          "meets every target")
    saturation_gain: float = Field(0.05, ge=0, le=10, description="the ramp stops after a level whose throughput grew "
                                                                  "less than this share over the level before (0: "
                                                                  "never)")
    direct: Annotated[str | None, AfterValidator(lambda url: None if url is None else normalise_endpoint(url)),
                      Opt(metavar="URL")] = Field(
        None, description="the upstream behind the proxy (incl. /v1): each level runs against it too and the report "
                          "gives the proxy's added latency")
    allow_non_loopback: bool = Field(False, description="load a proxy that is not on this machine (spends its "
                                                        "subscription's quota; every output says so)")
    scenario: Annotated[str | None, Opt(metavar="NAME")] = Field(
        None, description="the embedded emulator's scenario (no endpoint): paced (default), concurrency-limited, "
                          "rate-limited, …")
    first_delta_s: float = Field(0.1, ge=0, le=60, description="the embedded emulator's first delta after this long")
    token_interval_s: Annotated[float, Opt(faces=SHELL)] = Field(
        0.01, ge=0, le=10, description="the embedded emulator's next tokens, one each this long")
    hermes_bin: Annotated[str | None, Opt(faces=SHELL)] = Field(
        None, description="the hermes executable of the proxy under test: its release is recorded")
    out: Annotated[str | None, Opt(faces=CLI, metavar="DIR|URL")] = Field(
        None, description="also write a receipt: the load notebook executed, indexed, verified")
    html: Annotated[bool, Opt(faces=CLI)] = Field(True, description="the receipt's HTML render (with --out)")
    report: Annotated[str | None, Opt(faces=frozenset({"notebook"}))] = Field(
        None, description="a load-report.json written by hermes-nb load --out (None: measure here)")

    @field_validator("slo")
    @classmethod
    def _slo_keys(cls, slo: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(slo) - set(SLO_KEYS))
        if unknown:
            raise ValueError(f"unknown target {', '.join(unknown)}; give {', '.join(SLO_KEYS)}")
        return slo

    @field_validator("scenario")
    @classmethod
    def _scenario(cls, name: str | None) -> str | None:
        if name is not None and name not in ALL_SCENARIOS:
            raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(ALL_SCENARIOS)}")
        return name

    @model_validator(mode="after")
    def _budgets(self) -> LoadSpec:
        if self.requests and self.level_budget_s is not None:
            raise conflict("requests", "level_budget_s", why="are exclusive: one bounds each level")
        if len(self.requests) not in (0, 1, len(self.concurrency)):
            raise conflict("requests", "concurrency", why="disagree: give one request count, or one per level")
        return self

    def budget(self, index: int) -> int | None:
        """Measured requests of the ``index``-th level (None: ``level_budget_s`` bounds it)."""
        if self.requests:
            return self.requests[index if len(self.requests) > 1 else 0]
        if self.level_budget_s is not None:
            return None
        return max(MIN_REQUESTS, self.rounds * self.concurrency[index])

    def settings(self) -> dict[str, Any]:
        """What the report records: every option that shapes the measurement."""
        return self.model_dump(exclude={"endpoint", "model", "provider", "manifest", "root", "runtime_config_overrides",
                                        "out", "html", "report", "hermes_bin"})


def guard(flag: str, url: str, *, allow_non_loopback: bool) -> list[str]:
    """The warnings a (valid) target URL carries; a :class:`UsageError` (nothing sent) for a non-loopback one."""
    host = urlsplit(url).hostname or ""
    if is_loopback_host(host):
        return []
    if not allow_non_loopback:
        raise UsageError(f"{flag} {url}: {host} is not loopback; load spends the quota of the subscription behind "
                         "the proxy, so nothing was sent (pass --allow-non-loopback to load it anyway)")
    insecure = plain_http_warning(url)
    return [f"{flag} {url} is not loopback: this load spent the quota of the subscription behind it "
            "(--allow-non-loopback)", *([insecure] if insecure else [])]
