import json
from pathlib import Path

import pytest

from hermes_nb import ConfigError, HermesProxyRuntimeConfig
from hermes_nb.core.config import merge_runtime_config, parse_overrides_json, validate_config
from hermes_nb.core.errors import UnknownKeyError
from hermes_nb.core.manifest import AdapterManifest, load_manifest, manifest_template, save_manifest, schema_documents
from tests.helpers import ROOT

CANARY = "sk-canary-7f3a9c1e55d0"


def test_defaults_follow_the_seed():
    cfg = validate_config({"model": "m"})
    assert cfg.endpoint == "http://127.0.0.1:8645/v1"
    assert cfg.auth_token.get_secret_value() == "hermes-proxy"
    assert cfg.temperature == 0
    assert cfg.request_timeout_ms == 300_000
    assert cfg.stream is True
    assert cfg.max_tokens is None and cfg.provider is None and cfg.extra_headers == {}


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("http://127.0.0.1:8645/v1/", "http://127.0.0.1:8645/v1"),
        ("https://proxy.local/v1//", "https://proxy.local/v1"),
        ("http://localhost:1/v1", "http://localhost:1/v1"),
    ],
)
def test_endpoint_trailing_slash_normalised(raw, expected):
    assert validate_config({"model": "m", "endpoint": raw}).endpoint == expected


@pytest.mark.parametrize(
    "bad", ["ftp://x/v1", "not a url", "", "http:///v1", "http://h/v1?x=1", "http://user:sk-canary-123456@h/v1",
            "ftp://user:sk-canary-123456@h/v1", "http://user:sk-canary-123456@/v1"]
)
def test_endpoint_rejects_non_http(bad):
    with pytest.raises(ConfigError) as info:
        validate_config({"model": "m", "endpoint": bad})
    assert "endpoint" in str(info.value)
    assert "sk-canary" not in str(info.value)


def test_unknown_key_is_named_with_suggestion():
    with pytest.raises(UnknownKeyError) as info:
        validate_config({"model": "m", "request_timeout": 5})
    assert info.value.key == "request_timeout"
    assert info.value.suggestion == "request_timeout_ms"
    assert "request_timeout_ms" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "patch, word",
    [
        ({"model": ""}, "model"),
        ({"model": "   "}, "model"),
        ({"auth_token": ""}, "auth_token"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": -0.1}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"request_timeout_ms": 0}, "request_timeout_ms"),
        ({"provider": "openai"}, "provider"),
        ({"extra_headers": {"x-a": 1}}, "extra_headers"),
        ({"extra_headers": {"bad name": "v"}}, "extra_headers"),
    ],
)
def test_invalid_values_one_line_each(patch, word):
    with pytest.raises(ConfigError) as info:
        validate_config({"model": "m", **patch})
    assert word in str(info.value)
    assert all("\n" not in p for p in info.value.problems)


def test_missing_model_is_reported():
    with pytest.raises(ConfigError, match="missing required key 'model'"):
        validate_config({})


def test_token_never_prints():
    cfg = validate_config({"model": "m", "auth_token": CANARY, "extra_headers": {"X-Api-Key": f"{CANARY}x"}})
    for text in (repr(cfg), str(cfg), cfg.model_dump_json(), json.dumps(cfg.to_document())):
        assert CANARY not in text
    assert CANARY in cfg.secrets()
    assert cfg.to_document(reveal_secrets=True)["auth_token"] == CANARY


def test_extra_headers_lower_cased():
    cfg = validate_config({"model": "m", "extra_headers": {"X-Trace": "1"}})
    assert cfg.extra_headers == {"x-trace": "1"}


def test_merge_order_manifest_then_mission_then_cli():
    base = {"model": "a", "temperature": 0.1, "endpoint": "http://127.0.0.1:1/v1"}
    cfg = merge_runtime_config(base, {"model": "b", "temperature": 0.5}, {"model": "c"})
    assert (cfg.model, cfg.temperature, cfg.endpoint) == ("c", 0.5, "http://127.0.0.1:1/v1")


def test_merge_revalidates_strictly():
    with pytest.raises(UnknownKeyError, match="modle"):
        merge_runtime_config({"model": "a"}, {"modle": "b"})
    with pytest.raises(ConfigError, match="must be an object"):
        merge_runtime_config({"model": "a"}, ["x"])  # type: ignore[list-item]


@pytest.mark.parametrize("text, msg", [("[1]", "JSON object"), ("{", "not valid JSON"), ('"s"', "JSON object")])
def test_overrides_json(text, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_overrides_json(text)
    assert parse_overrides_json('{"model": "x"}') == {"model": "x"}


def test_manifest_roundtrip(tmp_path):
    path = tmp_path / "hermes-proxy.yaml"
    save_manifest(manifest_template(), path)
    loaded = load_manifest(path)
    assert loaded.status == "experimental"
    assert loaded.runtime_config().model == "nousresearch/hermes-4-405b"
    with pytest.raises(ConfigError, match="already exists"):
        save_manifest(manifest_template(), path)
    save_manifest(manifest_template(uh_strict=True), path, force=True)
    rc = load_manifest(path).config.runtime_config
    assert set(rc) <= {"endpoint", "model", "provider", "request_timeout_ms", "extra_headers"}


def test_manifest_unknown_key_and_bad_yaml(tmp_path):
    path = tmp_path / "hermes-proxy.yaml"
    path.write_text("id: hermes-proxy\nname: n\nruntime: hermes-proxy\nstatsu: active\n")
    with pytest.raises(UnknownKeyError) as info:
        load_manifest(path)
    assert info.value.suggestion == "status"
    path.write_text("id: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_manifest(path)
    path.write_text(
        "id: hermes-proxy\nname: n\nruntime: hermes-proxy\n"
        "config:\n  runtime_config:\n    model: m\n    stream_it: true\n"
    )
    with pytest.raises(UnknownKeyError, match="stream_it"):
        load_manifest(path)


def test_committed_schemas_match_models():
    for name, doc in schema_documents().items():
        committed = json.loads((ROOT / "docs" / "schema" / name).read_text())
        assert committed == doc, f"docs/schema/{name} is stale: run `make schema`"


def test_schema_marks_strictness():
    docs = schema_documents()
    runtime = docs["hermes-proxy-runtime-config.schema.json"]
    assert runtime["additionalProperties"] is False
    assert runtime["required"] == ["model"]
    assert AdapterManifest.model_json_schema()["additionalProperties"] is False
    assert HermesProxyRuntimeConfig.model_fields["auth_token"].default.get_secret_value() == "hermes-proxy"


@pytest.mark.parametrize("port", [0, 65536, 99999])
def test_endpoint_port_out_of_range_is_a_config_error(port: int) -> None:
    with pytest.raises(ConfigError, match=f"port {port} is out of range"):
        validate_config({"model": "m", "endpoint": f"http://127.0.0.1:{port}/v1"})


@pytest.mark.parametrize("command", [["check"], ["run", "--prompt", "hi"]])
def test_cli_port_99999_exits_2_not_unreachable(command: list[str], capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    from hermes_nb.cli import main

    code = main([*command, "--endpoint", "http://127.0.0.1:99999/v1", "--model", "m", "--root", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "port 99999 is out of range" in captured.out + captured.err
    assert "refused" not in captured.out + captured.err
