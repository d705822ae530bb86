"""`hermes-nb adapter add|show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hermes_nb.cli import main
from hermes_nb.core.config import UH_STRICT_KEYS
from hermes_nb.core.manifest import load_manifest

CANARY = "sk-canary-adapter-0123456789abcdef"


def manifest(root: Path) -> Path:
    return root / ".harness" / "adapters" / "hermes-proxy.yaml"


def test_add_writes_seed_template(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["[ADDED] hermes-proxy", f"  manifest: {manifest(tmp_path)}"]
    loaded = load_manifest(manifest(tmp_path))
    assert loaded.status == "experimental" and loaded.runtime == "hermes-proxy"
    rc = loaded.config.runtime_config if loaded.config else {}
    assert rc["endpoint"] == "http://127.0.0.1:8645/v1" and rc["stream"] is True


def test_add_uh_strict_only_uh_keys(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["adapter", "add", "--uh-strict", "--json", "--root", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["uh_strict"] is True and doc["manifest"] == str(manifest(tmp_path).resolve())
    rc = yaml.safe_load(manifest(tmp_path).read_text())["config"]["runtime_config"]
    assert set(rc) <= set(UH_STRICT_KEYS) and "auth_token" not in rc


def test_add_refuses_overwrite_without_force(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 0
    path = manifest(tmp_path)
    path.write_text(path.read_text() + "# edited\n")
    capsys.readouterr()
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "already exists (use --force to overwrite)" in err and len(err.strip().splitlines()) == 1
    assert path.read_text().endswith("# edited\n")
    assert main(["adapter", "add", "--force", "--root", str(tmp_path)]) == 0
    assert not path.read_text().endswith("# edited\n")


def test_add_through_symlink_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".harness").symlink_to(outside)
    assert main(["adapter", "add", "--root", str(tmp_path / "proj")]) == 2
    assert "symlink" in capsys.readouterr().err and list(outside.iterdir()) == []


def test_show_masks_secrets(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 0
    path = manifest(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["config"]["runtime_config"]["extra_headers"] = {"x-api-key": f"Bearer {CANARY}", "x-note": CANARY}
    doc["config"]["runtime_config"]["auth_token"] = "file-token-" + CANARY[::-1]  # the env one wins below
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", CANARY)
    capsys.readouterr()
    assert main(["adapter", "show", "--root", str(tmp_path)]) == 0
    human = capsys.readouterr().out
    assert main(["adapter", "show", "--json", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out)
    assert shown["runtime_config"]["model"] == "nousresearch/hermes-4-405b"
    assert shown["runtime_config"]["auth_token"] == "**********"
    assert CANARY not in out and CANARY not in human and "hermes-proxy" in human
    assert CANARY[::-1] not in out + human  # the manifest's own token, though not the effective one


def test_show_without_manifest_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["adapter", "show", "--root", str(tmp_path)]) == 2
    assert "manifest not found" in capsys.readouterr().err


def test_show_invalid_manifest_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest(tmp_path).parent.mkdir(parents=True)
    manifest(tmp_path).write_text(
        "id: hermes-proxy\nname: x\nruntime: hermes-proxy\nconfig: {runtime_config: {modl: x}}\n")
    assert main(["adapter", "show", "--root", str(tmp_path)]) == 2
    assert "unknown key 'modl'" in capsys.readouterr().err


def test_adapter_without_action_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adapter"]) == 2
    assert "choose an action" in capsys.readouterr().err


def test_add_accepts_uh_runtime_argument(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["adapter", "add", "hermes-proxy", "--root", str(tmp_path)]) == 0  # UH: adapter add <runtime>
    assert manifest(tmp_path).is_file()
    assert main(["adapter", "add", "claude-code", "--root", str(tmp_path / "x")]) == 2
    assert "RUNTIME: must be 'hermes-proxy'" in capsys.readouterr().err
