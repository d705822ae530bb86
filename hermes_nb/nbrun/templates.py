"""The shipped notebooks (the smoke's three and the load receipt's), generated from code so they are reproducible.

``hermes-nb notebooks refresh`` writes them from these templates, executes
them against the deterministic emulator and stores the outputs that nbval
compares. Conventions (tested in tests/nbrun/test_notebooks.py):

* one cell tagged ``parameters``, literals only, each line
  ``name: type = default  # help`` (papermill's ``--help-notebook`` reads it);
  ``Optional`` types are written as a string annotation so the cell needs no import;
* no secret is ever a parameter: the kernel reads ``HERMES_NB_AUTH_TOKEN``;
* cells only call ``hermes_nb`` (the kernel-side kit, :mod:`hermes_nb.kit`) and end with the object itself:
  its ``_repr_html_`` (coloured verdict, secrets masked, stream timeline) is what the notebook shows;
* the last cell closes the target and records the verdict (raises unless passed).
"""

from __future__ import annotations

from collections.abc import Sequence

import nbformat

from hermes_nb.core.facts import ADAPTER_CHECK, DEFAULT_MODEL, E2E_SMOKE, LOAD_NOTEBOOK, TEMPLATED_NOTEBOOKS, WIRE_SPIKE
from hermes_nb.load.spec import LoadSpec

__all__ = ["KERNELSPEC", "Param", "build", "build_all"]

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

Param = tuple[str, str, str, str]  # name, type, default literal, help

#: an emulator already listening for this notebook (the smoke's runner starts each notebook's own, with the
#: notebook's profile and scenario: :mod:`hermes_nb.nbrun.smoke`), so the kernel need not start one
_EMULATOR_PARAM: Param = (
    "emulator", '"Optional[str]"', "None",
    "an emulator already running for this notebook (hermes-nb smoke starts one; only when endpoint is None; "
    "None: start one here)",
)

_TARGET_PARAMS: list[Param] = [
    ("endpoint", '"Optional[str]"', "None",
     "proxy endpoint incl. /v1 (None: HERMES_NB_ENDPOINT, else start the embedded emulator here)"),
    ("model", '"Optional[str]"', "None", f"model id, sent verbatim (None: HERMES_NB_MODEL, else {DEFAULT_MODEL})"),
    ("profile", "str", '"hermes-agent"', "emulator profile (only when endpoint is None)"),
    ("scenario", "str", '"ok"', "emulator scenario (only when endpoint is None)"),
    _EMULATOR_PARAM,
]

_MANIFEST_PARAM: Param = (
    "manifest", '"Optional[str]"', "None", "adapter manifest whose runtime_config is the base (None: defaults)",
)

#: the config is resolved once (``kit.runtime_config``, or ``kit.prepare_job`` for a mission), then aimed at the target
_SETUP = """from IPython.display import HTML

from hermes_nb import kit
from hermes_nb.kit import display as show
{imports}
{resolve}
target = kit.start_target({config}, profile=profile, scenario=scenario,
                          emulator=emulator)
config = target.config
HTML(show.kv_table({{"target": target.kind, "endpoint": target.endpoint, "model": config.model}}, title="target"))"""


def _setup(imports: str, resolve: str = "", config: str = "kit.runtime_config(endpoint, model)") -> str:
    return _SETUP.format(imports=imports, resolve=resolve, config=config).replace("\n\n\n", "\n\n")

_SECRETS_NOTE = (
    "Secrets are never parameters (papermill writes parameter values into the output notebook): "
    "the bearer token, if any, is read inside the kernel from `HERMES_NB_AUTH_TOKEN` and never displayed."
)


def _md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


#: a cell whose output is a measurement (timings): nbval runs it and does not compare what it shows
_MEASURED = ("nbval-ignore-output",)


def _code(source: str, tags: Sequence[str] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _params(params: Sequence[Param]) -> nbformat.NotebookNode:
    lines = [f"{name}: {typ} = {default}  # {help_}" for name, typ, default, help_ in params]
    return _code("\n".join(lines), tags=["parameters"])


def _notebook(cells: list[nbformat.NotebookNode], title: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["hermes_nb"] = {"template": title}
    # stable ids keep git diffs of refreshed notebooks small
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{title.replace('_', '-')}-{i:02d}"
    return nb


def wire_format_spike() -> nbformat.NotebookNode:
    params = _TARGET_PARAMS + [
        ("contract", "str", '"hermes-agent-0.19.0"',
         "wire contract: a name shipped with hermes_nb (e.g. seed; the detected provider's) or a JSON path"),
        ("deadline_s", "float", "30.0", "budget for the whole probe, seconds"),
    ]
    return _notebook([
        _md(f"""
# Wire-format spike

Probes every route the Hermes proxy is known to forward (`/v1/models`, chat completions streamed and not,
the Responses API, error envelopes, bearer handling, `/health`) and compares what it sees with the recorded wire
contract of the provider the proxy fronts (shipped with hermes_nb; see `docs/wire-contract.md`). Only fields the
proxy owns can drift; what the upstream behind it answers differently (body keys beyond the OpenAI floor, models,
routes, body cap, texts) is shown as information, and what it could not answer (too slow, down, rate-limited) is
not judged. **Passed** = reachable and no drift; **failed** = drift; **blocked** = unreachable, or an upstream
that is down or rate-limited.

Runbook: `hermes-nb smoke --only wire_format_spike --endpoint http://127.0.0.1:8645/v1`. {_SECRETS_NOTE}
"""),
        _params(params),
        _code(_setup("from hermes_nb.proxy.contracts import (compare, load_contract, not_judged, resolve_contract,\n"
                     "                                     upstream_differences)\n"
                     "from hermes_nb.proxy.probe import probe\n")),
        _md("## Probe the routes"),
        _code("report = probe(config, deadline_s=deadline_s)\nreport"),
        _md("## Compare with the recorded contract (the detected provider's)"),
        _code("recorded = load_contract(resolve_contract(contract, provider=report.provider))\n"
              "skipped = not_judged(report, recorded)  # the upstream's trouble (slow, down, 429): never drift\n"
              "upstream = upstream_differences(report, recorded)  # information: the upstream owns these fields\n"
              "display(HTML(show.upstream_differences_html(upstream)))\n"
              "drift = compare(report, recorded)  # proxy-owned fields only: these fail the spike\n"
              "drift"),
        _md("## Verdict\n\nStops the embedded emulator, records the summary for the receipt, raises unless passed."),
        _code("target.close()\n"
              "kit.record_verdict(kit.wire_summary(report, drift, target=target, model=config.model, "
              "contract=contract,\n"
              "                                   upstream=upstream, not_judged=skipped))"),
    ], WIRE_SPIKE)


def adapter_check() -> nbformat.NotebookNode:
    params = _TARGET_PARAMS + [
        _MANIFEST_PARAM,
        ("deadline_s", "float", "30.0", "deadline of GET /models, seconds (a slow upstream answers late)"),
    ]
    return _notebook([
        _md(f"""
# Adapter check

`GET /health` (which provider the proxy fronts), then `GET <endpoint>/models` with the configured bearer,
classified the way UH's `adapter check hermes-proxy` does: **ready** (passed), **locked**, **unreachable** or
**rate_limited** (blocked: the provider's re-auth command, `hermes proxy start --provider …`, or a later
retry), **misconfigured**/**error** (failed). With no model configured, the provider's default model.

Runbook: `hermes-nb smoke --only adapter_check --endpoint http://127.0.0.1:8645/v1`. {_SECRETS_NOTE}
"""),
        _params(params),
        _code(_setup("from hermes_nb.proxy.check import adapter_check\n",
                     config="kit.runtime_config(endpoint, model, manifest=manifest)")),
        _md("## Runtime config (token masked)"),
        _code("HTML(show.kv_table(config.to_document(), title=\"runtime_config\"))"),
        _md("## Check"),
        _code("result = adapter_check(config, deadline_s=deadline_s, hermes_bin=target.hermes_bin)\nresult"),
        _md("## Verdict"),
        _code("target.close()\nkit.record_verdict(kit.check_summary(result, target=target))"),
    ], ADAPTER_CHECK)


def e2e_smoke() -> nbformat.NotebookNode:
    params = _TARGET_PARAMS + [
        ("mission", '"Optional[str]"', "None", "path to a mission.yaml (None: use the ad-hoc prompt below)"),
        ("prompt", "str", '"Summarise in one sentence what a smoke test proves."',
         "ad-hoc prompt (when mission is None)"),
        ("root", '"Optional[str]"', "None",
         "run root (artifacts under <root>/.harness) (None: the mission's harness root, else a temp dir)"),
        _MANIFEST_PARAM,
        ("request_timeout_s", '"Optional[float]"', "None",
         "longest wait for the answer to start and longest silence, seconds (None: the config's request_timeout_ms)"),
    ]
    return _notebook([
        _md(f"""
# End-to-end smoke

One mission run through the proxy exactly as UH's `mission run --runtime hermes-proxy` would do it: the
prompt with the final-message instruction, one streamed chat completion, the sentinel block extracted,
the run artifacts written (`runtime-result.yaml`, `runtime.stdout.log`, `runtime-final.txt`, `prompt.md`,
`events.ndjson`, `request.json`: the request sent, secrets masked). The verdict is the runtime result's
status; the receipt carries the sha256 of the artifacts and keeps copies of them. A passed receipt
against a **live** proxy is what `hermes-nb promote` accepts.

Runbook: `hermes-nb smoke --only e2e_smoke --endpoint http://127.0.0.1:8645/v1`. {_SECRETS_NOTE}
"""),
        _params(params),
        _code(_setup("", resolve="# prepared as `hermes-nb run` prepares it: the mission's runtime_config_overrides "
                             "are a layer\n"
                             "job = kit.prepare_job(mission, prompt, root=root, manifest=manifest, endpoint=endpoint, "
                             "model=model,\n"
                             "                      request_timeout_s=request_timeout_s)",
                     config="job.config")),
        _md("## Mission and runtime config (token masked)"),
        _code("HTML(show.kv_table({\"mission\": job.mission.id, \"title\": job.mission.display_name, "
              "**config.to_document()},\n"
              "                   title=\"mission\"))"),
        _md("## Model\n\nThe adapter check's own answer (the provider the proxy fronts, its default model when none "
            "is configured): both notebooks send one model; a default the proxy does not list is not sent."),
        _code("preflight = kit.model_preflight(config)\n"
              "config = preflight.config\n"
              "job = job.replace(config=config)\n"
              "preflight"),
        _md("## Run"),
        _code("result = kit.run_job(job, target) if preflight.runnable else None\nresult"),
        _md("## Verdict"),
        _code("summary = kit.run_summary(result, target=target, config=config, preflight=preflight)\n"
              "target.close()\nkit.record_verdict(summary)"),
    ], E2E_SMOKE)


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
              "from hermes_nb.load import receipt, views\nfrom hermes_nb.load.plots import plot\n"
              "from hermes_nb.load.spec import LoadSpec\n\n"
              f"spec = LoadSpec.build(\"notebook\", {names})\nspec"),
        _md("## Measure\n\nOne row per level (`*`: a percentile resting on too few samples). The pictures follow, "
            "one per cell, as images (they render on GitHub too)."),
        _code("result = receipt.measure_or_read(spec)\nHTML(views.report_html(result, plots=False))", tags=_MEASURED),
        _md("""
## Latency by concurrency

p50 (the typical request), p95 and p99 (the slow tail); hollow points rest on too few samples. A TTFT that grows
with concurrency while ITL stays flat means requests queue before they start; a growing ITL means the streams
themselves slow down. Dashed: the upstream's own p50 and p99 (with `direct`).
"""),
        _code('plot(result, "latency")', tags=_MEASURED),
        _md("## Gaps between tokens\n\nEvery pause between two tokens, pooled: a p99 or max far above the ITL is a "
            "stall or a buffer; the second panel is the share of streams with a gap over `stall_s`."),
        _code('plot(result, "gaps")', tags=_MEASURED),
        _md("## Throughput\n\nWhere requests/s flattens while latency still rises, something is saturated; the "
            "second panel is latency against the throughput achieved."),
        _code('plot(result, "throughput")', tags=_MEASURED),
        _md("## Errors by class\n\nThe share of each level's requests that failed; the ramp stops after the first "
            "level with a 429."),
        _code('plot(result, "errors")', tags=_MEASURED),
        _md("## Every request\n\nThe E2E distribution per level and each request's E2E over the run, from the raw "
            "samples."),
        _code('plot(result, "distribution")', tags=_MEASURED),
        _md("## Verdict\n\nRecords the summary (with the digests of the report and its samples) and raises unless "
            "passed."),
        _code("kit.record_verdict(receipt.summary(result, spec.report))"),
    ], LOAD_NOTEBOOK)


_BUILDERS = {WIRE_SPIKE: wire_format_spike, ADAPTER_CHECK: adapter_check, E2E_SMOKE: e2e_smoke, LOAD_NOTEBOOK: load}


def build(name: str) -> nbformat.NotebookNode:
    try:
        return _BUILDERS[name]()
    except KeyError:
        raise ValueError(f"unknown notebook {name!r}; known: {', '.join(TEMPLATED_NOTEBOOKS)}") from None


def build_all() -> dict[str, nbformat.NotebookNode]:
    return {name: build(name) for name in TEMPLATED_NOTEBOOKS}

