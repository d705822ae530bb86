"""``hermes-nb load``: how many streams the proxy carries (TTFT, ITL, E2E, throughput, 429s by concurrency).

Target: the runtime config every command resolves (:func:`hermes_nb.cli.options.config_from_args`: manifest
< ``HERMES_NB_*`` < ``--runtime-config-overrides`` < ``--endpoint``/``--model``); no endpoint anywhere = an
embedded emulator in the ``paced`` scenario (or ``--scenario``). A non-loopback endpoint is refused (exit 2,
nothing sent) without ``--allow-non-loopback``.
``--out DIR|URL`` also writes a receipt (the ``load`` notebook executed by papermill, indexed and verified like
the smoke's). Exit: 0 every request succeeded, 3 blocked (429s stopped the ramp, or the endpoint is
unreachable), 1 other errors or interrupted (the figures measured so far are printed and kept), 2 usage.
See docs/load.md.
"""

from __future__ import annotations

import argparse

from hermes_nb.cli.options import add_config_flags, config_from_args
from hermes_nb.cli.output import Output
from hermes_nb.core.facts import exit_code_for, worst_verdict
from hermes_nb.emulator.scenarios import ALL_SCENARIOS
from hermes_nb.proxy.load.plan import CAPS, DEFAULT_CONCURRENCY


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "load", parents=[parent], help="load the proxy: TTFT, ITL, E2E, throughput and 429s by concurrency",
        description="Streamed chat completions at rising concurrency (closed loop, or open loop with --rate); "
                    "per level TTFT/ITL/E2E p50/p90/p99, requests/s, output tokens/s and errors by class. "
                    f"Hard caps: concurrency {CAPS['concurrency']:g}, {CAPS['requests']:g} requests and "
                    f"{CAPS['duration_s']:g} s per level, {CAPS['total_s']:g} s per run.",
    )
    add_config_flags(p)  # --endpoint (default: $HERMES_NB_ENDPOINT, else an embedded emulator), --model, …
    p.add_argument("--concurrency", default=",".join(map(str, DEFAULT_CONCURRENCY)), metavar="N,N,…",
                   help="concurrency levels (default %(default)s)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--requests", type=int, metavar="N",
                        help="requests per level (default: four rounds of each level, at least 8)")
    budget.add_argument("--duration", type=float, metavar="S", help="seconds per level instead of --requests")
    p.add_argument("--rate", type=float, metavar="R",
                   help="open loop: Poisson arrivals at R requests/s (each level's concurrency caps those in flight)")
    p.add_argument("--prompt-tokens", type=int, default=64, metavar="N", help="prompt length in tokens (default 64)")
    p.add_argument("--max-tokens", type=int, default=16, metavar="N", help="max_tokens of each request (default 16)")
    p.add_argument("--direct", metavar="URL",
                   help="the upstream behind the proxy (incl. /v1): each level runs against it too, and the report "
                        "gives the proxy's added TTFT and E2E")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per request (default 60)")
    p.add_argument("--scenario", choices=ALL_SCENARIOS, metavar="NAME",
                   help="the embedded emulator's scenario (no --endpoint): paced (default), concurrency-limited, "
                        "rate-limited, …")
    p.add_argument("--allow-non-loopback", action="store_true",
                   help="load a proxy that is not on this machine (spends its subscription's quota; every output "
                        "says so)")
    p.add_argument("--out", metavar="DIR|URL", help="also write a receipt: the load notebook, executed, indexed")
    p.add_argument("--no-html", action="store_true", help="with --out: skip the receipt's HTML render")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    say = None if out.json_mode else out.info
    config = config_from_args(args)
    load = {"concurrency": args.concurrency,
            "requests": args.requests, "duration_s": args.duration, "rate": args.rate,
            "prompt_tokens": args.prompt_tokens, "max_tokens": args.max_tokens, "timeout_s": args.timeout,
            "direct": args.direct, "allow_non_loopback": args.allow_non_loopback, "scenario": args.scenario}
    if args.out:
        from hermes_nb.nbrun.load import load_with_receipt

        run = load_with_receipt(config, out=args.out, html=not args.no_html, progress=say, **load)
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
