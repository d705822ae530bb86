"""Hermetic tests: no proxy env, no Hermes env, no user ~/.hermes; and the fixtures several folders share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from hermes_nb.rig.rig import RigHandle, real_proxy
from tests.helpers import S3_BUCKET, release_bin

# `make fuzz`: pytest --hypothesis-profile=fuzz (tests/product/test_fuzz.py sizes itself from the profile)
settings.register_profile("fuzz", max_examples=4000, deadline=None)

#: pytest's tmp_path directories on tmpfs when it has room: the suite writes thousands of small files (artifacts,
#: receipts, indexes, each replaced atomically), and on a disk filesystem every replace waits on the disk. Only
#: pytest's own directories (numbered and cleaned up by pytest as usual): TMPDIR, which the kernels and the package
#: use (and the notebooks' sanitize rules expect), stays where it is.
SHM, SHM_MIN_FREE = Path("/dev/shm"), 2 << 30
if "PYTEST_DEBUG_TEMPROOT" not in os.environ and SHM.is_dir() and os.access(SHM, os.W_OK):
    _free = os.statvfs(SHM)
    if _free.f_bavail * _free.f_frsize >= SHM_MIN_FREE:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(SHM)

_CLEAR_PREFIXES = ("HERMES_", "NOUS_")
_CLEAR_NAMES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
                "GITHUB_STEP_SUMMARY"}  # a test run inside GitHub Actions must not write the job summary


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in list(os.environ):
        upper = name.upper()
        if upper.startswith(_CLEAR_PREFIXES) or upper in _CLEAR_NAMES:
            monkeypatch.delenv(name, raising=False)
    # Anything that would default to ~/.hermes lands in a throwaway directory instead.
    monkeypatch.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("hermes-home")))
    # per-version hermes-agent venvs (hermes-nb matrix) never land in the user's cache dir
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path_factory.mktemp("hermes-nb-cache")))
    # recorded contract sets (hermes-nb contract record) never land in the user's data dir
    monkeypatch.setenv("HERMES_NB_CONTRACTS_DIR", str(tmp_path_factory.mktemp("hermes-nb-contracts")))


@dataclass
class SmokeRun:
    """What ``hermes-nb smoke --out <out> --json`` printed (``doc``) and wrote (``out``), ``canary`` its token."""

    out: Path
    doc: dict
    canary: str


@pytest.fixture(scope="session")
def default_smoke(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    """The README's main command, once per session, as a subprocess: ``hermes-nb smoke --out <dir> --json`` (three
    notebooks against the embedded emulator) with a canary token in its environment, which is hermetic like every
    test's. For the tests that only read what it printed and wrote."""
    out = tmp_path_factory.mktemp("default-smoke")
    canary = "sk-canary-smoke-0123456789abcdef"
    env = {k: v for k, v in os.environ.items()
           if not (k.upper().startswith(_CLEAR_PREFIXES) or k.upper() in _CLEAR_NAMES)}
    env |= {"HERMES_HOME": str(tmp_path_factory.mktemp("hermes-home")), "HERMES_NB_AUTH_TOKEN": canary,
            "HERMES_NB_CACHE_DIR": str(tmp_path_factory.mktemp("hermes-nb-cache")),
            "HERMES_NB_CONTRACTS_DIR": str(tmp_path_factory.mktemp("hermes-nb-contracts"))}
    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "smoke", "--out", str(out), "--json"],
                          capture_output=True, text=True, env=env, timeout=110)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return SmokeRun(out, json.loads(proc.stdout), canary)


# ------------------------------------------------------------------ receipts in S3 (tests/nbrun)

@pytest.fixture(scope="module")
def moto_url():
    """An S3-compatible server (moto) on loopback, one per module that asks for it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Dummy credentials; every S3 call to the loopback server; anything else would hit a dead proxy."""
    import boto3
    from papermill.s3 import S3

    env = {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": moto_url, "BOTO3_ENDPOINT_URL": moto_url,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-creds"),
        "AWS_EC2_METADATA_DISABLED": "true", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(S3, "s3_session", (None, None, None))  # papermill caches its boto3 session per class
    s3 = boto3.client("s3", endpoint_url=moto_url)
    for obj in s3.list_objects_v2(Bucket=S3_BUCKET).get("Contents", []) if S3_BUCKET in [
            b["Name"] for b in s3.list_buckets()["Buckets"]] else []:
        s3.delete_object(Bucket=S3_BUCKET, Key=obj["Key"])
    if S3_BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=S3_BUCKET)
    return env


# ------------------------------------------------------------------ the real proxy (tests/rig, tests/emulator, …)

@pytest.fixture(scope="session")
def shared_rig() -> Iterator[Callable[..., RigHandle]]:
    """``shared_rig(release, state, provider="nous")``: a running real proxy, started once per session and kept for
    every test that only reads from it (a test that changes a rig's state, e.g. parks its credential or stops its
    upstream, starts its own). A release whose venv is missing is a skip naming its make target."""
    started: dict[tuple[str, str, str], RigHandle] = {}
    with ExitStack() as stack:
        def get(release: str, state: str, provider: str = "nous") -> RigHandle:
            key = (release, state, provider)
            if key not in started:
                started[key] = stack.enter_context(real_proxy(state, provider=provider,
                                                              hermes_bin=release_bin(release)))
            return started[key]

        yield get
        for rig in started.values():  # stalled streams end with their upstream, or each proxy waits on them
            if rig.upstream is not None:
                rig.upstream.close()
