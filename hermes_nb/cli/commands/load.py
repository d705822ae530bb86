"""Chat completions at rising concurrency; per level TTFT, ITL, E2E, gaps between tokens, throughput and errors by
class, from raw samples (docs/load.md). No endpoint anywhere = the embedded emulator in processes of its own, in
the paced scenario (or --scenario). A non-loopback endpoint is refused (exit 2, nothing sent) without
--allow-non-loopback. --out DIR|URL also keeps a receipt (the load notebook, executed).
exit: 0 every request succeeded, 3 blocked (429s stopped the ramp, or nobody answered), 1 other errors or
interrupted (the figures measured so far are printed and kept), 2 usage."""

from hermes_nb.cli.app import Output
from hermes_nb.load.receipt import load
from hermes_nb.load.spec import LoadSpec

HELP = "load the proxy: TTFT, ITL, E2E, gaps, throughput and 429s by concurrency"
SPEC = LoadSpec


def handle(spec: LoadSpec, out: Output) -> int:
    run = load(spec, spec.runtime_config(), progress=out.info)
    for warning in run.report.warnings if out.json_mode else ():  # else the text on stdout carries them
        out.info(f"warning: {warning}")
    for line in run.text().splitlines():
        out.line(line)
    out.emit(run.to_dict())
    return run.exit_code
