"""``hermes-nb schema``: print or write the JSON Schemas of runtime_config and the manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from hermes_nb.cli.output import Output
from hermes_nb.core.schema import schema_documents, write_schemas


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("schema", parents=[parent], help="print or write the JSON Schemas")
    p.add_argument("--write", metavar="DIR", help="write the schema files into DIR (e.g. docs/schema)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    docs = schema_documents()
    written: list[str] = []
    if args.write:
        written = [str(p) for p in write_schemas(Path(args.write))]
        for path in written:
            out.line(f"wrote {path}")
    else:
        import json

        for name, doc in docs.items():
            out.line(f"# {name}")
            out.line(json.dumps(doc, indent=2, sort_keys=True))
    out.emit({"schemas": docs, "written": written})
    return 0
