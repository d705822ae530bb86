"""A deliberately minimal OpenAI-compatible upstream: an upstream hermes_nb did not shape after itself.

It exists to prove that the wire-format spike judges the proxy, not what answers behind it
(docs/wire-contract.md, "Who owns a field"). Compared with the ``upstream`` profile it differs
everywhere an OpenAI-compatible server may differ:

- routes: ``GET /v1/models`` and ``POST /v1/chat/completions`` only; anything else is
  aiohttp's plain ``404: Not Found`` (no ``/v1/embeddings``, no ``/v1/completions``);
- body cap: aiohttp's default 1 MiB (``413 Maximum request body size 1048576 exceeded.``);
- bodies: no ``system_fingerprint``, ids ``min-<n>``, its own model names
  (:data:`MINIMAL_MODELS`; any model is accepted in a chat request and echoed back);
- streams: CRLF line endings, an SSE comment before the first event and a ``: keep-alive``
  comment between events, a final chunk with ``finish_reason``, then ``data: [DONE]``.

The assistant text comes from :func:`hermes_nb.emulator.content.reply_text` (it ends with the
final-message sentinel block), so a UH run through this upstream can pass. One scenario: ``ok``;
like every emulator profile, a request naming another in ``X-Hermes-Emulator-Scenario`` gets a 400
``unknown_scenario`` (added by :mod:`.app`), so a receipt against it is never taken for a live one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from . import content as c

__all__ = ["MINIMAL_MODELS", "MINIMAL_MAX_BYTES", "create_minimal_app"]

MINIMAL_MODELS: tuple[str, ...] = ("minimal-chat-1", "minimal-chat-1-mini")
#: aiohttp's default ``client_max_size``
MINIMAL_MAX_BYTES = 1024 * 1024
_CREATED = 1_700_000_000
_CRLF = b"\r\n"


def _event(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + _CRLF + _CRLF


def _comment(text: str) -> bytes:
    return b": " + text.encode() + _CRLF + _CRLF


def create_minimal_app(*, models: tuple[str, ...] | list[str] | None = None, seed: int = 0,
                       middlewares: Sequence[Any] = ()) -> web.Application:
    """The minimal upstream (not started); ``middlewares`` lets the emulator record its requests."""
    names = tuple(models) if models else MINIMAL_MODELS
    counter = itertools.count(1)
    app = web.Application(middlewares=list(middlewares))  # client_max_size stays aiohttp's default: 1 MiB

    async def list_models(request: web.Request) -> web.Response:
        data = [{"id": name, "object": "model", "created": _CREATED, "owned_by": "minimal"} for name in names]
        return web.json_response({"object": "list", "data": data})

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()  # raises 413 text/plain over 1 MiB
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "body is not JSON", "type": "invalid_request_error"}},
                                     status=400)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return web.json_response({"error": {"message": "messages is required", "type": "invalid_request_error"}},
                                     status=400)
        model = str(body.get("model") or names[0])
        cid = f"min-{next(counter)}"
        text = c.reply_text(seed, body)
        prompt = c.prompt_text(body)
        if not body.get("stream"):
            return web.json_response({
                "id": cid, "object": "chat.completion", "created": _CREATED, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": c.usage_for(prompt, text),
            })
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
            return _event({"id": cid, "object": "chat.completion.chunk", "created": _CREATED, "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        await response.write(_comment("minimal upstream"))
        await response.write(chunk({"role": "assistant"}, None))
        for piece in c.split_deltas(text):
            await response.write(_comment("keep-alive"))
            await response.write(chunk({"content": piece}, None))
        await response.write(chunk({}, "stop"))
        await response.write(b"data: [DONE]" + _CRLF + _CRLF)
        await response.write_eof()
        return response

    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat)
    return app
