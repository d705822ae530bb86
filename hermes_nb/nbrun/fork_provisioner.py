"""jupyter_client's side of the kernel fork server: a ``LocalProvisioner`` whose kernels come from the zygote.

:class:`ForkProvisioner` keeps everything ``LocalProvisioner`` does — the
connection file, ports, CurveZMQ keys, the environment the kernelspec gives —
and replaces only the ``Popen``: ``launch_kernel`` asks the
:class:`~hermes_nb.nbrun.zygote.Zygote` to fork a kernel with the same
arguments, working directory and environment. Its ``process`` is a
:class:`~hermes_nb.nbrun.zygote.ForkedProcess` (``poll``/``wait``/
``send_signal``/``kill``/``terminate`` as ``Popen``), and the kernel leads its
own process group, so interrupt (SIGINT to the group), kill and the
dead-kernel checks work unchanged. A command that is not this interpreter's
``-m ipykernel_launcher``, or a zygote that is gone or refuses, falls back to
the normal launch. The kernel manager sets the provisioner itself
(:meth:`hermes_nb.nbrun.kernels.KernelPool.manager_class`), so no entry point
and no kernelspec change are involved: nbval and the papermill CLI never see it.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import time
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from hermes_nb.nbrun.zygote import ForkedProcess, Zygote, ZygoteError

__all__ = ["ForkProvisioner", "kernel_args"]


def kernel_args(cmd: list[str], python: str) -> list[str] | None:
    """The arguments after ``<python> -m ipykernel_launcher``, or None for any other command."""
    if len(cmd) >= 3 and os.path.realpath(cmd[0]) == os.path.realpath(python) and cmd[1:3] == ["-m", "ipykernel_launcher"]:
        return list(cmd[3:])
    return None


class ForkProvisioner(LocalProvisioner):
    zygote: Zygote | None = None
    forked = False

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        zygote = self.zygote
        args = kernel_args(cmd, zygote.python) if zygote is not None else None
        env = kwargs.get("env")
        if zygote is None or args is None or env is None:
            return await super().launch_kernel(cmd, **kwargs)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        try:
            proc = zygote.spawn(args, env, cwd)
        except ZygoteError as exc:
            self.log.debug("kernel fork server: %s; launching the normal way", exc)
            return await super().launch_kernel(cmd, **kwargs)
        self.forked = True
        self.process = proc
        self.pid = proc.pid
        self.pgid = proc.pid  # the child called setsid(): it leads its own group, as start_new_session does
        self.cwd = pathlib.Path(cwd)
        return self.connection_info

    async def kill(self, restart: bool = False) -> None:
        """SIGKILL, then return once the zygote reported the exit (≤ 2 s): the manager's next poll sees it gone
        instead of sleeping its 0.1 s polling interval."""
        process = self.process
        await super().kill(restart=restart)
        if isinstance(process, ForkedProcess):
            deadline = time.monotonic() + 2.0
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
