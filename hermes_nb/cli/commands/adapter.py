"""Write or show <root>/.harness/adapters/hermes-proxy.yaml (the seed §9 template, status experimental).
exit: 0 written or shown, 2 exists without --force, not writable, or not found."""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from hermes_nb.cli.app import Output
from hermes_nb.core.errors import ArtifactError, ConfigError
from hermes_nb.core.facts import RUNTIME, manifest_path
from hermes_nb.core.manifest import load_manifest, manifest_document, manifest_template, save_manifest
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions, find_manifest
from hermes_nb.core.spec import Opt, Spec
from hermes_nb.core.yamlio import dump_yaml
from hermes_nb.harness.artifacts import refuse_symlinks

HELP = "write or show the hermes-proxy adapter manifest"


class AddSpec(Spec):
    runtime: Annotated[Literal["hermes-proxy"], Opt(positional=True)] = Field(
        "hermes-proxy", description="the runtime to add, as in UH's `adapter add <runtime>` (only hermes-proxy)")
    root: str | None = Field(None, description="project root (default: the current directory)")
    uh_strict: bool = Field(False, description="write only the runtime_config keys UH's strict schema accepts")
    force: bool = Field(False, description="overwrite an existing manifest")


class ShowSpec(Spec):
    root: str | None = Field(None, description="project root (default: the current directory)")
    manifest: str | None = Field(None, description="manifest path (default: the one under --root)")


def handle_add(spec: AddSpec, out: Output) -> int:
    root = Path(spec.root or Path.cwd())
    if not root.is_dir():
        raise ArtifactError(f"root {root} is not a directory")
    refuse_symlinks(root, path := manifest_path(root))
    manifest = manifest_template(uh_strict=spec.uh_strict)
    try:
        written = save_manifest(manifest, path, force=spec.force)
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc.strerror}") from None
    out.line(f"[ADDED] hermes-proxy\n  manifest: {written}")
    out.emit({"added": RUNTIME, "manifest": str(written.resolve()), "uh_strict": spec.uh_strict,
              "document": manifest_document(manifest)})
    return 0


def handle_show(spec: ShowSpec, out: Output) -> int:
    root = Path(spec.root or Path.cwd())
    path = find_manifest(root, spec.manifest)
    if path is None:
        raise ConfigError(f"{manifest_path(root)}: manifest not found (run `hermes-nb adapter add`)")
    manifest = load_manifest(path)
    config = ConfigOptions(root=str(root), manifest=str(path)).runtime_config()
    # the file's own token and the effective one (HERMES_NB_AUTH_TOKEN may differ), plus secret shapes
    redactor = Redactor([*config.secrets(), *manifest.runtime_config().secrets()])
    document, effective = redactor.data(manifest_document(manifest)), redactor.data(config.to_document())
    out.line(f"# {path}\n{dump_yaml(document, block_strings=False).rstrip()}")
    out.line(f"# effective runtime_config (manifest + HERMES_NB_* environment)\n"
             f"{dump_yaml(effective, block_strings=False).rstrip()}")
    out.emit({"manifest": str(path.resolve()), "document": document, "runtime_config": effective})
    return 0


ACTIONS = {"add": (AddSpec, handle_add, "write .harness/adapters/hermes-proxy.yaml (seed §9 template)"),
           "show": (ShowSpec, handle_show, "show the manifest and the effective runtime_config")}
