"""The shipped notebooks, generated from code: the smoke's three and the load receipt's (a ``parameters`` cell
papermill reads, never a secret; cells only call :mod:`hermes_nb.kit` and display; the last records the verdict),
and the guide (the probe console and the magics; never run by the smoke)."""

from __future__ import annotations

from collections.abc import Sequence

import nbformat

from hermes_nb.core.facts import ADAPTER_CHECK, E2E_SMOKE, GUIDES, LOAD_NOTEBOOK, SHIPPED_NOTEBOOKS, WIRE_SPIKE
from hermes_nb.load.spec import LoadSpec  # the load wing's notebook: its parameters are LoadSpec's
from hermes_nb.nbrun import JOB_SPECS

#: the two parameters the runner adds to every job notebook: what it established once, handed on
RUNNER_PARAMS = [
    ("target", '"Optional[dict]"', "None", "the target hermes-nb smoke identified once (None: identify it here: "
                                           "the configured endpoint, else an embedded emulator)"),
    ("config", '"Optional[dict]"', "None", "the runtime config hermes-nb smoke resolved once, secrets masked "
                                           "(None: resolve it here from the parameters above)"),
]
_SECRETS_NOTE = (
    "Secrets are never parameters (papermill writes parameter values into the output notebook): "
    "the bearer token, if any, is read inside the kernel from `HERMES_NB_AUTH_TOKEN` and never displayed."
)
#: a cell whose output varies (timings, widgets): nbval runs it and does not compare what it shows
_MEASURED = ("nbval-ignore-output",)


#: the load notebook's pictures, one section each: the heading and what to read in the picture
_LOAD_PICTURES = {
    "latency": ("Latency by concurrency",
                "p50 (the typical request), p95 and p99 (the slow tail); hollow points rest on too few samples. A "
                "TTFT that grows\nwith concurrency while ITL stays flat means requests queue before they start; a "
                "growing ITL means the streams\nthemselves slow down. Dashed: the upstream's own p50 and p99 (with "
                "`direct`)."),
    "gaps": ("Gaps between tokens", "Every pause between two tokens, pooled: a p99 or max far above the ITL is a "
             "stall or a buffer; the second panel is the share of streams with a gap over `stall_s`."),
    "throughput": ("Throughput", "Where requests/s flattens while latency still rises, something is saturated; "
                   "the second panel is latency against the throughput achieved."),
    "errors": ("Errors by class", "The share of each level's requests that failed; the ramp stops after the first "
               "level with a 429."),
    "distribution": ("Every request", "The E2E distribution per level and each request's E2E over the run, from "
                     "the raw samples."),
}


def _md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


def _code(source: str, tags: Sequence[str] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _notebook(cells: list[nbformat.NotebookNode], title: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["hermes_nb"] = {"guide" if title in GUIDES else "template": title}
    for i, cell in enumerate(nb.cells):  # stable ids keep git diffs of refreshed notebooks small
        cell["id"] = f"{title.replace('_', '-')}-{i:02d}"
    return nb


def _job(name: str, intro: str, steps: Sequence[tuple[str, str]]) -> nbformat.NotebookNode:
    """A job notebook: the intro, the parameters (its spec's), the job opened once, its steps, the verdict."""
    spec = JOB_SPECS[name]
    names = [n for n, _, _ in spec.options("notebook")] + [n for n, *_ in RUNNER_PARAMS]
    args = ", ".join(f"{n}={n}" for n in names)
    cells = [_md(intro + f"\n\nRunbook: `hermes-nb smoke --only {name} --endpoint http://127.0.0.1:8645/v1`. "
                 + _SECRETS_NOTE),
             _code(spec.parameters_source(RUNNER_PARAMS), tags=["parameters"]),
             _code(f"from hermes_nb import kit\n\njob = kit.open_job({name!r}, {args})\njob")]
    for title, code in steps:
        cells += [_md(title), _code(code)]
    cells += [_md("## Verdict\n\nStops what the job started, records the summary for the receipt, raises unless "
                  "passed."), _code("job.finish(result)")]
    return _notebook(cells, name)


def wire_format_spike() -> nbformat.NotebookNode:
    return _job(WIRE_SPIKE, """
# Wire-format spike

Probes every route the Hermes proxy is known to forward (`/v1/models`, chat completions streamed and not,
the Responses API, error envelopes, bearer handling, `/health`) and compares what it sees with the recorded wire
contract of the provider the proxy fronts (shipped with hermes_nb; see `docs/wire-contract.md`). Only fields the
proxy owns can drift; what the upstream behind it answers differently (body keys beyond the OpenAI floor, models,
routes, body cap, texts) is shown as information, and what it could not answer (too slow, down, rate-limited) is
not judged. **Passed** = reachable and no drift; **failed** = drift; **blocked** = unreachable, refused by the
proxy's local-only guard, or an upstream that is down or rate-limited.""",
                [("## Probe the routes, compare with the contract (the detected provider's)",
                  "result = job.probe()\nresult")])


def adapter_check() -> nbformat.NotebookNode:
    return _job(ADAPTER_CHECK, """
# Adapter check

`GET /health` (which provider the proxy fronts), then `GET <endpoint>/models` with the configured bearer,
classified the way UH's `adapter check hermes-proxy` does: **ready** (passed), **locked**, **unreachable**,
**slow**, **not_local** or **rate_limited** (blocked: the provider's re-auth command, `hermes proxy start`, the
endpoint's fix or a later retry), **misconfigured**/**error** (failed). With no model configured, the provider's
default model.""", [("## Check", "result = job.check()\nresult")])


def e2e_smoke() -> nbformat.NotebookNode:
    return _job(E2E_SMOKE, """
# End-to-end smoke

One mission run through the proxy exactly as UH's `mission run --runtime hermes-proxy` would do it: the
prompt with the final-message instruction, one streamed chat completion, the sentinel block extracted,
the run artifacts written (`runtime-result.yaml`, `runtime.stdout.log`, `runtime-final.txt`, `prompt.md`,
`events.ndjson`, `request.json`: the request sent, secrets masked). The model is the adapter check's (a model the
proxy does not list is not sent, and both notebooks fail naming the listed ones). The verdict is the runtime
result's status; the receipt carries the sha256 of the artifacts and keeps copies of them. A passed receipt
against a **live** proxy is what `hermes-nb promote` accepts.""", [("## Run", "result = job.run()\nresult")])


def load() -> nbformat.NotebookNode:
    """The load receipt's notebook: its parameters are :class:`~hermes_nb.load.spec.LoadSpec`'s (one declaration);
    the cells call the load wing and display."""
    names = ", ".join(f"{name}={name}" for name, _, _ in LoadSpec.options("notebook"))
    return _notebook([
        _md(f"""
# Load probe

How many streams one proxy carries: chat completions at rising concurrency, with the figures LLM-serving
benchmarks report (definitions beside AIPerf's and vLLM's in `docs/load.md`): **TTFT** (first token of any kind),
**TTFAT** (first answer token), **ITL**, **E2E** and the stream's last byte, p50/p95/p99 with their counts, the
**gaps between tokens** (stalls), throughput, errors by class, where a 429 (with its Retry-After) stopped the ramp,
and the generator's and the machine's own load per level. Every figure is computed from the raw samples (one
record per request), kept beside this notebook in the receipt. **Passed** = every request succeeded;
**blocked** = 429s, or nobody answered; **failed** = other errors, or interrupted.

Runbook: `hermes-nb load --endpoint http://127.0.0.1:8645/v1 --concurrency 1,4,16 --out runbooks/receipts/load`
measures, then executes this notebook with `report` set to what it measured. {_SECRETS_NOTE}
"""),
        _code(LoadSpec.parameters_source(), tags=["parameters"]),
        _code("from IPython.display import HTML\n\nfrom hermes_nb import kit\n"
              "from hermes_nb.load import receipt, views\nfrom hermes_nb.load.views import plot\n"
              "from hermes_nb.load.spec import LoadSpec\n\n"
              f"spec = LoadSpec.build(\"notebook\", {names})\nspec"),
        _md("## Measure\n\nOne row per level (`*`: a percentile resting on too few samples). The pictures follow, "
            "one per cell, as images (they render on GitHub too)."),
        _code("result = receipt.measure_or_read(spec)\nHTML(views.report_html(result, plots=False))", tags=_MEASURED),
        *[cell for kind, (title, text) in _LOAD_PICTURES.items()
          for cell in (_md(f"## {title}\n\n{text}"), _code(f'plot(result, "{kind}")', tags=_MEASURED))],
        _md("## Verdict\n\nRecords the summary (with the digests of the report and its samples) and raises unless "
            "passed."),
        _code("kit.record_verdict(receipt.summary(result, spec.report))"),
    ], LOAD_NOTEBOOK)


def _guide_code(source: str) -> nbformat.NotebookNode:
    return _code(source, tags=_MEASURED)


def probe_console() -> nbformat.NotebookNode:
    """The guide: the console and the magics, against an embedded emulator; no output is compared (widgets)."""
    return _notebook([
        _md("""
# Probing a Hermes proxy from Jupyter

A short tour of the exploratory face of hermes_nb: the **probe console** (widgets) and the **magics**.
Nothing here needs a proxy: with no endpoint (and no `HERMES_NB_ENDPOINT`) everything talks to an
**embedded emulator** started for this session. Point it at `http://127.0.0.1:8645/v1` to probe a real
`hermes proxy start`. The bearer, if any, comes from `HERMES_NB_AUTH_TOKEN` in the kernel or the console's
password field; it is never shown, stored in widget state or written into this notebook.

Opened without running, each output below is what the cell showed when the guide was made (the console as
a static picture); **Run All** brings the live console back at the top and at the bottom.
"""),
        _md("""
## The console

Pick a route (chat streamed, chat, models, health, or any forwarded path), edit the prompt or a JSON body,
press **Send** — or **Ctrl+Enter** / **Shift+Enter** in the prompt (Enter is a new line, **Esc** stops).
Deltas appear as they arrive (the stream runs off the kernel's main thread), rendered as Markdown (the
*raw* toggle shows the text as sent; nothing in an answer runs). **Stop** cuts the stream and keeps the
partial text. The status names the verdict (`done: passed (ok)`, `failed: unreachable`, `blocked: auth`),
with the token usage and output tokens/s. The response panel shows status, error envelope, hint, the time
to headers / first delta / total and the stream's timeline. Once the proxy's `/models` answered, the model
field offers the listed models and flags an unlisted one.

Every exchange lands in the **history**: pick one to see its own answer and table, copy it as curl or
Python (httpx, openai) — the bearer as `$HERMES_NB_AUTH_TOKEN`, never its value — or export it as JSON.
`ProbeConsole(history="probe.jsonl")` keeps the history in a file and reloads it, so it survives a kernel
restart (after one, the console says to run its cell again). The `slow` scenario makes streaming visible
(a pause before each delta).
"""),
        _guide_code('from hermes_nb import ProbeConsole\n\n'
              'console = ProbeConsole(scenario="slow", delay_s=0.2)\nconsole'),
        _md("""
The console can be driven from code too (the same calls its buttons make); `wait()` is for scripts,
a cell never needs it.
"""),
        _guide_code("console.send()\nconsole.wait()\nconsole.session.history[-1].exchange"),
        _md("""
## The magics

`%load_ext hermes_nb` registers `%hermes_check`, `%hermes_probe [--compare NAME]` and the cell magic
`%%hermes_chat [--endpoint URL] [--model M] [--scenario S] [--format markdown|text|code|json]`. They resolve
their config the way the CLI does (flags over `HERMES_NB_*` over a manifest over the defaults). Each result
is the cell's value, so the next cell has it as `_`.
"""),
        _guide_code("%load_ext hermes_nb"),
        _guide_code("%hermes_check"),
        _guide_code("%hermes_probe --compare hermes-agent-0.19.0"),
        _md("The cell body is the prompt; the answer streams into the output as Markdown, then the verdict and "
            "the token usage:"),
        _guide_code("%%hermes_chat --scenario slow\nIn one sentence: what does a smoke test prove?"),
        _guide_code("chat = _\nchat.exchange"),
        _md("""
## Back to the console

The same console, with what it did above in its history. When you are done, `console.close()` stops its
emulator and `%unload_ext hermes_nb` the ones the magics started (restarting the kernel does both).
"""),
        _guide_code("console"),
    ], "probe_console")


_BUILDERS = {WIRE_SPIKE: wire_format_spike, ADAPTER_CHECK: adapter_check, E2E_SMOKE: e2e_smoke, LOAD_NOTEBOOK: load,
             "probe_console": probe_console}
assert tuple(_BUILDERS) == SHIPPED_NOTEBOOKS, "core.facts names the notebooks built here"


def build(name: str) -> nbformat.NotebookNode:
    try:
        return _BUILDERS[name]()
    except KeyError:
        raise ValueError(f"unknown notebook {name!r}; known: {', '.join(SHIPPED_NOTEBOOKS)}") from None
