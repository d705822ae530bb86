"""Executing a reply plan on an aiohttp response: bytes, pauses, a stall, a reset; the real proxy's pass-through.

:mod:`hermes_nb.emulator.scenarios` (and :mod:`.responses`, :mod:`.trouble`) say *what* an answer is, as a
:class:`~hermes_nb.emulator.scenarios.Reply` plan; :func:`write` sends it, either directly or as the real
proxy relays it (``proxied``: chunked, hop-by-hop headers dropped, an upstream break ends the body cleanly),
and :func:`answer` adds the upstream's thinking time of ``slow-first-byte``. Every pause ends at once when
the emulator shuts down (:data:`CLOSING_KEY`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct

from aiohttp import web

from .scenarios import RESET, STALL, Pause, Reply, Settings
from .trouble import first_byte_delay

__all__ = ["CLOSING_KEY", "write", "answer"]

logger = logging.getLogger("hermes_nb.emulator")

#: set when the emulator shuts down: stalls and pauses end
CLOSING_KEY = web.AppKey("hermes_nb_closing", asyncio.Event)
#: what the real proxy strips from the upstream's response headers
_HOP_BY_HOP = frozenset({
    "host", "content-length", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailers", "transfer-encoding", "upgrade", "authorization", "content-encoding",
})


def _reset(request: web.Request) -> None:
    """Abort the connection with a TCP RST (SO_LINGER on, timeout 0)."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _stall(request: web.Request) -> None:
    """Send nothing more until the client goes away or the emulator shuts down."""
    closing = request.app[CLOSING_KEY]
    while not closing.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        try:
            await asyncio.wait_for(closing.wait(), 0.2)
        except TimeoutError:
            continue


async def _pause(request: web.Request, seconds: float) -> bool:
    """Sleep ``seconds``; True (at once) when the emulator shuts down meanwhile."""
    try:
        await asyncio.wait_for(request.app[CLOSING_KEY].wait(), seconds)
    except TimeoutError:
        return False
    return True


async def write(request: web.Request, reply: Reply, *, proxied: bool) -> web.StreamResponse:
    """Execute a reply plan. ``proxied``: the real proxy's pass-through (chunked; upstream breaks end cleanly)."""
    headers = {"Content-Type": reply.content_type, **reply.headers}
    if proxied:
        headers = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
    elif not reply.streamed:
        for part in reply.parts:
            if isinstance(part, Pause):
                await asyncio.sleep(part.seconds)
        return web.Response(status=reply.status, body=reply.body, headers=headers)
    response = web.StreamResponse(status=reply.status, headers=headers)
    await response.prepare(request)
    try:
        for part in reply.parts:
            if isinstance(part, bytes):
                if part:
                    await response.write(part)
            elif isinstance(part, Pause):
                if await _pause(request, part.seconds):
                    return response  # the emulator is shutting down
            elif part == STALL:
                await _stall(request)
                if request.transport is not None:
                    request.transport.close()
                return response
            elif part == RESET:
                if proxied:
                    break  # the real proxy logs the broken upstream and ends the body cleanly
                _reset(request)
                return response
        await response.write_eof()
    except ConnectionError:
        logger.debug("client went away during %s %s", request.method, request.path)
    return response


async def answer(request: web.Request, settings: Settings, scenario: str, reply: Reply, *,
                  proxied: bool) -> web.StreamResponse:
    """Write ``reply``; ``slow-first-byte``: the upstream thinks first (a client that left meanwhile gets nothing)."""
    wait = first_byte_delay(scenario, settings.first_byte_s)
    if wait and (await _pause(request, wait) or request.transport is None or request.transport.is_closing()):
        return web.Response(status=499)  # never written: aiohttp drops it quietly
    return await write(request, reply, proxied=proxied)
