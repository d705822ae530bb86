"""The load probe in a kernel: what the ``load`` notebook's cells and the ``%hermes_load`` magic call.

:func:`measure_load` is :func:`hermes_nb.proxy.load.run.run_load` against a kit :class:`~hermes_nb.kit.target.Target`
(the report says ``emulator`` when the target is the session's embedded emulator), or the report
``hermes-nb load --out`` measured and handed over as a file; :func:`load_summary` is the verdict the notebook
records, with that file's digest so the receipt keeps a verified copy of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.digests import sha256_file
from hermes_nb.core.facts import LOAD_NOTEBOOK
from hermes_nb.kit.target import Target
from hermes_nb.receipts.verdict import verdict_summary

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.proxy.load.report import LoadReport

__all__ = ["measure_load", "load_summary"]


def measure_load(target: Target, config: HermesProxyRuntimeConfig, *, report: str | None = None,
                 concurrency: str | Sequence[int] = "1,4,16,64", requests: int | None = None,
                 duration_s: float | None = None, rate: float | None = None, prompt_tokens: int = 64,
                 max_tokens: int = 16, timeout_s: float = 60.0, direct: str | None = None,
                 allow_non_loopback: bool = False) -> LoadReport:
    """Measure ``target`` with ``config`` (resolved once, aimed at the target), or read the report at ``report``
    (measured by ``hermes-nb load``)."""
    from hermes_nb.proxy.load.report import LoadReport
    from hermes_nb.proxy.load.run import run_load

    if report is not None:
        return LoadReport.model_validate_json(Path(report).read_text(encoding="utf-8"))
    measured = run_load(target.point(config), concurrency=concurrency, requests=requests,
                        duration_s=duration_s, rate=rate, prompt_tokens=prompt_tokens, max_tokens=max_tokens,
                        timeout_s=timeout_s, direct=direct, allow_non_loopback=allow_non_loopback)
    if target.kind == "emulator":  # the session's own emulator, started by the target
        measured = measured.model_copy(update={"target_kind": "emulator", "scenario": target.scenario})
    return measured


def load_summary(result: LoadReport, *, report: str | None = None) -> dict[str, Any]:
    """The load receipt's verdict: the report's own (passed / blocked on 429s or unreachable / failed), its
    figures in the details, and the digest of the report file when one was handed over."""
    from hermes_nb.proxy.load.report import REPORT_FILE

    run_dir = str(Path(report).parent) if report else None
    artifacts = {REPORT_FILE: sha256_file(Path(report))} if report and Path(report).name == REPORT_FILE else {}
    return verdict_summary(
        LOAD_NOTEBOOK, result.verdict, reason=result.reason, errors=list(result.errors),
        warnings=list(result.warnings), endpoint=result.endpoint, model=result.model, target=result.target_kind,
        artifacts=artifacts, run_dir=run_dir if artifacts else None,
        details={"load": result.model_dump(mode="json")},
    )


def load_magic(magics: Any, line: str) -> LoadReport:
    """``%hermes_load``: the flags of ``hermes-nb load``; no endpoint = the session's emulator (``paced``)."""
    import argparse

    from IPython.utils.process import arg_split

    from hermes_nb.kit.target import runtime_config, start_target

    p = argparse.ArgumentParser(prog="%hermes_load", add_help=False)
    for flag, kind, default in (("--endpoint", str, None), ("--model", str, None), ("--scenario", str, "paced"),
                                ("--concurrency", str, "1,4,16,64"), ("--requests", int, None),
                                ("--duration", float, None), ("--rate", float, None), ("--prompt-tokens", int, 64),
                                ("--max-tokens", int, 16), ("--timeout", float, 60.0), ("--direct", str, None)):
        p.add_argument(flag, type=kind, default=default)
    p.add_argument("--allow-non-loopback", action="store_true")
    args = p.parse_args(arg_split(line))
    config = runtime_config(args.endpoint, args.model)
    target = start_target(config, scenario=args.scenario)
    try:
        return measure_load(target, config, concurrency=args.concurrency, requests=args.requests,
                            duration_s=args.duration, rate=args.rate, prompt_tokens=args.prompt_tokens,
                            max_tokens=args.max_tokens, timeout_s=args.timeout, direct=args.direct,
                            allow_non_loopback=args.allow_non_loopback)
    finally:
        target.close()
