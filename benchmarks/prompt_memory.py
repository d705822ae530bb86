"""P7 prompt memory (not a test): peak RSS of ``hermes-nb run --prompt-file`` with a 10 MB prompt.

One emulator process (``hermes-nb emulator --port 0``, the real proxy's 10 MB body cap) answers; each size runs
as one ``hermes-nb run --prompt-file F --no-sandbox --json`` process and its peak RSS is ``ru_maxrss`` from
``os.wait4``. The baseline, run side by side: the same command with a 1 KB prompt file (the process floor:
interpreter, imports, one run). The figure is (peak − floor) / prompt size; target ≤ 3 (the prompt read,
rendered into the mission's message and encoded once into the request, nothing more: prompt.md is the one
stored copy, the records refer to it by digest and size). A 10 MB prompt is over the proxy's cap, so the run
ends ``failed`` (HTTP 413) after the whole request was built and sent: the costly path.

    .venv/bin/python benchmarks/prompt_memory.py [--sizes 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _child import endpoint_child

MB = 1_000_000
WORDS = "the harness hands the proxy one long mission prompt and keeps it in prompt md once "


def run_rss(endpoint: str, prompt: Path, root: Path) -> tuple[int, str]:
    """(peak RSS bytes, status) of one ``hermes-nb run --prompt-file`` process."""
    cmd = [sys.executable, "-m", "hermes_nb.cli", "run", "--prompt-file", str(prompt), "--endpoint", endpoint,
           "--model", "bench", "--root", str(root), "--no-sandbox", "--json"]
    root.mkdir(exist_ok=True)
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env={**os.environ})
        _, code, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        raw = out.read()
    doc = json.loads(raw) if raw.strip().startswith(b"{") else {}
    status = doc.get("status") or doc.get("error") or f"exit {os.waitstatus_to_exitcode(code)}"
    return usage.ru_maxrss * 1024, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10", help="prompt sizes in MB, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (the median is reported)")
    args = parser.parse_args(argv)
    ok = True
    with endpoint_child() as (_, endpoint), tempfile.TemporaryDirectory(prefix="hermes-nb-p7-") as tmp:
        base = Path(tmp)
        small = base / "floor.txt"
        small.write_text((WORDS * 20)[:1000])
        for mb in (float(s) for s in args.sizes.split(",")):
            size = int(mb * MB)
            big = base / f"prompt-{mb:g}.txt"
            big.write_text((WORDS * (size // len(WORDS) + 1))[:size])
            floors, peaks = [], []
            for i in range(args.repeat):  # interleaved: floor and peak see the same machine load
                floor, _ = run_rss(endpoint, small, base / f"r{i}")
                peak, status = run_rss(endpoint, big, base / f"r{i}")
                floors.append(floor)
                peaks.append(peak)
            floor, peak = sorted(floors)[len(floors) // 2], sorted(peaks)[len(peaks) // 2]
            growth = (peak - floor) / size
            print(f"1 KB prompt (the floor): peak RSS {floor / MB:.0f} MB; "
                  f"{mb:g} MB prompt: peak RSS {peak / MB:.0f} MB ({status})")
            print(f"P7 {mb:g} MB prompt: (peak - floor) / prompt = {growth:.2f}x (target <= 3)")
            ok = ok and growth <= 3
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
