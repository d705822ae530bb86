"""``hermes-nb adapter add|show``: write or show ``.harness/adapters/hermes-proxy.yaml``."""

from __future__ import annotations

import argparse

from hermes_nb.cli.options import config_from_args, root_of
from hermes_nb.cli.output import Output
from hermes_nb.core.errors import ArtifactError, ConfigError, UsageError
from hermes_nb.core.facts import MANIFEST_RELPATH, RUNTIME, manifest_path
from hermes_nb.core.manifest import load_manifest, manifest_document, manifest_template, save_manifest
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import find_manifest
from hermes_nb.core.yamlio import dump_yaml
from hermes_nb.harness.artifacts import refuse_symlinks

__all__ = ["register"]


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("adapter", parents=[parent], help="write or show the hermes-proxy adapter manifest")
    actions = p.add_subparsers(dest="adapter_action", metavar="ACTION")
    add = actions.add_parser(
        "add", parents=[parent], help=f"write {MANIFEST_RELPATH.as_posix()} (seed §9 template)",
        description=f"Write <root>/{MANIFEST_RELPATH.as_posix()} (status experimental).\n"
                    "exit: 0 written, 2 exists without --force or not writable.")
    add.add_argument("runtime", nargs="?", default=RUNTIME, metavar="RUNTIME",
                     help="the runtime to add, as in UH's `adapter add <runtime>` (only hermes-proxy)")
    add.add_argument("--root", metavar="DIR", help="project root (default: current directory)")
    add.add_argument("--uh-strict", action="store_true",
                     help="write only the runtime_config keys UH's strict schema accepts")
    add.add_argument("--force", action="store_true", help="overwrite an existing manifest")
    add.set_defaults(handler=handle_add)
    show = actions.add_parser("show", parents=[parent], help="show the manifest and the effective runtime_config")
    show.add_argument("--root", metavar="DIR", help="project root (default: current directory)")
    show.add_argument("--manifest", metavar="PATH", help="manifest path (default: the one under --root)")
    show.set_defaults(handler=handle_show)
    p.set_defaults(handler=_need_action)


def _need_action(args: argparse.Namespace, out: Output) -> int:
    raise UsageError("hermes-nb adapter: choose an action: add or show")


def handle_add(args: argparse.Namespace, out: Output) -> int:
    if args.runtime != RUNTIME:
        raise UsageError(f"hermes-nb adapter add: unknown runtime {args.runtime!r} (only 'hermes-proxy')")
    root = root_of(args)
    if not root.is_dir():
        raise ArtifactError(f"root {root} is not a directory")
    path = manifest_path(root)
    refuse_symlinks(root, path)
    manifest = manifest_template(uh_strict=args.uh_strict)
    try:
        written = save_manifest(manifest, path, force=args.force)
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc.strerror}") from None
    out.line("[ADDED] hermes-proxy")
    out.line(f"  manifest: {written}")
    out.emit({"added": RUNTIME, "manifest": str(written.resolve()), "uh_strict": args.uh_strict,
              "document": manifest_document(manifest)})
    return 0


def handle_show(args: argparse.Namespace, out: Output) -> int:
    root = root_of(args)
    path = find_manifest(root, args.manifest)
    if path is None:
        raise ConfigError(f"{manifest_path(root)}: manifest not found (run `hermes-nb adapter add`)")
    manifest = load_manifest(path)
    config = config_from_args(argparse.Namespace(root=str(root), manifest=str(path)))
    # the file's own token and the effective one (HERMES_NB_AUTH_TOKEN may differ), plus secret shapes
    redactor = Redactor([*config.secrets(), *manifest.runtime_config().secrets()])
    document = redactor.data(manifest_document(manifest))
    effective = redactor.data(config.to_document())
    out.line(f"# {path}")
    out.line(dump_yaml(document, block_strings=False).rstrip())
    out.line("# effective runtime_config (manifest + HERMES_NB_* environment)")
    out.line(dump_yaml(effective, block_strings=False).rstrip())
    out.emit({"manifest": str(path.resolve()), "document": document, "runtime_config": effective})
    return 0
