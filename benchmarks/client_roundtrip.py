"""P2 client round trip (not a test): HermesClient vs raw httpx vs the OpenAI SDK, same emulator, loopback.

One emulator process (``hermes-nb emulator --port 0``, profile hermes-agent, scenario ok: no pauses) answers
every variant; each variant sends the same chat request and reads the whole answer:

* **hermes_nb**: ``HermesClient(config).chat(messages)`` -- builds the request, sends it, decodes the SSE
  stream (or the JSON body), records every event and the Exchange (redaction, timings, pydantic records);
* **raw httpx**: ``httpx.Client`` sending the same body, reading the answer with ``iter_lines`` + ``json.loads``
  per ``data:`` line (streamed) or ``response.json()`` (not streamed), accumulating the text. ``fresh`` opens a
  new connection per request, as ``HermesClient`` does (its deadline watchdog is armed from the TCP connect);
  ``keep-alive`` reuses one connection (shown, not the baseline);
* **openai**: ``openai.OpenAI(..., max_retries=0).chat.completions.create`` over its own httpx client,
  iterating the stream's chunks (or reading the completion).

Variants run interleaved (round robin) so each sees the same machine load; wall time per round trip
(``perf_counter``); the figure is the median of ``--runs`` round trips after ``--warmup``. All variants must
produce the same text. The last lines read ``P2 streamed: hermes_nb / raw httpx (fresh) = <x> (target <= 1.10)``
and the same for non-streamed.

    .venv/bin/python benchmarks/client_roundtrip.py [--runs 300] [--warmup 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import httpx

from _child import endpoint_child
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.wire.client import HermesClient

TOKEN = "sk-bench-not-a-secret"
MESSAGES = [{"role": "user", "content": "Say hello for the round-trip benchmark."}]


def variants(endpoint: str, stream: bool) -> dict[str, Callable[[], str]]:
    config = HermesProxyRuntimeConfig(endpoint=endpoint, model="hermes-agent", auth_token=TOKEN, stream=stream,
                                      request_timeout_ms=30_000)
    hermes = HermesClient(config)
    body = {"model": "hermes-agent", "messages": MESSAGES, "stream": stream, "temperature": 0}
    if stream:
        body["stream_options"] = {"include_usage": True}
    headers = {"authorization": f"Bearer {TOKEN}"}
    if stream:
        headers["accept"] = "text/event-stream"
    url = endpoint + "/chat/completions"
    fresh = httpx.Client(trust_env=False, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))
    kept = httpx.Client(trust_env=False, timeout=30)

    import openai

    sdk = openai.OpenAI(base_url=endpoint, api_key=TOKEN, max_retries=0,
                        http_client=httpx.Client(trust_env=False, timeout=30))

    def run_hermes() -> str:
        ex = hermes.chat(MESSAGES)
        return ex.text or ""

    def raw(client: httpx.Client) -> Callable[[], str]:
        def go() -> str:
            if not stream:
                r = client.post(url, json=body, headers=headers)
                return r.json()["choices"][0]["message"]["content"]
            parts: list[str] = []
            with client.stream("POST", url, json=body, headers=headers) as r:
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    for choice in json.loads(data).get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content")
                        if piece:
                            parts.append(piece)
            return "".join(parts)
        return go

    def run_openai() -> str:
        if not stream:
            return sdk.chat.completions.create(model="hermes-agent", messages=MESSAGES, temperature=0,  # type: ignore[arg-type]
                                               stream=False).choices[0].message.content or ""
        parts = []
        for chunk in sdk.chat.completions.create(model="hermes-agent", messages=MESSAGES, temperature=0,  # type: ignore[arg-type]
                                                 stream=True, stream_options={"include_usage": True}):
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    return {"hermes_nb HermesClient": run_hermes, "raw httpx (fresh)": raw(fresh),
            "raw httpx (keep-alive)": raw(kept), "openai SDK": run_openai}


def measure(fns: dict[str, Callable[[], str]], runs: int, warmup: int) -> tuple[dict[str, list[float]], bool]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    texts: dict[str, str] = {}
    for i in range(warmup + runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            text = fn()
            elapsed = time.perf_counter() - start
            texts.setdefault(name, text)
            if i >= warmup:
                times[name].append(elapsed)
    same = len(set(texts.values())) == 1 and bool(next(iter(texts.values())))
    return times, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    ok = True
    ratios: list[str] = []
    with endpoint_child() as (_, endpoint):
        print(f"emulator {endpoint}; median of {args.runs} round trips per variant (interleaved, after "
              f"{args.warmup} warm-up)")
        for stream in (True, False):
            times, same = measure(variants(endpoint, stream), args.runs, args.warmup)
            label = "streamed" if stream else "non-streamed"
            if not same:
                print(f"MISMATCH ({label}): the variants produced different text")
                ok = False
            base = statistics.median(times["raw httpx (fresh)"])
            for name, values in times.items():
                med = statistics.median(values)
                q = statistics.quantiles(values, n=10)
                print(f"{label:13s} {name:24s} median {med * 1000:6.2f} ms  p10 {q[0] * 1000:6.2f}  "
                      f"p90 {q[-1] * 1000:6.2f}  x raw httpx (fresh) {med / base:.2f}")
            ours = statistics.median(times["hermes_nb HermesClient"])
            sdk = statistics.median(times["openai SDK"])
            ratios.append(f"P2 {label}: hermes_nb / raw httpx (fresh) = {ours / base:.2f} (target <= 1.10); "
                          f"hermes_nb / openai = {ours / sdk:.2f}")
    for line in ratios:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
