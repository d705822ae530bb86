"""The smoke's kernels, launched before the runner's own set-up: one fresh kernel per notebook, at once.

:func:`launch_kernels` is the first thing :func:`hermes_nb.nbrun.jobs.smoke` does once its arguments and output
paths are checked (and what :func:`hermes_nb.nbrun.smoke.run_smoke` does first when called on its own): each
kernel then boots — ipykernel's own start-up, ~0.4 s of CPU — while the runner resolves its config and target,
imports papermill and starts the notebooks' emulators, instead of after. This module imports only what the
launch needs (jupyter_client, through :mod:`hermes_nb.nbrun.kernels`), not the receipts.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import NOTEBOOKS
from hermes_nb.core.resources import notebooks_dir
from hermes_nb.nbrun.kernels import KernelPool
from hermes_nb.nbrun.zygote import fork_wanted

__all__ = ["SmokeKernels", "launch_kernels"]


@dataclass
class SmokeKernels:
    """The kernels of a smoke, launched before the runner's own set-up (:func:`launch_kernels`): the pool, the
    notebooks, and the working directory whose sub-directory per notebook each kernel runs in.
    :func:`~hermes_nb.nbrun.smoke.run_smoke` takes it over; ``close()`` (idempotent) stops what is left and removes
    the directory."""

    names: list[str]
    templates: Path
    work: Path
    pool: KernelPool
    _closed: bool = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self.pool.close()
            finally:
                shutil.rmtree(self.work, ignore_errors=True)


def launch_kernels(only: Sequence[str] | None = None, templates: Path | None = None) -> SmokeKernels:
    """Check the notebooks' names, then launch a fresh kernel for each at once (with the opt-in fork server,
    :func:`~hermes_nb.nbrun.zygote.fork_wanted`, the notebooks' threads start them once it is up): each boots
    while the caller resolves its config and target and the runner imports papermill."""
    names = list(dict.fromkeys(only)) if only else list(NOTEBOOKS)  # a repeated --only runs once
    template_dir = templates or notebooks_dir()
    for name in names:
        if not (template_dir / f"{name}.ipynb").is_file():
            raise UsageError(f"no notebook {name!r} in {template_dir}")
    work = Path(tempfile.mkdtemp(prefix="hermes-nb-smoke-"))
    try:
        pool = KernelPool(fork=fork_wanted())
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    kernels = SmokeKernels(names, template_dir, work, pool)
    try:
        cwds = [work / name for name in names]
        for cwd in cwds:
            cwd.mkdir()
        if pool.fork_server is None:  # forked kernels wait for the fork server: the notebooks' threads start them
            pool.launch_ahead(cwds)
    except BaseException:
        kernels.close()
        raise
    return kernels
