"""The upstream profile's ``POST /v1/responses``: OpenAI's Responses API, streamed and not (issue 18).

The xAI provider of ``hermes proxy`` forwards ``/v1/responses`` (hermes' own xAI runtime speaks it);
nous answers it ``404 path_not_allowed``. So the emulator's ``upstream`` profile serves it, and the real
proxy started with ``--provider xai`` in front of it relays real Responses traffic. Deterministic like
the rest (:mod:`.content`): the text is the chat route's text for the same user input.

Streamed: ``event: <type>`` + ``data: {"type": <type>, "sequence_number": n, …}`` frames —
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` (×n), ``response.output_text.done``,
``response.content_part.done``, ``response.output_item.done``, ``response.completed`` — and no
``data: [DONE]``. Scenarios: ``length`` ends ``response.incomplete`` (``max_output_tokens``),
``stream-error-event`` ends ``response.failed`` with an error object, ``truncated`` stops before the
terminal event, ``slow`` pauses before each delta, ``empty`` has no text, ``no-sentinel`` drops the
final-message block; the error scenarios answer before the body is read (:func:`error_reply`).
"""

from __future__ import annotations

import json
from typing import Any

from . import content as c
from .scenarios import SSE_CT, Part, Pause, Reply, Settings, _invalid, _shape_json, error_reply, json_reply

__all__ = ["RESPONSES_ROUTE", "responses_reply", "response_object"]

RESPONSES_ROUTE = "/responses"


def _user_text(body: dict[str, Any]) -> str:
    """The last user input: ``input`` as a string, or the last user item's text."""
    value = body.get("input")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for item in reversed(value):
            if not isinstance(item, dict) or item.get("role", "user") != "user":
                continue
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(prompt: str, text: str) -> dict[str, int]:
    i, o = c.estimate_tokens(prompt), c.estimate_tokens(text)
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def response_object(rid: str, created: int, model: str, text: str | None, status: str, prompt: str,
                    *, incomplete: str | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``response`` object; ``text`` None while in progress (no output yet)."""
    output = [] if text is None else [{
        "id": f"msg_{rid[5:]}", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }]
    return {
        "id": rid, "object": "response", "created_at": created, "status": status, "model": model,
        "output": output, "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "usage": _usage(prompt, text or "") if text is not None else None,
    }


def _frame(kind: str, seq: int, **fields: Any) -> bytes:
    return f"event: {kind}\n".encode() + c.sse({"type": kind, "sequence_number": seq, **fields})


def responses_reply(settings: Settings, scenario: str, raw: bytes) -> Reply:
    """What an OpenAI-compatible upstream answers to ``POST /v1/responses`` with body ``raw``."""
    early = error_reply(scenario, settings)
    if early is not None:
        return early
    try:
        body = json.loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError):
        return _invalid("We could not parse the JSON body of your request.")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        return _invalid("you must provide a model parameter", param="model")
    if not isinstance(body.get("input"), (str, list)):
        return _invalid("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
    model = body["model"]
    missing = error_reply(scenario, settings, model=model)
    if missing is not None:
        return missing
    user = _user_text(body)
    as_chat = {"messages": [{"role": "user", "content": user}]}
    rid = "resp_" + c.digest(settings.seed, RESPONSES_ROUTE, body)[:24]
    created = c.created_at(settings.seed)
    text = "" if scenario == "empty" else c.reply_text(settings.seed, as_chat, sentinel=scenario != "no-sentinel")
    incomplete = None
    if scenario == "length":
        text, incomplete = text[: len(text) // 2], "max_output_tokens"
    status = "incomplete" if incomplete else "completed"
    if body.get("stream") is not True:
        return _shape_json(settings, scenario, response_object(rid, created, model, text, status, user,
                                                               incomplete=incomplete))
    seq = iter(range(1_000_000))
    item = {"id": f"msg_{rid[5:]}", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    head = [
        _frame("response.created", next(seq), response=response_object(rid, created, model, None, "in_progress",
                                                                          user)),
        _frame("response.in_progress", next(seq), response=response_object(rid, created, model, None,
                                                                             "in_progress", user)),
        _frame("response.output_item.added", next(seq), output_index=0, item=item),
        _frame("response.content_part.added", next(seq), item_id=item["id"], output_index=0, content_index=0,
               part={"type": "output_text", "text": "", "annotations": []}),
    ]
    deltas = [_frame("response.output_text.delta", next(seq), item_id=item["id"], output_index=0, content_index=0,
                     delta=piece) for piece in c.split_deltas(text)]
    part = {"type": "output_text", "text": text, "annotations": []}
    tail = [
        _frame("response.output_text.done", next(seq), item_id=item["id"], output_index=0, content_index=0,
               text=text),
        _frame("response.content_part.done", next(seq), item_id=item["id"], output_index=0, content_index=0,
               part=part),
        _frame("response.output_item.done", next(seq), output_index=0,
               item={**item, "status": "completed", "content": [part]}),
        _frame("response.incomplete" if incomplete else "response.completed", next(seq),
               response=response_object(rid, created, model, text, status, user, incomplete=incomplete)),
    ]
    parts: list[Part] = list(head)
    if scenario == "slow":
        for delta in deltas:
            parts += [Pause(settings.delay_s), delta]
        parts += tail
    elif scenario == "stream-error-event":
        error = {"code": "server_error", "message": "The upstream model failed while generating the answer."}
        parts += deltas[:3] + [_frame("response.failed", next(seq), response=response_object(
            rid, created, model, None, "failed", user, error=error))]
    elif scenario == "truncated":
        parts += deltas[:3]
    else:
        parts += deltas + tail
    return Reply(200, SSE_CT, parts, {"Cache-Control": "no-cache"}, streamed=True)


#: the answer to any method but POST
def method_not_allowed(method: str) -> Reply:
    return json_reply(404, c.envelope(f"Invalid URL ({method} /v1{RESPONSES_ROUTE})", "invalid_request_error",
                                      None, with_param=True))
