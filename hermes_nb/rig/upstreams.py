"""What answers behind the rig's live proxy: the emulator, the minimal upstream, or a server from a command.

``real_proxy(upstream=…)`` (:mod:`hermes_nb.rig.rig`) takes ``emulator`` (the emulator's
``upstream`` profile), ``minimal`` (the emulator's ``minimal`` profile) or a command line with
``{port}`` that starts any OpenAI-compatible server on ``127.0.0.1:{port}/v1`` (e.g. llmock from
``.venv-upstream``). A command upstream runs in the rig's temp home with a minimal environment, is
ready once ``GET /v1/models`` gets any HTTP answer, and is stopped with the rig.
"""

from __future__ import annotations

import shlex
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.model import EndpointHandle
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.scenarios import MODELS_BY_PROVIDER
from hermes_nb.rig.executable import base_env, free_port, last_lines, stop_process, wait_until_answers

__all__ = ["UPSTREAMS", "CommandUpstream", "upstream_command", "start_upstream"]


#: ``upstream=`` names the rig knows; anything else is a command line (see :func:`real_proxy`)
UPSTREAMS: tuple[str, ...] = ("emulator", "minimal")


class CommandUpstream(EndpointHandle):
    """An OpenAI-compatible server the rig started from a command line; the string is its ``/v1`` endpoint."""

    endpoint: str
    command: list[str]
    process: subprocess.Popen[Any]
    log_path: Path

    def __repr__(self) -> str:
        return f"CommandUpstream(endpoint={self.endpoint!r}, command={self.command[0]!r}, pid={self.process.pid})"

    @property
    def requests(self) -> list[Any]:
        return []  # a foreign server: the rig does not see what it received


def upstream_command(command: str, port: int) -> list[str]:
    """``command`` split like a shell would, with ``{port}`` replaced; UsageError when it has no ``{port}``."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"upstream command {command!r}: {exc}") from None
    if not argv or not any("{port}" in a for a in argv):
        raise UsageError(f"upstream {command!r}: give emulator, minimal, or a command line with {{port}} "
                         "(e.g. 'llmock serve --host 127.0.0.1 --port {port}')")
    return [a.replace("{port}", str(port)) for a in argv]


def _wait_upstream(proc: subprocess.Popen[Any], endpoint: str, *, deadline_s: float, log_path: Path) -> None:
    """Poll ``GET <endpoint>/models`` until any HTTP answer; RigError on early exit or deadline."""
    if not wait_until_answers(proc, endpoint,
                              lambda client: client.request("GET", "/models", auth=False, deadline_s=1.0).status
                              is not None,
                              deadline_s=deadline_s, what=f"upstream command did not answer GET {endpoint}/models"):
        tail = last_lines(log_path.read_text("utf-8", "replace"))
        raise RigError(f"upstream command exited {proc.returncode} before it answered: {tail or '(no output)'}")


def start_upstream(stack: ExitStack, upstream: str, scenario: str, *, root: Path, deadline_s: float,
                   provider: str = "nous") -> Any:
    """The server behind the proxy: the emulator (``upstream`` profile, listing ``provider``'s models), the minimal
    upstream, or a command."""
    if upstream in UPSTREAMS:
        if upstream == "minimal":
            return stack.enter_context(serve_emulator(profile="minimal", scenario=scenario))
        return stack.enter_context(serve_emulator(profile="upstream", scenario=scenario,
                                                  models=MODELS_BY_PROVIDER[provider]))
    port = free_port()
    argv = upstream_command(upstream, port)
    if "/" in argv[0] and not Path(argv[0]).is_absolute():  # the command runs in the rig's temp home
        argv[0] = str(Path(argv[0]).absolute())
    endpoint = f"http://127.0.0.1:{port}/v1"
    log_path = root / "upstream.log"
    env = base_env(home=root / "home") | {"TMPDIR": str(root / "tmp")}
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=root / "home", start_new_session=True)
        except OSError as exc:
            raise RigError(f"cannot start upstream {argv[0]}: {exc.strerror or exc}") from None
    stack.callback(stop_process, proc)
    _wait_upstream(proc, endpoint, deadline_s=deadline_s, log_path=log_path)
    return CommandUpstream(endpoint, command=argv, process=proc, log_path=log_path)
