"""The runner's kernel client: jupyter_client's readiness handshake without its trailing 0.2 s of IOPub silence.

``KernelClient.wait_for_ready`` (jupyter_client 8) sends ``kernel_info`` until
the shell channel replies and one IOPub message shows IOPub is connected, then
*flushes* IOPub by reading until no message came for 0.2 s — a fixed 0.2 s on
every kernel start, whatever the kernel. The flush only drops the ``status``
messages of the handshake's own ``kernel_info`` requests; nbclient reads IOPub
by parent message id and ignores anything else, so :class:`QuickReadyClient`
keeps the handshake exactly and drains only what has already arrived.
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.utils import ensure_async

__all__ = ["QuickReadyClient"]


class QuickReadyClient(AsyncKernelClient):
    async def _quick_wait_for_ready(self, timeout: float | None = None) -> None:
        abs_timeout = time.time() + (float("inf") if timeout is None else timeout)
        while True:  # jupyter_client's handshake, unchanged (our clients are always made by their KernelManager)
            self.kernel_info()
            try:
                msg = await ensure_async(self.shell_channel.get_msg(timeout=1))
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply":
                    try:  # IOPub connected? else start over
                        await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(msg)
                        break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.time() > abs_timeout:
                raise RuntimeError("Kernel didn't respond in %d seconds" % (timeout or 0))
        while True:  # drain what has arrived; late handshake status messages are filtered by nbclient
            try:
                await ensure_async(self.iopub_channel.get_msg(timeout=0))
            except Empty:
                break

    wait_for_ready = _quick_wait_for_ready
