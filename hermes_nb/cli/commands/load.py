"""Streamed chat completions at rising concurrency (closed loop, or open loop with --rate); per level TTFT/ITL/E2E
p50/p90/p99, requests/s, output tokens/s and errors by class. No endpoint anywhere = an embedded emulator in the
paced scenario (or --scenario). A non-loopback endpoint is refused (exit 2, nothing sent) without
--allow-non-loopback. --out DIR|URL also writes a receipt (the load notebook executed by papermill).
exit: 0 every request succeeded, 3 blocked (429s stopped the ramp, or the endpoint is unreachable), 1 other
errors or interrupted (the figures measured so far are printed and kept), 2 usage."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hermes_nb.cli.output import Output
from hermes_nb.core.facts import exit_code_for, worst_verdict
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import CommaList
from hermes_nb.proxy.load.plan import DEFAULT_CONCURRENCY

HELP = "load the proxy: TTFT, ITL, E2E, throughput and 429s by concurrency"


class SPEC(ConfigOptions):
    concurrency: Annotated[list[int], CommaList] = Field(list(DEFAULT_CONCURRENCY), description="concurrency levels")
    requests: int | None = Field(None, gt=0, description="requests per level (default: four rounds of each level)")
    duration_s: float | None = Field(None, gt=0, description="seconds per level instead of --requests")
    rate: float | None = Field(None, gt=0, description="open loop: Poisson arrivals at R requests/s")
    prompt_tokens: int = Field(64, gt=0, description="prompt length in tokens")
    max_tokens: int = Field(16, gt=0, description="max_tokens of each request")
    direct: str | None = Field(None, description="the upstream behind the proxy (incl. /v1): the proxy's added "
                                                 "TTFT and E2E")
    request_timeout_s: float = Field(60.0, gt=0, description="the longest one request may take")
    scenario: str | None = Field(None, description="the embedded emulator's scenario (no --endpoint)")
    allow_non_loopback: bool = Field(False, description="load a proxy that is not on this machine")
    out: str | None = Field(None, description="also write a receipt: the load notebook, executed, indexed")
    html: bool = Field(True, description="with --out: write the receipt's HTML render")


def handle(args: SPEC, out: Output) -> int:
    say = None if out.json_mode else out.info
    config = args.runtime_config()
    load = {"concurrency": args.concurrency,
            "requests": args.requests, "duration_s": args.duration_s, "rate": args.rate,
            "prompt_tokens": args.prompt_tokens, "max_tokens": args.max_tokens, "timeout_s": args.request_timeout_s,
            "direct": args.direct, "allow_non_loopback": args.allow_non_loopback, "scenario": args.scenario}
    if args.out:
        from hermes_nb.nbrun.load import load_with_receipt

        run = load_with_receipt(config, out=args.out, html=args.html, progress=say, **load)
        report, document = run.report, run.to_dict()
        verdict = worst_verdict([report.verdict, document["receipt"]["verdict"] or "failed"])
    else:
        from hermes_nb.proxy.load.run import run_load

        report = run_load(config, progress=say, **load)
        document, verdict = report.model_dump(mode="json"), report.verdict
    if out.json_mode:  # the human text carries them on stdout; with --json, stderr says them too
        for warning in report.warnings:
            out.info(f"warning: {warning}")
    for line in report._repr_text_().splitlines():
        out.line(line)
    if args.out:
        receipt = document["receipt"]
        out.line(f"receipt: {receipt['verdict']} ({receipt['reason']})  {receipt['path']}")
    code = exit_code_for(verdict)
    out.emit({**document, "exit_code": code})
    return code
