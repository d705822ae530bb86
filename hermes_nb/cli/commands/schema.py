"""Print the JSON Schemas of runtime_config and the adapter manifest, or write them into a directory."""

import json
from pathlib import Path

from pydantic import Field

from hermes_nb.cli.app import Output
from hermes_nb.core.manifest import schema_documents, write_schemas
from hermes_nb.core.spec import Spec

HELP = "print or write the JSON Schemas"


class SPEC(Spec):
    write: str | None = Field(None, description="write the schema files into this directory (e.g. docs/schema)")


def handle(spec: SPEC, out: Output) -> int:
    docs = schema_documents()
    written = [str(p) for p in write_schemas(Path(spec.write))] if spec.write else []
    for line in [f"wrote {p}" for p in written] if spec.write else [
            f"# {name}\n{json.dumps(doc, indent=2, sort_keys=True)}" for name, doc in docs.items()]:
        out.line(line)
    out.emit({"schemas": docs, "written": written})
    return 0
