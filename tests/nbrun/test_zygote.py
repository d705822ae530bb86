"""The opt-in kernel fork server (hermes_nb.nbrun.zygote + fork_provisioner): forked kernels are fresh, isolated
kernels, plugged through jupyter_client's provisioner entry point and a kernelspec only."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.nbrun import zygote as zygote_mod
from hermes_nb.nbrun.fork_provisioner import PROVISIONER_NAME, ForkProvisioner
from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool

pytestmark = pytest.mark.skipif(not zygote_mod.fork_supported(), reason="the kernel fork server needs Linux (os.fork)")


async def _start(pool: KernelPool, cwd: Path) -> tuple[Any, Any]:
    km = pool.manager_class()(kernel_name=KERNEL_NAME)
    await km.start_kernel(cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)  # jupyter_client's own handshake
    return km, kc


async def _run(kc: Any, code: str) -> tuple[dict[str, Any], str]:
    """Execute ``code``; the reply's content and everything the cell printed."""
    out: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])

    reply = await kc.execute_interactive(code, output_hook=hook, timeout=60)
    return reply["content"], "".join(out)


async def _stop(km: Any, kc: Any) -> None:
    kc.stop_channels()
    await km.shutdown_kernel(now=True)


PROBE = ("import json, os, sys\n"
         "print(json.dumps({'cwd': os.getcwd(), 'ipythondir': os.environ.get('IPYTHONDIR'), "
         "'quiet': os.environ.get('JUPYTER_PLATFORM_DIRS'), 'pid': os.getpid(), 'sid': os.getsid(0), "
         "'ppid': os.getppid(), 'preloaded': 'hermes_nb.proxy.probe' in sys.modules, "
         "'canary': os.environ.get('P4_CANARY')}))")


def test_a_forked_kernel_runs_cells_in_its_own_session_cwd_and_the_specs_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("P4_CANARY", "set-after-the-zygote-started")

    async def main() -> dict[str, Any]:
        with KernelPool(fork=True) as pool:
            assert pool.fork_server is not None
            km, kc = await _start(pool, tmp_path)
            try:
                assert isinstance(km.provisioner, ForkProvisioner)  # named by the kernelspec, found by entry point
                assert km.provisioner.forked and km.provisioner.pid == km.provisioner.process.pid
                reply, out = await _run(kc, PROBE)
                assert reply["status"] == "ok", reply
                seen = json.loads(out)
                seen["zygote"] = pool.fork_server.proc.pid
                seen["spec_ipythondir"] = str(pool._dir / "ipython")
                return seen
            finally:
                await _stop(km, kc)

    monkeypatch.setenv("P4_CANARY", "the-kernels-env")  # read at spawn time: the env the manager gives
    seen = asyncio.run(main())
    assert seen["cwd"] == str(tmp_path) and seen["ipythondir"] == seen["spec_ipythondir"] and seen["quiet"] == "1"
    assert seen["sid"] == seen["pid"]  # its own session and process group (interrupts reach the group)
    assert seen["ppid"] == seen["zygote"] and seen["preloaded"] is True  # forked from the server, imports done
    assert seen["canary"] == "the-kernels-env"


def test_what_one_forked_kernel_does_never_reaches_the_next(tmp_path: Path) -> None:
    leak = ("import os, random, sys\nimport hermes_nb.kit as kit\nkit.LEAKED = True\nos.environ['P4_LEAK'] = '1'\n"
            "sys.modules['p4_leak'] = kit\nSECRET = 'x'\nprint(random.random())")
    check = ("import os, random, sys\nimport hermes_nb.kit as kit\n"
             "print(hasattr(kit, 'LEAKED'), 'P4_LEAK' in os.environ, 'p4_leak' in sys.modules, "
             "'SECRET' in globals())\nprint(random.random())")

    async def main() -> tuple[str, str]:
        with KernelPool(fork=True) as pool:
            km, kc = await _start(pool, tmp_path)
            try:
                reply, first = await _run(kc, leak)
                assert reply["status"] == "ok", reply
            finally:
                await _stop(km, kc)
            km, kc = await _start(pool, tmp_path)
            try:
                reply, second = await _run(kc, check)
                assert reply["status"] == "ok", reply
            finally:
                await _stop(km, kc)
            return first, second

    first, second = asyncio.run(main())
    flags, rnd = second.splitlines()
    assert flags == "False False False False"
    assert rnd != first.strip()  # random is re-seeded in every child


def test_interrupt_reaches_a_forked_kernel_and_kill_ends_it(tmp_path: Path) -> None:
    async def main() -> tuple[dict[str, Any], str, int | None, bool]:
        with KernelPool(fork=True) as pool:
            km, kc = await _start(pool, tmp_path)
            try:
                msg_id = kc.execute("print('sleeping', flush=True)\nimport time\ntime.sleep(120)")
                while True:  # the cell is running once it printed
                    msg = await kc.get_iopub_msg(timeout=60)
                    if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                        break
                await km.interrupt_kernel()
                reply = await kc.get_shell_msg(timeout=60)
                # ipykernel aborts requests that reach it while it is still unwinding the interrupted cell
                # (as any kernel does): ask again until one runs; each aborted reply comes back at once
                for _ in range(50):
                    after, out = await _run(kc, "print(6 * 7)")
                    if after["status"] != "aborted":
                        break
                assert after["status"] == "ok"
                process = km.provisioner.process
                await km.shutdown_kernel(now=True)  # SIGKILL, then waits for the exit the zygote reports
                alive = await km.is_alive()
                return reply["content"], out, process.returncode, alive
            finally:
                kc.stop_channels()

    reply, out, returncode, alive = asyncio.run(main())
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert out == "42\n"
    assert returncode == -signal.SIGKILL and alive is False


def test_a_kernel_that_dies_is_reported_with_its_exit_status(tmp_path: Path) -> None:
    async def main() -> int | None:
        with KernelPool(fork=True) as pool:
            km, kc = await _start(pool, tmp_path)
            try:
                process = km.provisioner.process
                kc.execute("import os\nos._exit(7)")
                await asyncio.wait_for(km.provisioner.wait(), timeout=60)
                assert not await km.is_alive()
                return process.returncode
            finally:
                kc.stop_channels()
                await km.shutdown_kernel(now=True)

    assert asyncio.run(main()) == 7


def test_without_fork_support_or_with_the_zygote_gone_kernels_launch_the_normal_way(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    async def one(pool: KernelPool) -> tuple[bool, Any, str]:
        km, kc = await _start(pool, tmp_path)
        try:
            reply, out = await _run(kc, "print('ok')")
            assert reply["status"] == "ok"
            return getattr(km.provisioner, "forked", False), km.provisioner.process, out
        finally:
            await _stop(km, kc)

    with KernelPool(fork=True) as pool:
        pool.fork_server.close()  # gone (crashed, killed): the provisioner falls back to Popen
        forked, process, out = asyncio.run(one(pool))
    assert not forked and isinstance(process, subprocess.Popen) and out == "ok\n"

    monkeypatch.setattr(zygote_mod, "fork_supported", lambda: False)
    with KernelPool(fork=True) as pool:
        assert pool.fork_server is None
        forked, process, out = asyncio.run(one(pool))
    assert not forked and out == "ok\n"


@pytest.mark.parametrize("setting, wanted", [(None, False), ("", False), ("0", False), ("off", False),
                                             ("1", True), ("yes", True), ("on", True)])
def test_the_fork_server_is_opt_in(monkeypatch, setting: str | None, wanted: bool) -> None:
    if setting is None:
        monkeypatch.delenv(zygote_mod.FORK_ENV, raising=False)
    else:
        monkeypatch.setenv(zygote_mod.FORK_ENV, setting)
    assert zygote_mod.fork_wanted() is wanted


def test_the_fork_server_exits_with_its_runner_and_then_refuses(tmp_path: Path) -> None:
    server = zygote_mod.ForkServer(env={**os.environ})
    address = server.address
    server.close()  # its stdin closed is the runner going away: the server exits by itself
    assert server.proc.returncode == 0 and server.lost and not Path(address).exists()
    with pytest.raises(OSError):
        zygote_mod.fork_kernel(address, [], {}, str(tmp_path))


def test_the_kernelspec_names_the_registered_provisioner_only_when_forking() -> None:
    """jupyter_client's documented seam: the entry point, and the spec's metadata.kernel_provisioner."""
    from importlib.metadata import entry_points

    (ep,) = entry_points(group="jupyter_client.kernel_provisioners", name=PROVISIONER_NAME)
    assert ep.load() is ForkProvisioner
    with KernelPool(fork=True) as pool:
        spec = json.loads((Path(pool.spec_dirs[0]) / KERNEL_NAME / "kernel.json").read_text())
        assert spec["metadata"]["kernel_provisioner"] == {
            "provisioner_name": PROVISIONER_NAME, "config": {"server": pool.fork_server.address, "python": pool.python}}
    with KernelPool() as pool:
        spec = json.loads((Path(pool.spec_dirs[0]) / KERNEL_NAME / "kernel.json").read_text())
        assert "kernel_provisioner" not in spec["metadata"] and pool.fork_server is None


def test_no_private_jupyter_client_or_cpython_call_in_the_package() -> None:
    """Extended through documented seams only: nothing overrides or calls jupyter_client's or CPython's privates."""
    import re

    import hermes_nb

    private = re.compile(r"def _async_[a-z_]+\(|\._(handle|async)_[a-z_]+\(|atexit\._")
    root = Path(hermes_nb.__file__).parent
    hits = [f"{path.relative_to(root)}:{n}" for path in root.rglob("*.py")
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if private.search(line)]
    assert hits == []


@pytest.mark.parametrize("setting, launch", [("1", "fork-server"), (None, "process")])
def test_the_smoke_forks_its_kernels_only_when_asked_and_each_receipt_says_how(tmp_path: Path, monkeypatch,
                                                                             setting: str | None, launch: str) -> None:
    import nbformat

    from hermes_nb import SmokeTarget
    from hermes_nb.nbrun.smoke import run_smoke

    if setting is None:
        monkeypatch.delenv(zygote_mod.FORK_ENV, raising=False)
    else:
        monkeypatch.setenv(zygote_mod.FORK_ENV, setting)
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('endpoint: "Optional[str]" = None\nmodel: str = "m"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "from hermes_nb import kit\nfrom hermes_nb.receipts.verdict import verdict_summary\n"
        "kit.record_verdict(verdict_summary('fixture', 'passed', reason='ok', endpoint=endpoint, model=model))")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "templates").mkdir()
    nbformat.write(nb, str(tmp_path / "templates" / "one.ipynb"))
    result = run_smoke(SmokeTarget(), out_dir=tmp_path / "out", only=["one"], templates=tmp_path / "templates",
                       timeout_s=60)
    assert result.verdict == "passed", result.runs[0].errors
    receipt = nbformat.read(str(result.runs[0].receipt_path), as_version=4).metadata.receipt
    assert receipt["kernel"]["launch"] == launch


def test_a_kernel_whose_fork_server_died_stops_and_is_seen_gone(tmp_path: Path) -> None:
    """The zygote killed under a running kernel: the kernel sees its parent gone and exits; pidfd tells the runner."""
    async def main() -> tuple[bool, int | None]:
        with KernelPool(fork=True) as pool:
            km, kc = await _start(pool, tmp_path)
            try:
                pool.fork_server.proc.kill()
                pool.fork_server.proc.wait()
                process = km.provisioner.process
                await asyncio.wait_for(km.provisioner.wait(), timeout=60)
                return await km.is_alive(), process.returncode
            finally:
                kc.stop_channels()
                await km.shutdown_kernel(now=True)

    alive, returncode = asyncio.run(main())
    assert alive is False and returncode is not None


def test_the_exit_report_is_read_on_any_descriptor_number() -> None:
    """A long-lived runner may hold > 1024 descriptors: the handle polls, never select()s (FD_SETSIZE)."""
    import resource
    import socket

    ours, server = socket.socketpair()
    high = 1500 if resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 1500 else ours.fileno()
    conn = socket.socket(fileno=os.dup2(ours.fileno(), high)) if high != ours.fileno() else ours
    proc = zygote_mod.ForkedProcess(os.getpid(), conn, None)
    assert proc.poll() is None
    server.sendall(b'{"exit": -9}\n')
    assert proc.wait(timeout=10) == -9 and proc.returncode == -9
    server.close()
    ours.close()


def test_the_fork_server_serves_when_its_runner_holds_over_1024_descriptors(tmp_path: Path) -> None:
    """The runner passes its listener's own number (> 1024 in a long test run): the server's select() must cope."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1300:
        pytest.skip("needs a descriptor limit above 1300")
    held: list[int] = []
    while not held or held[-1] < 1100:
        held.append(os.open(os.devnull, os.O_RDONLY))

    async def main() -> str:
        with KernelPool(fork=True) as pool:
            assert pool.fork_server is not None
            km, kc = await _start(pool, tmp_path)
            try:
                assert km.provisioner.forked  # not the normal launch it falls back to
                reply, out = await _run(kc, "print('forked')")
                assert reply["status"] == "ok", reply
                return out
            finally:
                await _stop(km, kc)

    try:
        assert asyncio.run(main()).strip() == "forked"
    finally:
        for fd in held:
            os.close(fd)
