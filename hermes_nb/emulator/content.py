"""The emulator's payloads: ids, timestamps, texts and OpenAI-shaped bodies, pure functions of the seed and the
request body (no clock, no uuid4), so the same request to an emulator of the same seed gets the same bytes."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
from typing import Any

from hermes_nb.core.facts import DEFAULT_MODEL, SENTINEL_TAG
from hermes_nb.core.providers import default_model_for

#: 2025-08-19T00:00:00Z, the spike's example ``created``; offsets are derived from the seed.
BASE_CREATED = 1755561600
DEFAULT_MODELS: tuple[str, ...] = (DEFAULT_MODEL, "nousresearch/hermes-4-70b", "hermes-4-405b")
#: what ``/v1/models`` lists behind each provider (xAI's OAuth API lists Grok models; its default first)
MODELS_BY_PROVIDER: dict[str, tuple[str, ...]] = {
    "nous": DEFAULT_MODELS,
    "xai": (default_model_for("xai") or "grok-4.3", "grok-4.20-0309-reasoning", "grok-4.20-0309-non-reasoning"),
}
EMBEDDING_DIM = 8
_OPENERS = ("Emulated Hermes reply", "Deterministic emulator answer", "Hermes emulator response")
_BODIES = (
    "I read the mission and the files it names. The change is small: update the handler, add a test, "
    "and keep the public interface as it is — nothing else needs to move.",
    "The task is understood. I would touch one module, cover the new branch with a test, "
    "and leave the configuration alone — the defaults are already right.",
    "Plan: reproduce the failure, fix the parsing edge case, then run the suite. "
    "No new dependency is needed — the standard library covers it.",
)


def digest(seed: int, *parts: Any) -> str:
    """Hex SHA-256 of the seed and the parts (JSON-canonicalised)."""
    h = hashlib.sha256(str(seed).encode())
    for part in parts:
        h.update(b"\x00" + json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()


def request_id(prefix: str, seed: int, route: str, body: Any) -> str:
    return f"{prefix}-emu{digest(seed, route, body)[:24]}"


def created_at(seed: int) -> int:
    return BASE_CREATED + int(digest(seed, "created")[:6], 16) % 86_400


def prompt_text(body: Any) -> str:
    """The text of the request's messages / prompt / input, for token estimates."""
    if not isinstance(body, dict):
        return ""
    pieces: list[str] = []
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    for key in ("prompt", "input"):
        value = body.get(key)
        if isinstance(value, str):
            pieces.append(value)
        elif isinstance(value, list):
            pieces.extend(str(v) for v in value)
    return "\n".join(pieces)


def estimate_tokens(text: str) -> int:
    """ceil(characters / 4), the estimate UH uses too."""
    return math.ceil(len(text) / 4)


def _last_user(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        for message in reversed(body["messages"]):
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                return message["content"]
    return prompt_text(body)


def reply_text(seed: int, body: Any, *, sentinel: bool = True) -> str:
    """The assistant text for a request: a few sentences, optionally ending with the sentinel fence."""
    h = digest(seed, "reply", _last_user(body))
    first_line = " ".join(_last_user(body).split())[:60]
    echo = f' You asked: "{first_line}".' if first_line else ""
    opener, middle = _OPENERS[int(h[0:4], 16) % len(_OPENERS)], _BODIES[int(h[4:8], 16) % len(_BODIES)]
    text = f"{opener} (seed {seed}).{echo}\n\n{middle}\n"
    if sentinel:
        summary = f"Emulator run {h[8:16]}: mission handled deterministically, one change proposed, tests named."
        text += f"\n```{SENTINEL_TAG}\n{summary}\n```\n"
    return text


def split_deltas(text: str, pieces: int = 8) -> list[str]:
    """Split ``text`` into about ``pieces`` deltas at word boundaries (the fence is split too)."""
    words = text.split(" ") if text else []
    size = max(1, math.ceil(len(words) / pieces))
    out = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [chunk + (" " if i < len(out) - 1 else "") for i, chunk in enumerate(out)]


def usage_for(prompt: str, completion: str) -> dict[str, int]:
    p, c = estimate_tokens(prompt), estimate_tokens(completion)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def chat_chunk(cid: str, created: int, model: str, delta: dict[str, Any] | None = None,
               finish_reason: str | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk``; no ``delta``: no choices (the usage chunk)."""
    chunk: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                             "system_fingerprint": None, "choices": [] if delta is None else [
                                 {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
    return chunk if usage is None else {**chunk, "usage": usage}


def chat_completion(cid: str, created: int, model: str, text: str, finish_reason: str, prompt: str) -> dict[str, Any]:
    return {
        "id": cid, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage_for(prompt, text), "system_fingerprint": None,
    }


def completion_chunk(cid: str, created: int, model: str, text: str, finish_reason: str | None) -> dict[str, Any]:
    return {"id": cid, "object": "text_completion", "created": created, "model": model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}]}


def text_completion(cid: str, created: int, model: str, text: str, finish_reason: str, prompt: str) -> dict[str, Any]:
    return {**completion_chunk(cid, created, model, text, finish_reason), "usage": usage_for(prompt, text)}


def embeddings_body(seed: int, model: str, inputs: list[str], encoding_format: str | None) -> dict[str, Any]:
    data = []
    for index, text in enumerate(inputs):
        values = [(b - 127.5) / 127.5 for b in bytes.fromhex(digest(seed, "embedding", model, text))[:EMBEDDING_DIM]]
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        vector = [round(v / norm, 6) for v in values]
        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
        embedding = packed if encoding_format == "base64" else vector
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(estimate_tokens(t) for t in inputs)
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def models_body(seed: int, models: tuple[str, ...]) -> dict[str, Any]:
    created = created_at(seed) - 86_400 * 30
    return {"object": "list", "data": [{"id": m, "object": "model", "created": created, "owned_by": "nous"}
                                       for m in models]}


def envelope(message: str, type_: str | None, code: str | int | None, *, param: str | None = None,
             with_param: bool = False) -> dict[str, Any]:
    """``{"error": {message, type, [param], code}}``."""
    error: dict[str, Any] = {"message": message, "type": type_, **({"param": param} if with_param else {})}
    return {"error": {**error, "code": code}}


def sse(obj: Any) -> bytes:
    """One ``data:`` frame of compact JSON, key order as built (``[DONE]`` passes as a string)."""
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()
