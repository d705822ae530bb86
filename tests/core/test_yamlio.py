"""YAML goes through libyaml's C loader when PyYAML has it (an 11 MB mission took 15 s)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

import hermes_nb
from hermes_nb.core import yamlio
from hermes_nb.core.manifest import load_manifest, manifest_template, save_manifest
from hermes_nb.harness.mission import load_mission

PACKAGE = Path(hermes_nb.__file__).parent


def test_the_c_loader_is_used_when_libyaml_is_present() -> None:
    assert (yamlio.SafeLoader is not yaml.SafeLoader) is bool(getattr(yaml, "__with_libyaml__", False))
    if yaml.__with_libyaml__:
        assert yamlio.SafeLoader is yaml.CSafeLoader


def test_no_module_reads_or_writes_yaml_past_yamlio() -> None:
    """Every yaml.load/safe_load/dump/safe_dump call lives in core/yamlio.py."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "yamlio.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml"
                    and node.attr in ("load", "safe_load", "load_all", "safe_load_all", "dump", "safe_dump")):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} yaml.{node.attr}")
    assert offenders == []


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_missions_and_manifests_are_read_with_the_c_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaders: list[Any] = []
    real = yaml.load

    def spy(stream: Any, Loader: Any) -> Any:  # noqa: N803 - PyYAML's spelling
        loaders.append(Loader)
        return real(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", spy)
    mission = tmp_path / "mission.yaml"
    mission.write_text("schema_version: uh.mission.v0\nid: m\ntitle: T\nworkflow_profile: research-docs\n")
    load_mission(mission)
    manifest = tmp_path / "hermes-proxy.yaml"
    save_manifest(manifest_template(), manifest)
    load_manifest(manifest)
    assert loaders and all(loader is yaml.CSafeLoader for loader in loaders)
