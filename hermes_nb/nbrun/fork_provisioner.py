"""jupyter_client's side of the kernel fork server: a kernel provisioner whose kernels are forked.

:class:`ForkProvisioner` is registered under jupyter_client's documented
provisioner entry point (``jupyter_client.kernel_provisioners``, name
:data:`PROVISIONER_NAME`, in ``pyproject.toml``) and chosen by a kernelspec
that names it in ``metadata.kernel_provisioner`` with the fork server's socket
as its ``config`` — :class:`~hermes_nb.nbrun.kernels.KernelPool` writes such a
spec when forking is wanted. It keeps everything ``LocalProvisioner`` does
(connection file, ports, CurveZMQ keys, the environment the kernelspec gives)
and replaces only the ``Popen``: ``launch_kernel`` asks the fork server
(:func:`~hermes_nb.nbrun.zygote.fork_kernel`) for a kernel with the same
arguments, working directory, environment and output streams. Its
``process`` is a :class:`~hermes_nb.nbrun.zygote.ForkedProcess`
(``poll``/``wait``/``send_signal``/``kill``/``terminate`` as ``Popen``), and the
kernel leads its own process group, so interrupt (SIGINT to the group), kill
and the dead-kernel checks work unchanged. A command that is not this
interpreter's ``-m ipykernel_launcher``, or a server that is gone or refuses,
falls back to the normal launch.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import sys
import time
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Unicode

from hermes_nb.nbrun.zygote import ForkedProcess, fork_kernel

__all__ = ["PROVISIONER_NAME", "ForkProvisioner", "kernel_args"]

#: the entry point's name (``pyproject.toml``) and what a kernelspec's ``metadata.kernel_provisioner`` names
PROVISIONER_NAME = "hermes-nb-fork"


def kernel_args(cmd: list[str], python: str) -> list[str] | None:
    """The arguments after ``<python> -m ipykernel_launcher``, or None for any other command."""
    if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"]:
        return None
    return list(cmd[3:]) if os.path.realpath(cmd[0]) == os.path.realpath(python) else None


class ForkProvisioner(LocalProvisioner):
    """``LocalProvisioner`` with kernels forked by the fork server at :attr:`server` (which runs :attr:`python`)."""

    server = Unicode("", config=True, help="the kernel fork server's Unix socket (hermes_nb.nbrun.zygote)")
    python = Unicode(sys.executable, config=True, help="the interpreter the fork server runs")

    #: True once this provisioner's kernel came from the fork server (a receipt records it)
    forked = False

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        args = kernel_args(cmd, self.python)
        env = kwargs.get("env")
        if not self.server or args is None or env is None:
            return await super().launch_kernel(cmd, **kwargs)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        try:
            proc = await asyncio.to_thread(fork_kernel, self.server, args, env, cwd,
                                           stdout=kwargs.get("stdout"), stderr=kwargs.get("stderr"))
        except OSError as exc:  # gone, refused or too slow
            self.log.debug("kernel fork server: %s; launching the normal way", exc)
            return await super().launch_kernel(cmd, **kwargs)
        self.forked = True
        self.process = proc  # type: ignore[assignment]  # a Popen stand-in: the part of its API jupyter_client uses
        self.pid = proc.pid
        self.pgid = proc.pid  # the child called setsid(): it leads its own group, as start_new_session does
        self.cwd = pathlib.Path(cwd)
        return self.connection_info

    async def kill(self, restart: bool = False) -> None:
        """SIGKILL, then return once the fork server reported the exit (≤ 2 s): the manager's next poll sees it
        gone instead of sleeping its 0.1 s polling interval."""
        process = self.process
        await super().kill(restart=restart)
        if isinstance(process, ForkedProcess):
            deadline = time.monotonic() + 2.0
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
