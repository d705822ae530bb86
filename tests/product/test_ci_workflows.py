"""docs/ci/ cannot rot: every command the two copy-ready workflows run, run here against the emulator.

The workflows' commands are read from the YAML (GitHub: each job's ``run:`` steps; GitLab: each job's
``script:``) and run with ``bash -e`` in a checkout-like directory (copies of the Makefile and the pins,
older than the installed ``.venv`` they link to, so ``make install`` is the no-op it is on a warm runner).
``uses:`` steps are not run; instead the paths they upload and the JUnit report they publish must exist
afterwards. The self-hosted jobs point at a real proxy through ``HERMES_NB_ENDPOINT``: here that is
the embedded emulator (``hermes-agent`` profile) on a loopback port — the smoke relabels such a target
``emulator``, so the commands, flags, paths and exit codes are what is tested, not a real proxy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema
import yaml

from tests.helpers import JUNIT_XSD, ROOT

GITHUB = ROOT / "docs" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
GITLAB_RESERVED = {"stages", "default", "variables", "cache", "workflow", "include", "image", "services",
                   "before_script", "after_script"}


@pytest.fixture(scope="module")
def emulator_endpoint():
    from hermes_nb.emulator import serve_emulator

    with serve_emulator(profile="hermes-agent") as emu:
        yield emu.endpoint


def _checkout(tmp_path: Path) -> Path:
    """A directory that looks like a fresh checkout with a warm .venv: make install is up to date."""
    stamp = ROOT / ".venv" / ".installed"
    assert stamp.is_file(), "run `make install` first"
    work = tmp_path / "checkout"
    work.mkdir()
    older = stamp.stat().st_mtime - 60
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-hermes.lock"):
        shutil.copy2(ROOT / name, work / name)
        os.utime(work / name, (older, older))
    for name in (".venv", ".venv-hermes"):
        if (ROOT / name).exists():
            (work / name).symlink_to((ROOT / name).resolve())
    return work


#: the GitHub run the job commands think they are in (the summary links it)
RUN = {"GITHUB_SERVER_URL": "https://github.example", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "42"}


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_", "GITHUB_", "CI_"))}


def _substitute(value: str, table: dict[str, str], key: str) -> str:
    if "${{" not in str(value):
        return str(value)
    assert key in table, f"the test has no stand-in for the expression in env {key}: {value}"
    return table[key]


def _run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert "${{" not in cmd, f"a run command uses an expression; pass it through env instead: {cmd}"
    proc = subprocess.run(["bash", "-e", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"`{cmd}` exited {proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-2500:]}"
    return proc


def _junit_ok(path: Path) -> None:
    assert path.is_file(), f"JUnit report {path.name} not written"
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))


def _github_jobs() -> dict:
    return yaml.safe_load(GITHUB.read_text())["jobs"]


def _gitlab_jobs() -> dict:
    doc = yaml.safe_load(GITLAB.read_text())
    return {name: job for name, job in doc.items() if name not in GITLAB_RESERVED and not name.startswith(".")}


def test_the_workflows_have_the_promised_jobs() -> None:
    gh, gl = _github_jobs(), _gitlab_jobs()
    assert set(gh) == {"smoke-emulator", "smoke-live"} and set(gl) == {"smoke:emulator", "smoke:live"}
    assert any("make smoke" in s.get("run", "") for s in gh["smoke-emulator"]["steps"])
    assert "self-hosted" in gh["smoke-live"]["runs-on"]
    assert any("--endpoint" in s.get("run", "") for s in gh["smoke-live"]["steps"])
    assert "push" in yaml.safe_load(GITHUB.read_text())[True]  # YAML 1.1 reads the key `on` as True
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in gh["smoke-live"]["steps"])
    for job in gl.values():
        assert job["artifacts"]["reports"]["junit"] and job["artifacts"]["when"] == "always"
    assert gl["smoke:live"]["allow_failure"] == {"exit_codes": [3]}


SCHEMAS = [(GITHUB, "vendor.github-workflows", "    timeout-minutes: 30", "    timeout-minute: 30"),
           (GITLAB, "vendor.gitlab-ci", "  resource_group: hermes-proxy", "  resource_groups: hermes-proxy")]


@pytest.mark.parametrize(("path", "schema", "good", "bad"), SCHEMAS, ids=["github", "gitlab"])
def test_the_workflows_are_valid_against_the_schemas_check_jsonschema_vendors(path: Path, schema: str, good: str,
                                                                              bad: str, tmp_path: Path) -> None:
    """Offline: check-jsonschema's vendored copies of the GitHub-workflow and GitLab-CI schemas (no download; any
    network use would hit a dead proxy). A copy with one misspelt key must fail, so the check can fail."""
    env = {**_base_env(), "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}

    def check(target: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(target)],
                              capture_output=True, text=True, timeout=120, env=env)

    ok = check(path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert good in path.read_text()
    broken = tmp_path / path.name
    broken.write_text(path.read_text().replace(good, bad))
    failed = check(broken)
    assert failed.returncode == 1 and bad.split(":")[0].strip() in failed.stdout, failed.stdout + failed.stderr


def test_the_live_jobs_run_where_they_can_reach_the_proxy_and_are_guarded() -> None:
    live = _github_jobs()["smoke-live"]
    assert live["concurrency"] == {"group": "hermes-proxy-live", "cancel-in-progress": False}
    assert live["timeout-minutes"] and live["environment"] == "hermes-proxy"
    assert "default_branch" in live["if"] and "workflow_dispatch" in live["if"]  # the branch filter
    labels = yaml.safe_load((ROOT / "docs" / "ci" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    standard = {"self-hosted", "linux", "x64"}
    assert set(live["runs-on"]) - standard == set(labels) == {"hermes-proxy"}
    gl = _gitlab_jobs()["smoke:live"]
    assert gl["inherit"] == {"default": False}  # not the default image: its loopback would be the container's
    assert gl["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}]
    assert gl["resource_group"] and gl["timeout"]
    text = GITLAB.read_text()
    assert "*shell* executor" in text and 'network_mode = "host"' in text


@pytest.mark.parametrize("job_name", ["smoke-emulator", "smoke-live"])
def test_github_actions_job_commands_pass_against_the_emulator(job_name: str, tmp_path: Path,
                                                               emulator_endpoint: str) -> None:
    job = _github_jobs()[job_name]
    work = _checkout(tmp_path)
    env = _base_env() | {k: _substitute(v, {"HERMES_NB_ENDPOINT": emulator_endpoint}, k)
                         for k, v in (job.get("env") or {}).items()}
    summaries = []
    for i, step in enumerate(job["steps"]):
        if "run" not in step:
            continue
        summary = tmp_path / f"step-{i}-summary.md"  # GitHub gives every step its own summary file
        _run(step["run"], work, env | {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true",
                                       "GITHUB_WORKSPACE": str(work), **RUN})
        if summary.exists():
            summaries.append(summary.read_text())
    assert any("| notebook | verdict |" in s and "passed (exit 0)" in s for s in summaries), summaries
    text = next(s for s in summaries if "| notebook | verdict |" in s)
    assert "CI run: https://github.example/o/r/actions/runs/42 " in text  # where the receipts are, as artifacts
    assert str(work) not in text and "| `receipts" in text  # paths relative to the artifact root, as uploaded
    for step in job["steps"]:
        uses, with_ = step.get("uses", ""), step.get("with") or {}
        if uses.startswith("actions/upload-artifact"):
            for line in str(with_["path"]).split():
                assert (work / line).exists(), f"{job_name} uploads {line}, which was not written"
        if uses.startswith("mikepenz/action-junit-report"):
            _junit_ok(work / with_["report_paths"])


@pytest.mark.parametrize("job_name", ["smoke:emulator", "smoke:live"])
def test_gitlab_ci_job_scripts_pass_against_the_emulator(job_name: str, tmp_path: Path, emulator_endpoint: str) -> None:
    doc = yaml.safe_load(GITLAB.read_text())
    job = _gitlab_jobs()[job_name]
    work = _checkout(tmp_path)
    variables = {**(doc.get("variables") or {}), **(job.get("variables") or {})}
    variables = {k: re.sub(r"\$CI_PROJECT_DIR", str(work), str(v)) for k, v in variables.items()}
    if "HERMES_NB_ENDPOINT" in variables:  # the real proxy's endpoint → the emulator's
        variables["HERMES_NB_ENDPOINT"] = emulator_endpoint
    env = _base_env() | variables | {"GITLAB_CI": "true", "CI_PROJECT_DIR": str(work),
                                     "CI_JOB_URL": "https://gitlab.example/o/r/-/jobs/7"}
    for cmd in [*(doc.get("before_script") or []), *(job.get("before_script") or []), *job["script"]]:
        _run(cmd, work, env)
    artifacts = job["artifacts"]
    for path in artifacts["paths"]:
        assert (work / path).exists(), f"{job_name} keeps {path}, which was not written"
    _junit_ok(work / artifacts["reports"]["junit"])
    summary = (work / "smoke-summary.md").read_text()  # receipts linked inside the job's artifacts
    assert "](https://gitlab.example/o/r/-/jobs/7/artifacts/file/receipts" in summary and str(work) not in summary
