#!/usr/bin/env python3
"""Probe every hermes-agent release that ships `hermes proxy` and record its wire contract.

For each version: a throwaway venv with ``hermes-agent==<v>`` and aiohttp
(reused from ``--venv-root`` when already built), the real proxy started by
``hermes_nb.proxy.rig`` in the ``stale`` and ``live`` states, one probe each, and
``hermes_nb/data/contracts/hermes-agent-<v>.json`` (shipped in the wheel). Then the drift between
consecutive versions (and against the seed) is written into
``docs/wire-contract.md`` between the ``contract-matrix`` markers.

    .venv/bin/python scripts/contract_matrix.py                       # 0.16.0 … 0.19.0
    .venv/bin/python scripts/contract_matrix.py --versions 0.19.0 --hermes-bin 0.19.0=.venv-hermes/bin/hermes
    .venv/bin/python scripts/contract_matrix.py --doc-only            # regenerate the doc from the files

Only loopback traffic while probing; installing uses pip's configured index.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError
from hermes_nb.proxy.contracts import (
    compare,
    contract_document,
    contract_drift,
    dumps_contract,
    load_contract,
)
from hermes_nb.proxy.executable import hermes_version, live_supported, site_packages
from hermes_nb.proxy.probe import probe
from hermes_nb.proxy.rig import real_proxy

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")
BEGIN, END = "<!-- contract-matrix:begin -->", "<!-- contract-matrix:end -->"


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def ensure_venv(version: str, root: Path, python: str) -> Path:
    """``root/<version>`` with hermes-agent==version and aiohttp; returns its ``bin/hermes``."""
    venv = root / version
    stamp = venv / ".installed"
    hermes = venv / "bin" / "hermes"
    if stamp.exists() and hermes.exists():
        return hermes
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    f"hermes-agent=={version}", "aiohttp"], check=True)
    stamp.touch()
    return hermes


def has_proxy(hermes: Path) -> bool:
    return any((site / "hermes_cli" / "proxy" / "server.py").is_file() for site in site_packages(hermes))


def observe(version: str, hermes: Path) -> dict[str, Any]:
    """Probe the real proxy of ``hermes`` in stale and live; the contract document."""
    reports, startup, notes = {}, {}, []
    for state in ("stale", "live"):
        if state == "live" and live_supported(hermes) is False:
            notes.append("live: not probed: this release's proxy ignores NOUS_INFERENCE_BASE_URL (https host "
                         "allowlist), so it cannot forward to a loopback upstream without leaving the machine.")
            continue
        with real_proxy(state, hermes_bin=hermes) as rig:
            startup[state] = rig.startup_s
            reports[state] = probe(rig.endpoint)
    try:
        with real_proxy("logged-out", hermes_bin=hermes):
            logged_out = "started (no refusal)"
    except RigError as exc:
        found = re.search(r"exited (-?\d+) before it was ready: (.*)", str(exc))
        logged_out = f"exit {found.group(1)}: {found.group(2)}" if found else str(exc)
    notes.append("Observed by scripts/contract_matrix.py through hermes_nb.proxy.rig + hermes_nb.proxy.probe; do not edit.")
    notes.append("stale: tokens present, portal refusing connections; live: unsigned invoke JWT, "
                 "NOUS_INFERENCE_BASE_URL -> hermes_nb emulator (upstream profile).")
    notes.append("owners: fields of answers the proxy relayed (answered_by: upstream) describe the upstream and "
                 "are information only; everything else is the proxy's and drifts (docs/wire-contract.md).")
    doc = contract_document(reports, target=f"hermes-agent {version}", notes=notes)
    if "live" in reports:  # the rule's proof: another upstream behind the same proxy shows no proxy drift
        with real_proxy("live", hermes_bin=hermes, upstream="minimal") as rig:
            drift = compare(probe(rig.endpoint, model="minimal-chat-1"), doc, state="live")
        doc["notes"].append("live with the minimal upstream instead: " + (
            "no drift on proxy-owned fields" if not drift else "drift: " + "; ".join(str(d) for d in drift)))
    doc["logged_out"] = logged_out
    times = ", ".join(f"{k} {v:.2f}s" for k, v in startup.items())
    print(f"  {version}: proxy startup {times}", file=sys.stderr)
    return doc


def _drift_lines(expected: dict[str, Any], observed: dict[str, Any]) -> list[str]:
    drift = contract_drift(expected, observed)
    return [f"- `{d.field}`{str(d)[len(d.field):]}" for d in drift] or ["- none"]


def render_doc_block(out_dir: Path) -> str:
    files = sorted(out_dir.glob("hermes-agent-*.json"), key=lambda p: _version_key(p.stem.rsplit("-", 1)[1]))
    docs = [(p.stem.rsplit("-", 1)[1], load_contract(p)) for p in files]
    lines = [BEGIN, "", "_Generated by `scripts/contract_matrix.py`; do not edit between the markers._", ""]
    lines += ["| version | contract | states probed | logged-out start | server (recorded) |", "|---|---|---|---|---|"]
    for version, doc in docs:
        server = next(iter(doc["states"].values())).get("server_observed")
        lines.append(f"| {version} | [hermes-agent-{version}.json](../hermes_nb/data/contracts/hermes-agent-{version}.json) "
                     f"| {', '.join(sorted(doc['states']))} | {doc.get('logged_out', '-')} | `{server}` |")
    seed = load_contract(out_dir / "seed.json")
    if docs:
        latest_version, latest = docs[-1]
        lines += ["", f"### seed → hermes-agent {latest_version}", ""] + _drift_lines(seed, latest)
    for (va, a), (vb, b) in zip(docs, docs[1:]):
        lines += ["", f"### {va} → {vb}", ""] + _drift_lines(a, b)
    lines += ["", END]
    return "\n".join(lines)


def update_doc(doc_path: Path, block: str) -> None:
    text = doc_path.read_text("utf-8") if doc_path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n## Observed contracts per version\n\n" + block + "\n"
    doc_path.write_text(text, "utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", default=",".join(DEFAULT_VERSIONS), help="comma-separated versions")
    ap.add_argument("--venv-root", default="/tmp/hermes-nb-matrix", help="where the per-version venvs live")
    ap.add_argument("--hermes-bin", action="append", default=[], metavar="VERSION=PATH",
                    help="use an existing hermes for VERSION instead of building a venv")
    ap.add_argument("--python", default="python3", help="interpreter for the venvs")
    ap.add_argument("--out-dir", default=str(REPO / "hermes_nb" / "data" / "contracts"))
    ap.add_argument("--doc", default=str(REPO / "docs" / "wire-contract.md"))
    ap.add_argument("--doc-only", action="store_true", help="only regenerate the doc block from the files")
    args = ap.parse_args(argv)
    out_dir, given = Path(args.out_dir), dict(item.split("=", 1) for item in args.hermes_bin)
    failures = 0
    if not args.doc_only:
        for version in [v.strip() for v in args.versions.split(",") if v.strip()]:
            t0 = time.monotonic()
            try:
                hermes = Path(given[version]) if version in given else ensure_venv(
                    version, Path(args.venv_root), args.python)
            except subprocess.CalledProcessError as exc:
                print(f"{version}: install failed ({exc})", file=sys.stderr)
                failures += 1
                continue
            installed = hermes_version(hermes)
            if installed != version:
                print(f"{version}: {hermes} is hermes-agent {installed}; skipped", file=sys.stderr)
                failures += 1
                continue
            if not has_proxy(hermes):
                print(f"{version}: no `hermes proxy` in this release; skipped", file=sys.stderr)
                continue
            try:
                doc = observe(version, hermes)
            except RigError as exc:
                print(f"{version}: rig failed: {exc}", file=sys.stderr)
                failures += 1
                continue
            path = out_dir / f"hermes-agent-{version}.json"
            path.write_text(dumps_contract(doc), "utf-8")
            print(f"{version}: wrote {path} ({time.monotonic() - t0:.1f}s)", file=sys.stderr)
    update_doc(Path(args.doc), render_doc_block(out_dir))
    print(f"updated {args.doc}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
