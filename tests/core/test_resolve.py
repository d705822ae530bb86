"""One resolver for every face: the layers' precedence, each key's origin, and the faces that use it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_nb import ConfigError, kit, resolve_runtime_config
from hermes_nb.cli import main
from hermes_nb.core.errors import UnknownKeyError
from hermes_nb.core.facts import DEFAULT_MODEL, ENV_ENDPOINT, manifest_path
from hermes_nb.core.manifest import manifest_template, save_manifest
from hermes_nb.emulator import serve_emulator

CANARY = "sk-canary-resolve-0123456789"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    save_manifest(manifest_template(endpoint="http://127.0.0.1:1/v1", model="from-manifest"), manifest_path(tmp_path))
    return tmp_path


def test_defaults_alone() -> None:
    config = resolve_runtime_config(environ={})
    assert config.model == DEFAULT_MODEL and config.origin("model") == "default"
    assert config.origin("endpoint") == "default"


@pytest.mark.parametrize("layer", ["manifest", "mission", "env", "overrides", "argument"])
def test_each_layer_wins_over_the_ones_below_it(root: Path, layer: str) -> None:
    order = ["manifest", "mission", "env", "overrides", "argument"]
    given = order[: order.index(layer) + 1]
    config = resolve_runtime_config(
        root=root,
        mission_overrides={"model": "from-mission"} if "mission" in given else None,
        environ={"HERMES_NB_MODEL": "from-env"} if "env" in given else {},
        overrides=json.dumps({"model": "from-overrides"}) if "overrides" in given else None,
        model="from-argument" if "argument" in given else None,
    )
    assert config.model == f"from-{layer}"
    origin = config.origin("model")
    assert origin == ("env HERMES_NB_MODEL" if layer == "env" else
                      f"manifest {manifest_path(root)}" if layer == "manifest" else layer)
    assert config.endpoint == "http://127.0.0.1:1/v1"  # untouched keys keep the manifest's value


def test_env_reads_only_our_prefix() -> None:
    config = resolve_runtime_config(environ={"HERMES_ENDPOINT": "http://127.0.0.1:9/v1", "NOUS_MODEL": "x",
                                             ENV_ENDPOINT: "http://127.0.0.1:7/v1", "HERMES_NB_AUTH_TOKEN": CANARY})
    assert config.endpoint == "http://127.0.0.1:7/v1" and config.origin("endpoint") == "env HERMES_NB_ENDPOINT"
    assert config.auth_token.get_secret_value() == CANARY and CANARY not in repr(config)


def test_none_arguments_are_not_given_and_bad_layers_are_one_line(root: Path) -> None:
    assert resolve_runtime_config(root=root, environ={}, endpoint=None).origin("endpoint").startswith("manifest")
    with pytest.raises(UnknownKeyError, match="'temprature'.*temperature"):
        resolve_runtime_config(environ={}, overrides={"temprature": 1})
    with pytest.raises(ConfigError, match="not valid JSON"):
        resolve_runtime_config(environ={}, overrides="{nope")
    other = manifest_template()
    other.runtime = "codex"
    with pytest.raises(ConfigError, match="runtime is 'codex'"):
        resolve_runtime_config(manifest=other, environ={})


def test_the_kernel_side_job_follows_the_environment() -> None:
    with serve_emulator() as emu:
        job = kit.open_job("adapter_check", environ={ENV_ENDPOINT: emu.endpoint + "/"})
        assert (job.target.kind, job.target.endpoint, job.config.origin("endpoint")) == (
            "live", emu.endpoint, f"env {ENV_ENDPOINT}")
        job.close()
    job = kit.open_job("adapter_check", environ={})
    assert job.target.kind == "emulator" and job.config.origin("endpoint") == "emulator"
    job.close()
    with serve_emulator() as emu:
        job = kit.open_job("adapter_check", endpoint=emu.endpoint, environ={ENV_ENDPOINT: "http://127.0.0.1:5/v1"})
        assert job.config.endpoint == emu.endpoint and job.config.origin("endpoint") == "argument"
        job.close()
    assert kit.open_job("adapter_check", endpoint="http://127.0.0.1:6/v1",
                        environ={"HERMES_NB_MODEL": "env-model"}).config.model == "env-model"


def test_smoke_targets_hermes_nb_endpoint_and_the_receipt_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with serve_emulator() as emu:
        monkeypatch.setenv(ENV_ENDPOINT, emu.endpoint)
        code = main(["smoke", "--only", "adapter_check", "--out", str(tmp_path), "--no-html", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["endpoint"] == emu.endpoint
    assert out["target_kind"] == "emulator" and out["target_evidence"]  # it is our emulator: never "live"
    receipt = json.loads(next(tmp_path.rglob("adapter_check.receipt.json")).read_text())["receipt"]
    assert receipt["endpoint"] == emu.endpoint and receipt["endpoint_origin"] == "env HERMES_NB_ENDPOINT"
