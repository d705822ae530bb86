"""Kernel start (hermes_nb.nbrun.kernels + execute): a port taken before the kernel binds it costs one retry, not a
run; a notebook run leaves nothing behind."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import nbformat
import pytest

from hermes_nb.nbrun import zygote as zygote_mod
from hermes_nb.nbrun.execute import NotebookRun, execute_notebook
from hermes_nb.nbrun.kernels import PORT_TAKEN, KernelPool

FORKS = [False, pytest.param(True, marks=pytest.mark.skipif(not zygote_mod.fork_supported(), reason="needs os.fork"))]


def _notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print(x * 2)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def _colliding(pool: KernelPool, port: int, times: int) -> list[Any]:
    """The pool's first ``times`` kernel managers get ``port`` as their shell port (jupyter_client's own config
    traits: ``cache_ports=False`` keeps a given port), a port another socket holds: the kernel cannot bind it."""
    made: list[Any] = []
    base = pool.manager_class()

    class FirstCollide(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kw: Any) -> None:
            if len(made) < times:
                kw.update(cache_ports=False, shell_port=port)
            super().__init__(**kw)
            made.append(self)

    pool.manager_class = lambda: FirstCollide  # type: ignore[method-assign]
    return made


@pytest.fixture
def held_port():
    with socket.socket() as sock:  # taken, as by another process between jupyter_client's pick and the kernel's bind
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("fork", FORKS, ids=["popen", "fork-server"])
def test_a_port_taken_before_the_kernel_binds_it_is_retried_once_with_fresh_ports(
        tmp_path: Path, held_port: int, capfd, fork: bool) -> None:
    run = NotebookRun(name="t", template=_notebook(tmp_path / "t.ipynb"), parameters={"x": 21})
    with KernelPool(fork=fork) as pool:
        made = _colliding(pool, held_port, times=1)
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert run.status == "completed", run.errors
    assert [o.get("text") for o in run.nb.cells[-1].outputs] == ["42\n"]
    assert len(made) == 2 and made[0].shell_port == held_port and made[1].shell_port != held_port
    assert run.kernel_launch == ("fork-server" if fork else "process")
    # the first kernel's own words are not lost: its stderr is copied to ours once it is gone
    assert PORT_TAKEN in capfd.readouterr().err


def test_a_second_collision_is_a_kernel_error_that_says_why(tmp_path: Path, held_port: int) -> None:
    run = NotebookRun(name="t", template=_notebook(tmp_path / "t.ipynb"), parameters={})
    with KernelPool() as pool:
        made = _colliding(pool, held_port, times=2)
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert len(made) == 2  # once more, not forever
    assert (run.status, run.verdict) == ("kernel_error", "failed") and run.nb is None
    assert PORT_TAKEN in run.reason and "kernel stderr" in run.reason


def test_a_kernel_that_dies_for_another_reason_is_not_retried(tmp_path: Path) -> None:
    run = NotebookRun(name="t", template=_notebook(tmp_path / "t.ipynb"), parameters={})
    with KernelPool() as pool:
        made = _colliding(pool, 0, times=0)
        bad = tmp_path / "gone"
        execute_notebook(run, pool, timeout_s=60, cwd=bad)  # no such working directory: Popen fails
    assert len(made) == 1 and run.status == "kernel_error" and "FileNotFoundError" in run.reason


def test_papermill_as_papermill_a_cell_error_keeps_its_executed_notebook_with_papermills_marks(tmp_path: Path) -> None:
    """output_path=None writes nothing; the notebook papermill executes (handed to nbclient's on_notebook_start
    hook) is the one it fills and, on a cell error, marks: the receipt shows both."""
    nb = nbformat.read(str(_notebook(tmp_path / "t.ipynb")), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("raise ValueError('boom')"))
    nb.cells.append(nbformat.v4.new_code_cell("print('never')"))
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    run = NotebookRun(name="t", template=tmp_path / "t.ipynb", parameters={"x": 2})
    with KernelPool() as pool:
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert run.status == "cell_error" and "ValueError: boom" in run.errors
    assert [c.metadata.get("tags") for c in run.nb.cells if c.cell_type == "markdown"] == [
        ["papermill-error-cell-tag"], ["papermill-error-cell-tag"]]
    injected = next(c for c in run.nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "x = 2" in injected.source and run.nb.metadata.papermill["parameters"] == {"x": 2}
    printed = next(c for c in run.nb.cells if c.source == "print(x * 2)")
    assert [o.get("text") for o in printed.outputs] == ["4\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.ipynb"]  # nothing written next to it


def test_the_pools_managers_make_ready_clients(tmp_path: Path) -> None:
    """nbclient makes its client from the manager: ours, whose handshake uses the public client API only."""
    from hermes_nb.nbrun.kernel_client import ReadyClient

    with KernelPool() as pool:
        km = pool.manager_class()(kernel_name="hermes-nb-python")
        assert km.client_factory is ReadyClient and isinstance(km.client(), ReadyClient)


def test_a_kernel_launched_ahead_is_the_one_its_notebook_gets_and_an_unclaimed_one_is_stopped(tmp_path: Path) -> None:
    """launch_ahead: the kernels boot before anyone asks; the notebook run in a directory takes the kernel launched
    there (no second launch); close() stops the ones nobody took."""
    used, unused = tmp_path / "used", tmp_path / "unused"
    used.mkdir()
    unused.mkdir()
    nb = nbformat.read(str(_notebook(tmp_path / "t.ipynb")), as_version=4)
    nb.cells[-1].source = "import os\nprint(os.getpid(), os.getcwd())"
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    run = NotebookRun(name="t", template=tmp_path / "t.ipynb", parameters={})
    with KernelPool() as pool:
        made = _colliding(pool, 0, times=0)  # records the managers the pool makes
        pool.launch_ahead([used, unused])
        execute_notebook(run, pool, timeout_s=60, cwd=used)
        assert run.status == "completed", run.errors
        assert len(made) == 2  # nothing launched for the notebook: it took its kernel
        assert [o.get("text") for o in run.nb.cells[-1].outputs] == [f"{made[0].provisioner.pid} {used}\n"]
        left = made[1].provisioner.process
        assert left.poll() is None
    assert left.poll() is not None  # the unclaimed kernel is gone with the pool


def test_kernels_import_the_kits_common_modules_at_start_and_leave_the_namespace_alone(tmp_path: Path) -> None:
    """IPython's exec_lines in the pool's kernelspec: ``hermes_nb.kit.warm`` (pydantic, httpx, the runtime
    config, the display toolkit) is loaded before the first cell, and the notebook sees no name it did not make."""
    nb = nbformat.read(str(_notebook(tmp_path / "t.ipynb")), as_version=4)
    nb.cells[-1].source = ("import sys\n"
                           "print(sorted(m for m in ('hermes_nb.kit.warm', 'pydantic', 'httpx') if m in sys.modules))\n"
                           "print(sorted(k for k in globals() if 'warm' in k or 'hermes' in k))")
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    run = NotebookRun(name="t", template=tmp_path / "t.ipynb", parameters={})
    with KernelPool() as pool:
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert run.status == "completed", run.errors
    assert [o.get("text") for o in run.nb.cells[-1].outputs] == ["['hermes_nb.kit.warm', 'httpx', 'pydantic']\n[]\n"]


def _descriptors() -> int:
    """Sockets and event-loop descriptors (epoll, eventfd) this process holds."""
    import os

    kinds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed while listed (the listing's own descriptor)
            continue
        kinds += target.startswith(("socket:", "anon_inode:"))
    return kinds


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_notebook_run_leaves_no_client_channels_threads_or_event_loop_behind(tmp_path: Path) -> None:
    """nbclient stops the channels only of a client whose manager it created; ours are handed in, so the pool
    stops them with the kernel; the worker thread's event loop (jupyter_core's run_sync) is closed after its
    notebook. Before: ~15 descriptors and a heartbeat thread per notebook stayed for the life of the process."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from jupyter_client.channels import HBChannel

    _notebook(tmp_path / "t.ipynb")

    def run_one(i: int) -> str:
        run = NotebookRun(name=f"t{i}", template=tmp_path / "t.ipynb", parameters={"x": i})
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
        return run.status

    with KernelPool() as pool:
        with ThreadPoolExecutor(max_workers=1) as ex:  # a worker thread, as the smoke runs each notebook
            assert ex.submit(run_one, 1).result() == "completed"
        after_one = _descriptors()
        with ThreadPoolExecutor(max_workers=1) as ex:
            assert [ex.submit(run_one, i).result() for i in (2, 3)] == ["completed", "completed"]
        after_three = _descriptors()
    assert not [t for t in threading.enumerate() if isinstance(t, HBChannel)]
    assert after_three <= after_one, (after_one, after_three)
