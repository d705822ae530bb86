"""Kernels (hermes_nb.nbrun.smoke): each notebook's own fresh kernel, started ahead or on demand, over
IPC; a kernel that cannot start is a verdict; a notebook run leaves nothing behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import nbformat
import pytest

from hermes_nb.nbrun.smoke import KernelPool, NotebookRun, execute_notebook


def _notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print(x * 2)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def test_a_kernel_that_cannot_start_in_its_directory_is_a_kernel_error(tmp_path: Path) -> None:
    run = NotebookRun(name="t", template=_notebook(tmp_path / "t.ipynb"), parameters={})
    with KernelPool() as pool:
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path / "gone")  # no such working directory: Popen fails
    assert (run.status, run.verdict) == ("kernel_error", "failed") and "FileNotFoundError" in run.reason


def test_under_a_tmpdir_too_deep_for_a_socket_path_the_kernels_talk_over_loopback_tcp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket's path is at most 107 bytes: under a deep TMPDIR (a CI workspace, pytest-xdist's directories) the
    notebook still runs, over 127.0.0.1, and the pool's directory is still removed."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    run = NotebookRun(name="t", template=_notebook(tmp_path / "t.ipynb"), parameters={})
    with KernelPool() as pool:
        km = pool.start(tmp_path)
        assert (km.transport, km.ip) == ("tcp", "127.0.0.1") and Path(km.connection_file).parent == pool.dir
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert (run.status, run.verdict) != ("kernel_error", "failed"), run.reason
    assert run.status == "completed" and "2" in json.dumps(run.nb.cells[-1].outputs)
    assert list(deep.iterdir()) == []


def test_kernels_talk_over_ipc_sockets_in_the_pools_directory(tmp_path: Path) -> None:
    """No ports to pick, so none can be taken by another process before the kernel binds it."""
    with KernelPool() as pool:
        km = pool.start(tmp_path)
        try:
            assert km.transport == "ipc" and Path(km.ip).parent == pool.dir
            assert Path(km.connection_file).parent == pool.dir
        finally:
            pool.stop(km)
        assert not km.has_kernel and not Path(km.connection_file).exists()


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


def test_a_kernel_launched_ahead_is_the_one_its_notebook_gets_and_an_unclaimed_one_is_stopped(tmp_path: Path) -> None:
    """launch: the kernels boot before anyone asks; the notebook run in a directory takes the kernel launched
    there (no second start); close() stops the ones nobody took."""
    used, unused = tmp_path / "used", tmp_path / "unused"
    nb = nbformat.read(str(_notebook(tmp_path / "t.ipynb")), as_version=4)
    nb.cells[-1].source = "import os\nprint(os.getpid(), os.getcwd())"
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    run = NotebookRun(name="t", template=tmp_path / "t.ipynb", parameters={})
    with KernelPool() as pool:
        launched = dict(zip(("used", "unused"), (km.provisioner.process for km in pool.launch([used, unused])),
                            strict=True))
        execute_notebook(run, pool, timeout_s=60, cwd=used)
        assert run.status == "completed", run.errors
        assert [o.get("text") for o in run.nb.cells[-1].outputs] == [f"{launched['used'].pid} {used}\n"]
        assert launched["used"].poll() is not None and launched["unused"].poll() is None
    assert launched["unused"].poll() is not None  # the unclaimed kernel is gone with the pool


def test_kernels_import_pydantic_and_httpx_as_they_start_and_leave_the_namespace_alone(tmp_path: Path) -> None:
    """IPython's exec_lines in the pool's kernelspec: the runtime config (pydantic) and the client (httpx) are
    loaded before the first cell, and the notebook sees no name it did not make."""
    nb = nbformat.read(str(_notebook(tmp_path / "t.ipynb")), as_version=4)
    nb.cells[-1].source = ("import sys\n"
                           "print([m for m in ('hermes_nb.core.resolve', 'pydantic', 'httpx') if m in sys.modules])\n"
                           "print([k for k in ('_r', '_c', 'hermes_nb') if k in globals()])")
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    run = NotebookRun(name="t", template=tmp_path / "t.ipynb", parameters={})
    with KernelPool() as pool:
        execute_notebook(run, pool, timeout_s=60, cwd=tmp_path)
    assert run.status == "completed", run.errors
    printed = [o.get("text") for o in run.nb.cells[-1].outputs]
    assert printed == ["['hermes_nb.core.resolve', 'pydantic', 'httpx']\n[]\n"]


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
    notebook. Else ~15 descriptors and a heartbeat thread per notebook would stay for the life of the process."""
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
