#!/usr/bin/env python3
"""Probe every hermes-agent release that ships `hermes proxy` and record its wire contract, per provider.

For each version: its venv (``hermes_nb.proxy.venvs``: ``$HERMES_NB_CACHE_DIR``, built on first use, or
``--hermes-bin V=PATH``), and for each provider the release ships (``--providers``, default every one
``hermes proxy providers`` lists: nous, xai) the real proxy started by ``hermes_nb.proxy.rig`` in the
``stale`` and ``live`` states, one probe each, and ``hermes_nb/data/contracts/hermes-agent-<v>.json``
(nous, the proxy's default provider) or ``hermes-agent-<v>-<provider>.json`` (shipped in the wheel).
Then the drift between consecutive versions (and against the seed), and between the providers of one
release, is written into ``docs/wire-contract.md`` between the ``contract-matrix`` markers.

    .venv/bin/python scripts/contract_matrix.py                       # 0.16.0 … 0.19.0, nous and xai
    .venv/bin/python scripts/contract_matrix.py --versions 0.19.0 --providers xai \
        --hermes-bin 0.19.0=.venv-hermes/bin/hermes
    .venv/bin/python scripts/contract_matrix.py --doc-only            # regenerate the doc from the files

Only loopback traffic while probing (the rig's egress sink ends any other attempt locally); installing
uses pip's configured index.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError
from hermes_nb.core.providers import PROXY_PROVIDERS, provider_info
from hermes_nb.proxy.contracts import (
    compare,
    contract_document,
    contract_drift,
    contract_file_name,
    dumps_contract,
    load_contract,
)
from hermes_nb.proxy.executable import hermes_version, live_supported, site_packages
from hermes_nb.proxy.probe import probe
from hermes_nb.proxy.rig import real_proxy
from hermes_nb.proxy.venvs import ensure_hermes

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")
BEGIN, END = "<!-- contract-matrix:begin -->", "<!-- contract-matrix:end -->"


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def has_proxy(hermes: Path) -> bool:
    return any((site / "hermes_cli" / "proxy" / "server.py").is_file() for site in site_packages(hermes))


def ships_provider(hermes: Path, provider: str) -> bool:
    """Does this release's proxy register ``provider``? (``hermes_cli/proxy/adapters/__init__.py``)"""
    for site in site_packages(hermes):
        registry = site / "hermes_cli" / "proxy" / "adapters" / "__init__.py"
        if registry.is_file():
            text = registry.read_text("utf-8", "replace")
            return re.search(rf"[\"']{re.escape(provider)}[\"']\s*:", text) is not None
    return False


_HOW = {
    "nous": "stale: tokens present, portal refusing connections; live: unsigned invoke JWT, "
            "NOUS_INFERENCE_BASE_URL -> hermes_nb emulator (upstream profile).",
    "xai": "stale: a pooled xai-oauth credential whose JWT expired an hour ago; its refresh (OIDC discovery at "
           "auth.x.ai) ends at the rig's loopback egress sink; live: a pooled credential with an unsigned JWT "
           "(+24 h), base_url -> hermes_nb emulator (upstream profile).",
}


def observe(version: str, hermes: Path, provider: str = "nous") -> dict[str, Any]:
    """Probe the real proxy of ``hermes`` (``--provider provider``) in stale and live; the contract document."""
    reports, startup, notes, egress = {}, {}, [], []
    for state in ("stale", "live"):
        if state == "live" and live_supported(hermes, provider) is False:
            notes.append("live: not probed: this release's proxy ignores NOUS_INFERENCE_BASE_URL (https host "
                         "allowlist), so it cannot forward to a loopback upstream without leaving the machine.")
            continue
        with real_proxy(state, provider=provider, hermes_bin=hermes) as rig:
            startup[state] = rig.startup_s
            reports[state] = probe(rig.endpoint, provider=provider)
        egress += rig.egress
    try:
        with real_proxy("logged-out", provider=provider, hermes_bin=hermes):
            logged_out = "started (no refusal)"
    except RigError as exc:
        found = re.search(r"exited (-?\d+) before it was ready: (.*?)(; the proxy needs|$)", str(exc))
        logged_out = f"exit {found.group(1)}: {found.group(2)}" if found else str(exc)
    notes.append("Observed by scripts/contract_matrix.py through hermes_nb.proxy.rig + hermes_nb.proxy.probe; "
                 "do not edit.")
    notes.append(_HOW[provider])
    notes.append("owners: fields of answers the proxy relayed (answered_by: upstream) describe the upstream and "
                 "are information only; everything else is the proxy's and drifts (docs/wire-contract.md).")
    if egress:
        hosts = sorted({line.split()[1] for line in egress if len(line.split()) > 1})
        notes.append(f"off-machine attempts, each ended at the rig's loopback egress sink: {', '.join(hosts)}")
    doc = contract_document(reports, target=f"hermes-agent {version}", notes=notes,
                            provider=provider)
    if "live" in reports:  # the rule's proof: another upstream behind the same proxy shows no proxy drift
        with real_proxy("live", provider=provider, hermes_bin=hermes, upstream="minimal") as rig:
            drift = compare(probe(rig.endpoint, model="minimal-chat-1", provider=provider), doc, state="live")
        doc["notes"].append("live with the minimal upstream instead: " + (
            "no drift on proxy-owned fields" if not drift else "drift: " + "; ".join(str(d) for d in drift)))
    doc["logged_out"] = logged_out
    times = ", ".join(f"{k} {v:.2f}s" for k, v in startup.items())
    print(f"  {version} {provider}: proxy startup {times}", file=sys.stderr)
    return doc


def _drift_lines(expected: dict[str, Any], observed: dict[str, Any]) -> list[str]:
    drift = contract_drift(expected, observed)
    return [f"- `{d.field}`{str(d)[len(d.field):]}" for d in drift] or ["- none"]


def _contract_files(out_dir: Path, provider: str) -> list[tuple[str, dict[str, Any]]]:
    """``[(version, document)]`` of one provider, oldest release first."""
    found = []
    for path in out_dir.glob("hermes-agent-*.json"):
        rest = path.stem[len("hermes-agent-"):]
        version, _, suffix = rest.partition("-")
        if (suffix or "nous") == provider:
            found.append((version, load_contract(path)))
    return sorted(found, key=lambda item: _version_key(item[0]))


def render_doc_block(out_dir: Path, providers: tuple[str, ...] = PROXY_PROVIDERS) -> str:
    lines = [BEGIN, "", "_Generated by `scripts/contract_matrix.py`; do not edit between the markers._", ""]
    lines += ["| version | provider | contract | states probed | logged-out start | server (recorded) |",
              "|---|---|---|---|---|---|"]
    per: dict[str, list[tuple[str, dict[str, Any]]]] = {p: _contract_files(out_dir, p) for p in providers}
    rows = sorted(((v, p, d) for p, docs in per.items() for v, d in docs),
                  key=lambda row: (_version_key(row[0]), providers.index(row[1])))
    for version, provider, doc in rows:
        name = contract_file_name(f"hermes-agent-{version}", provider)
        server = next(iter(doc["states"].values())).get("server_observed")
        lines.append(f"| {version} | {provider} | [{name}.json](../hermes_nb/data/contracts/{name}.json) "
                     f"| {', '.join(sorted(doc['states']))} | {doc.get('logged_out', '-')} | `{server}` |")
    seed = load_contract(out_dir / "seed.json")
    nous = per.get("nous") or []
    if nous:
        latest_version, latest = nous[-1]
        lines += ["", f"### seed → hermes-agent {latest_version} (nous)", ""] + _drift_lines(seed, latest)
    for provider, docs in per.items():
        for (va, a), (vb, b) in pairwise(docs):
            lines += ["", f"### {va} → {vb} ({provider})", ""] + _drift_lines(a, b)
    by_version = {v: d for v, d in nous}
    for provider in providers[1:]:  # the providers of one release differ by design: documented, never drift
        shared = [(v, d) for v, d in per.get(provider, []) if v in by_version]
        if shared:
            version, doc = shared[-1]
            label = provider_info(provider).display_name if provider_info(provider) else provider
            lines += ["", f"### nous → {provider} in hermes-agent {version} ({label}; documented, not drift)",
                      ""] + _drift_lines(by_version[version], doc)
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
    ap.add_argument("--providers", default=",".join(PROXY_PROVIDERS),
                    help=f"comma-separated providers (default {','.join(PROXY_PROVIDERS)})")
    ap.add_argument("--hermes-bin", action="append", default=[], metavar="VERSION=PATH",
                    help="use an existing hermes for VERSION instead of the cached venv")
    ap.add_argument("--out-dir", default=str(REPO / "hermes_nb" / "data" / "contracts"))
    ap.add_argument("--doc", default=str(REPO / "docs" / "wire-contract.md"))
    ap.add_argument("--doc-only", action="store_true", help="only regenerate the doc block from the files")
    args = ap.parse_args(argv)
    out_dir, given = Path(args.out_dir), dict(item.split("=", 1) for item in args.hermes_bin)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    unknown = [p for p in providers if p not in PROXY_PROVIDERS]
    if unknown:
        ap.error(f"--providers: unknown {', '.join(unknown)}; choose from {', '.join(PROXY_PROVIDERS)}")
    failures = 0
    if not args.doc_only:
        for version in [v.strip() for v in args.versions.split(",") if v.strip()]:
            t0 = time.monotonic()
            try:
                hermes = Path(given[version]) if version in given else ensure_hermes(
                    version, progress=lambda m: print(m, file=sys.stderr))
            except RigError as exc:
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
            for provider in providers:
                if not ships_provider(hermes, provider):
                    print(f"{version}: no `--provider {provider}` in this release; skipped", file=sys.stderr)
                    continue
                try:
                    doc = observe(version, hermes, provider)
                except RigError as exc:
                    print(f"{version} {provider}: rig failed: {exc}", file=sys.stderr)
                    failures += 1
                    continue
                path = out_dir / f"{contract_file_name(f'hermes-agent-{version}', provider)}.json"
                path.write_text(dumps_contract(doc), "utf-8")
                print(f"{version} {provider}: wrote {path} ({time.monotonic() - t0:.1f}s)", file=sys.stderr)
    update_doc(Path(args.doc), render_doc_block(out_dir))
    print(f"updated {args.doc}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
