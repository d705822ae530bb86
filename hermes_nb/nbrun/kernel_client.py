"""The runner's kernel client: jupyter_client's async client, ready as soon as the kernel is.

:class:`ReadyClient` is the ``client_factory`` of :class:`hermes_nb.nbrun.kernels.KernelPool`'s
managers, so nbclient (and papermill through it) makes its client from it. It adds itself to its manager's
``clients``: nbclient stops the channels only of a client whose manager it created, so the pool stops them
when it stops the kernel (:meth:`hermes_nb.nbrun.kernels.StartedKernel.stop`).
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient

__all__ = ["ReadyClient"]


class ReadyClient(AsyncKernelClient):
    """jupyter_client's async kernel client, ready as soon as the kernel is: no fixed 0.2 s IOPub wait.

    ``wait_for_ready`` is the handshake the Jupyter messaging protocol describes, written with the client's
    public API only (``kernel_info``, ``get_shell_msg``, ``get_iopub_msg``, ``is_alive``): ask ``kernel_info``
    until the shell channel replies and an IOPub message shows IOPub is connected (else ask again). Unlike
    ``KernelClient.wait_for_ready`` it does not then read IOPub until 0.2 s pass without a message — a fixed
    0.2 s on every kernel start, spent dropping the status messages of the handshake's own requests, which
    nbclient ignores anyway (it reads IOPub by parent message id). Our kernels are this interpreter's
    ipykernel (protocol 5), so there is no protocol version to adapt to.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        clients = getattr(self.parent, "clients", None)  # the pool's manager stops its clients with the kernel
        if isinstance(clients, list):
            clients.append(self)

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.get_shell_msg(timeout=1)
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                try:
                    await self.get_iopub_msg(timeout=0.2)  # IOPub connected? else ask again
                    return
                except Empty:
                    pass
            if not await self.is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
