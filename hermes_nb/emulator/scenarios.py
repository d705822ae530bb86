"""What the emulator does: its options (:class:`EmulatorSpec`), its scenarios, and the upstream's answer to a request
as a :class:`Reply`, a plan of bytes, pauses and actions that :mod:`.app` writes. No I/O, no clock, no uuid4: ids,
timestamps and texts derive from the seed and the request body, so the same request gets the same bytes."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import struct
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, ValidationError, model_validator

from hermes_nb.core.config import Provider
from hermes_nb.core.facts import DEFAULT_MODEL, SENTINEL_TAG, is_loopback_host
from hermes_nb.core.providers import default_model_for
from hermes_nb.core.spec import CommaList, Opt, Spec, conflict

SCENARIO_HEADER = "X-Hermes-Emulator-Scenario"  # per request (the real proxy forwards it to its upstream)
PROFILE_HEADER = "X-Hermes-Emulator-Profile"  # on an unknown scenario's 400: the profile that answered
Profile = Literal["hermes-agent", "seed", "upstream", "minimal"]
PROFILES: tuple[str, ...] = get_args(Profile)
#: the list checked against the real proxy's pass-through
SCENARIOS: tuple[str, ...] = (
    "ok", "no-sentinel", "empty", "length", "auth-stale", "rate-limited", "server-error", "bad-gateway",
    "model-missing", "stream-error-event", "truncated", "slow", "stall", "reset", "malformed", "no-done",
)
PROXY_SCENARIOS = ("upstream-unreachable", "upstream-timeout")  # the proxy's own 502/504: proxy profiles only
#: the other shapes of an error inside a 200 stream, and a whole message after the deltas
IN_BAND_SCENARIOS = ("stream-error-flat", "stream-error-typed", "stream-error-anthropic", "late-message")
LOAD_SCENARIOS = ("paced", "concurrency-limited")  # the load probe's: paced answers, 429s beyond max_concurrent
TROUBLE_SCENARIOS = ("slow-first-byte", "slow-answer")  # an upstream's trouble that is not a fault: seconds long
#: what an upstream can do (everything but the proxy's own faults): the rig's live upstream takes these
UPSTREAM_SCENARIOS: tuple[str, ...] = SCENARIOS + IN_BAND_SCENARIOS + LOAD_SCENARIOS + TROUBLE_SCENARIOS
ALL_SCENARIOS: tuple[str, ...] = UPSTREAM_SCENARIOS + PROXY_SCENARIOS
JSON_CT = "application/json; charset=utf-8"
SSE_CT = "text/event-stream"
#: upstream routes (relative to /v1) -> allowed method; and the Responses API (POST)
UPSTREAM_ROUTES = {"/chat/completions": "POST", "/completions": "POST", "/embeddings": "POST", "/models": "GET"}
RESPONSES_ROUTE = "/responses"
RESET_GRACE_S = 0.05  # ``reset``: after its last delta, before the RST (the text arrives first)
BAD_GATEWAY_HTML = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway"
                    "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
_FAILED = "The upstream model failed while generating the answer."
#: in-band errors (a 200 JSON body, or after a few deltas): OpenAI's, flat, typed (litellm…), Anthropic's event
_IN_BAND: dict[str, dict[str, Any]] = {
    "stream-error-event": {"error": {"message": _FAILED, "type": "server_error", "code": "stream_error"}},
    "stream-error-flat": {"status": 401, "message": "Nous Portal credentials expired; the upstream refused them."},
    "stream-error-typed": {"type": "error", "message": "Upstream overloaded while streaming.", "code": "overloaded"},
    "stream-error-anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
}
_LIBRARY = Opt(faces=frozenset())  # a keyword of serve_emulator(), no flag
BASE_CREATED = 1755561600  # 2025-08-19T00:00:00Z, the spike's example ``created``; offsets come from the seed
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


class EmulatorSpec(Spec):
    """An emulator's options: ``hermes-nb emulator``'s flags, :func:`~hermes_nb.emulator.serve_emulator`'s keywords.
    Fixed at start; a request's :data:`SCENARIO_HEADER` may pick another scenario."""

    host: str = Field("127.0.0.1", description="bind address (loopback only)")
    port: int = Field(8645, ge=0, le=65535, description="bind port, 0 = any free port")
    profile: Profile = Field("hermes-agent", description="what to emulate")
    scenario: str = Field("ok", description="upstream behaviour; upstream-unreachable/-timeout: the proxy's own "
                                            "502/504 (see docs/emulator.md)")
    provider: Provider = Field("nous", description="what the proxy profiles front: its /health name, forwarded "
                                                   "paths (xai adds /v1/responses) and texts")
    seed: int = Field(0, description="seed of the deterministic ids and texts")
    models: Annotated[list[str] | None, CommaList] = Field(None, description="model ids listed by /v1/models "
                                                                             "(default: the provider's)")
    delay_s: float = Field(0.05, ge=0, description="per-delta pause of the slow scenario")
    retry_after_s: int = Field(2, ge=0, description="Retry-After of rate-limited")
    first_delta_s: float = Field(0.1, ge=0, description="paced, concurrency-limited: pause before the first delta")
    token_interval_s: float = Field(0.01, ge=0, description="paced, concurrency-limited: pause between the next "
                                                            "deltas")
    local_only: bool = Field(False, description="hermes-agent 0.22's guard before every route: 403 for a foreign "
                                                "Host (127.1), an Origin or a cross-site Sec-Fetch-Site")
    max_concurrent: int = Field(4, ge=1, description="concurrency-limited: 429 with Retry-After beyond N chat "
                                                     "requests in flight")
    reasoning_tokens: int = Field(0, ge=0, description="paced, concurrency-limited: reasoning deltas before the answer")
    stall_s: float = Field(0.0, ge=0, description="paced, concurrency-limited: a pause after half the answer")
    trailer_s: float = Field(0.0, ge=0, description="paced, concurrency-limited: a pause before the finish, usage "
                                                    "and [DONE] chunks")
    reuse_port: bool = Field(False, description="bind with SO_REUSEPORT: several emulator processes share one port "
                                                "(the load probe's)")
    first_byte_s: Annotated[float, _LIBRARY] = Field(6.0, ge=0, description="slow-first-byte: before the status line")
    answer_s: Annotated[float, _LIBRARY] = Field(25.0, ge=0, description="slow-answer: what a generated answer takes")

    @model_validator(mode="after")
    def _fits(self) -> EmulatorSpec:
        if not is_loopback_host(self.host):
            raise conflict("host", why=f"is loopback only: {self.host!r} is not a loopback address (127.0.0.1, ::1, "
                                       "localhost); the emulator is never exposed")
        if self.models is not None and not self.models:
            raise conflict("models", why="must name at least one model id (comma-separated)")
        if self.profile == "minimal" and self.scenario != "ok":
            why = f"the minimal profile has one scenario, ok (got {self.scenario!r})"
        elif self.scenario not in ALL_SCENARIOS or (self.profile == "upstream" and self.scenario in PROXY_SCENARIOS):
            why = (f"unknown emulator scenario {self.scenario!r} for the {self.profile} profile; choose one of: "
                   f"{', '.join(ALL_SCENARIOS)} (the last two need a proxy profile)")
        else:
            return self
        raise conflict("profile", "scenario", why=f"do not fit: {why}")

    @classmethod
    def of(cls, **options: Any) -> EmulatorSpec:
        """The spec from a library call's keywords: ValueError, one line, for a bad one."""
        if "retry_after" in options:  # serve_emulator()'s name for it
            options["retry_after_s"] = options.pop("retry_after")
        try:
            return cls(**options)
        except ValidationError as exc:
            raise ValueError(cls.explain(exc)) from None

    @property
    def listed(self) -> tuple[str, ...]:  # what /v1/models lists
        return tuple(self.models or MODELS_BY_PROVIDER[self.provider])


def digest(seed: int, *parts: Any) -> str:
    """Hex SHA-256 of the seed and the parts (JSON-canonicalised)."""
    h = hashlib.sha256(str(seed).encode())
    for part in parts:
        h.update(b"\x00" + json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()


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


def reply_text(seed: int, body: Any, *, sentinel: bool = True) -> str:
    """The assistant text for a request: a few sentences, optionally ending with the sentinel fence."""
    messages = body.get("messages") if isinstance(body, dict) else None
    users = [m["content"] for m in messages if isinstance(m, dict) and m.get("role") == "user"
             and isinstance(m.get("content"), str)] if isinstance(messages, list) else []
    last = users[-1] if users else prompt_text(body)
    h = digest(seed, "reply", last)
    first_line = " ".join(last.split())[:60]
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


def completion_chunk(cid: str, created: int, model: str, text: str, finish_reason: str | None) -> dict[str, Any]:
    return {"id": cid, "object": "text_completion", "created": created, "model": model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}]}


def envelope(message: str, type_: str | None, code: str | int | None, *, param: str | None = None,
             with_param: bool = False) -> dict[str, Any]:
    """``{"error": {message, type, [param], code}}``."""
    error: dict[str, Any] = {"message": message, "type": type_, **({"param": param} if with_param else {})}
    return {"error": {**error, "code": code}}


def sse(obj: Any) -> bytes:
    """One ``data:`` frame of compact JSON, key order as built (``[DONE]`` passes as a string)."""
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


STALL, RESET = "stall", "reset"  # the plan's actions: send nothing more until someone gives up; abort with a TCP RST
Part = bytes | Pause | str


@dataclass(slots=True)
class Reply:
    status: int
    content_type: str
    parts: list[Part]
    headers: dict[str, str] = field(default_factory=dict)
    streamed: bool = False  # a chunked body written piece by piece (SSE, a faulty JSON body); else Content-Length


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    """Same bytes and content type as ``aiohttp.web.json_response``."""
    return Reply(status, JSON_CT, [json.dumps(obj).encode()], dict(headers or {}))


def _invalid(message: str, *, param: str | None = None, code: str | None = None, status: int = 400) -> Reply:
    return json_reply(status, envelope(message, "invalid_request_error", code, param=param, with_param=True))


def _missing(name: str) -> Reply:
    return _invalid(f"Missing required parameter: '{name}'.", param=name, code="missing_required_parameter")


def _error(spec: EmulatorSpec, scenario: str, model: str | None = None) -> Reply | None:
    """The answer of an error scenario (``model-missing`` once the request names its model), or None."""
    if scenario == "auth-stale":
        return _invalid("Incorrect API key provided: the bearer token is expired or revoked.",
                        code="invalid_api_key", status=401)
    if scenario == "rate-limited":
        msg = f"Rate limit reached for requests. Please try again in {spec.retry_after_s}s."
        return json_reply(429, envelope(msg, "rate_limit_error", "rate_limit_exceeded"),
                          {"Retry-After": str(spec.retry_after_s)})
    if scenario == "server-error":
        msg = "The server had an error while processing your request. Sorry about that!"
        return json_reply(500, envelope(msg, "server_error", None))
    if scenario == "bad-gateway":
        return Reply(502, "text/html", [BAD_GATEWAY_HTML.encode()])
    if scenario == "model-missing" and model is not None:
        return json_reply(404, envelope(f"The model `{model}` does not exist", "invalid_request_error",
                                          "model_not_found"))
    return None


def upstream_answer(spec: EmulatorSpec, scenario: str, route: str, method: str, raw: bytes) -> Reply:
    """What an OpenAI-compatible upstream answers to ``method /v1<route>`` with body ``raw``."""
    allowed = "POST" if route == RESPONSES_ROUTE else UPSTREAM_ROUTES.get(route)
    if method != allowed and not (route == "/models" and method == "HEAD"):
        return _invalid(f"Invalid URL ({method} /v1{route})", status=404)
    if route == "/models":
        created = created_at(spec.seed) - 86_400 * 30
        listed = [{"id": m, "object": "model", "created": created, "owned_by": "nous"}
                  for m in (() if scenario == "empty" else spec.listed)]
        return _error(spec, scenario) or _shape_json(spec, scenario, {"object": "list", "data": listed})
    reply = _error(spec, scenario) or _answer(spec, scenario, route, raw)
    if scenario != "slow-answer" or route == "/embeddings" or not 200 <= reply.status < 300:
        return reply
    # slow-answer: the body spread over answer_s (one JSON body: all of it after the wait), the headers at once
    pieces = [p for p in reply.parts if isinstance(p, bytes)]
    if len(pieces) < 2:
        parts: list[Part] = [Pause(spec.answer_s), *reply.parts]
    else:
        gap = Pause(spec.answer_s / (len(pieces) - 1))
        parts = [pieces[0], *(part for piece in pieces[1:] for part in (gap, piece))]
    return Reply(reply.status, reply.content_type, parts, dict(reply.headers), streamed=True)


def _answer(spec: EmulatorSpec, scenario: str, route: str, raw: bytes) -> Reply:
    """The answer to a request with a body: its errors first (the Responses API words two its own way)."""
    responses = route == RESPONSES_ROUTE
    if not raw.strip():
        return _invalid("you must provide a model parameter", param="model" if responses else None)
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return _invalid("We could not parse the JSON body of your request." + ("" if responses else
                        " (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API "
                        "expects a JSON payload, but what was sent was not valid JSON.)"))
    if not isinstance(body, dict) and not responses:
        return _invalid(f"Invalid type for request body: expected an object, but got {type(body).__name__} instead.",
                        code="invalid_type")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        return _invalid("you must provide a model parameter", param="model" if responses else None)
    if route == "/chat/completions":
        messages = body.get("messages")
        if messages is None:
            return _missing("messages")
        if not isinstance(messages, list):
            return _invalid("Invalid type for 'messages': expected an array.", param="messages", code="invalid_type")
        if not messages:
            return _invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
                            "empty array instead.", param="messages", code="empty_array")
    if route == "/completions" and "prompt" not in body:
        return _missing("prompt")
    if route in ("/embeddings", RESPONSES_ROUTE) and not isinstance(body.get("input"), (str, list)):
        return _missing("input")
    model = body["model"]
    if (missing := _error(spec, scenario, model)) is not None:
        return missing
    if route == "/embeddings":
        inputs = [str(i) for i in (body["input"] if isinstance(body["input"], list) else [body["input"]])]
        data = []
        for index, text in enumerate(inputs):
            raw = bytes.fromhex(digest(spec.seed, "embedding", model, text))[:EMBEDDING_DIM]
            values = [(b - 127.5) / 127.5 for b in raw]
            norm = math.sqrt(sum(v * v for v in values)) or 1.0
            vector = [round(v / norm, 6) for v in values]
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index,
                         "embedding": packed if body.get("encoding_format") == "base64" else vector})
        tokens = sum(estimate_tokens(t) for t in inputs)
        return _shape_json(spec, scenario, {"object": "list", "data": data, "model": model,
                                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
    if responses:
        return _responses(spec, scenario, body, model)
    return _completion(spec, scenario, route, body, model)


def _shape_json(spec: EmulatorSpec, scenario: str, obj: dict[str, Any]) -> Reply:
    """A JSON answer bent by a body-shaping scenario (slow, truncated, stall, reset, malformed, in-band error)."""
    data = json.dumps(obj).encode()
    half = data[: max(1, len(data) // 2)]
    bent: dict[str, tuple[list[Part], bool]] = {
        "slow": ([Pause(spec.delay_s), data], False), "truncated": ([half], True), "stall": ([half, STALL], True),
        "reset": ([half, Pause(RESET_GRACE_S), RESET], True), "malformed": ([half + b"<<not json"], False),
    }
    if scenario in bent:
        return Reply(200, JSON_CT, bent[scenario][0], streamed=bent[scenario][1])
    return json_reply(200, _IN_BAND.get(scenario, obj))


def _stream(spec: EmulatorSpec, scenario: str, head: list[Part], deltas: list[Part], tail: list[Part],
            ends: dict[str, list[Part]]) -> Reply:
    """An SSE answer: ``head``, the deltas, ``tail``; ``slow`` pauses before each delta, ``ends[scenario]``
    replaces everything after the third delta."""
    if scenario == "slow":
        body = [part for delta in deltas for part in (Pause(spec.delay_s), delta)] + tail
    else:
        body = deltas[:3] + ends[scenario] if scenario in ends else deltas + tail
    return Reply(200, SSE_CT, head + body, {"Cache-Control": "no-cache"}, streamed=True)


def _completion(spec: EmulatorSpec, scenario: str, route: str, body: dict[str, Any], model: str) -> Reply:
    """A chat or text completion, whole or streamed, as the scenario shapes it. The load scenarios pace a chat answer:
    ``reasoning_tokens`` reasoning deltas, then ``max_tokens`` one-token deltas; the first after ``first_delta_s``,
    the next ``token_interval_s`` apart, ``stall_s`` more after half of them, ``trailer_s`` before the last chunks."""
    chat = route == "/chat/completions"
    paced = chat and scenario in LOAD_SCENARIOS
    cid = f"{'chatcmpl' if chat else 'cmpl'}-emu{digest(spec.seed, route, body)[:24]}"
    created = created_at(spec.seed)
    requested = next((v for v in (body.get("max_tokens"), body.get("max_completion_tokens"))
                      if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)
    count, thinking = min(requested or 16, 4096), spec.reasoning_tokens  # paced tokens: 16 when none is asked
    finish = "length" if scenario == "length" or (paced and requested) else "stop"
    if paced:
        text = "tok " * count
    else:
        text = "" if scenario == "empty" else reply_text(spec.seed, body, sentinel=scenario != "no-sentinel")
        text = text[: len(text) // 2] if scenario == "length" else text
    usage: dict[str, Any] = usage_for(prompt_text(body), text)
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None}, "logprobs": None,
                  "finish_reason": finish}
        whole: dict[str, Any] = {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                 "choices": [choice], "usage": usage, "system_fingerprint": None}
    else:
        whole = {**completion_chunk(cid, created, model, text, finish), "usage": usage}
    if paced:
        usage.update(completion_tokens=count + thinking, total_tokens=usage["prompt_tokens"] + count + thinking)
        if thinking:
            usage["completion_tokens_details"] = {"reasoning_tokens": thinking}
    if body.get("stream") is not True:
        reply = _shape_json(spec, scenario, whole)
        if paced:  # the whole answer when the stream would have ended
            took = spec.first_delta_s + spec.token_interval_s * (count + thinking - 1) + spec.stall_s + spec.trailer_s
            reply.parts.insert(0, Pause(took))
        return reply
    pieces = ["tok "] * count if paced else split_deltas(text)
    head: list[Part] = []
    if chat:
        head = [sse(chat_chunk(cid, created, model, {"role": "assistant", "content": ""}))]
        frames = {piece: sse(chat_chunk(cid, created, model, {"content": piece})) for piece in set(pieces)}
        deltas: list[Part] = [frames[piece] for piece in pieces]
        tail: list[Part] = [sse(chat_chunk(cid, created, model, {}, finish))]
        options = body.get("stream_options")
        if paced or not (isinstance(options, dict) and options.get("include_usage") is False):
            tail.append(sse(chat_chunk(cid, created, model, usage=usage)))
    else:
        deltas = [sse(completion_chunk(cid, created, model, piece, None)) for piece in pieces]
        tail = [sse(completion_chunk(cid, created, model, "", finish))]
    tail.append(sse("[DONE]"))
    if paced:
        thought = sse(chat_chunk(cid, created, model, {"reasoning_content": "think "}))
        tokens, deltas = [thought] * thinking + deltas, [Pause(spec.first_delta_s)]
        for i, token in enumerate(tokens):
            if i and spec.token_interval_s > 0:
                deltas.append(Pause(spec.token_interval_s))
            if i == thinking + count // 2 and spec.stall_s > 0:
                deltas.append(Pause(spec.stall_s))
            deltas.append(token)
        if spec.trailer_s > 0:
            tail.insert(0, Pause(spec.trailer_s))
    elif scenario == "late-message" and chat:
        deltas = deltas[: len(deltas) // 2] + [sse({**whole, "object": "chat.completion.chunk"})]
    elif scenario == "no-done":  # a clean end with a finish_reason but no [DONE] (hermes-agent >= 0.21 appends one)
        tail = tail[:-1]
    elif scenario == "stall":
        deltas, tail = deltas[:2] + [STALL], []
    elif scenario == "malformed":
        broken = f'data: {{"id":"{cid}","object":"chat.completion.chunk","choices":[{{"delta":{{"content":"oops'
        deltas.insert(2, broken.encode() + b"\n\n")
    ends: dict[str, list[Part]] = {"truncated": [], "reset": [Pause(RESET_GRACE_S), RESET]}
    for name, obj in _IN_BAND.items():  # Anthropic's error is an ``event: error``
        ends[name] = [(b"event: error\n" if name == "stream-error-anthropic" else b"") + sse(obj)]
    return _stream(spec, scenario, head, deltas, tail, ends)


def _user_text(body: dict[str, Any]) -> str:
    """The Responses API's last user input: ``input`` as a string, or the last user item's text."""
    value = body.get("input")
    for item in reversed(value) if isinstance(value, list) else ():
        content = item.get("content") if isinstance(item, dict) and item.get("role", "user") == "user" else None
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return value if isinstance(value, str) else ""


def _responses(spec: EmulatorSpec, scenario: str, body: dict[str, Any], model: str) -> Reply:
    """OpenAI's Responses API (the xai provider forwards it): the chat route's text for the same user input,
    streamed as ``event: <type>`` frames with sequence numbers and no ``[DONE]``."""
    user = _user_text(body)
    rid = "resp_" + digest(spec.seed, RESPONSES_ROUTE, body)[:24]
    created = created_at(spec.seed)
    as_chat = {"messages": [{"role": "user", "content": user}]}
    text = "" if scenario == "empty" else reply_text(spec.seed, as_chat, sentinel=scenario != "no-sentinel")
    incomplete = None
    if scenario == "length":
        text, incomplete = text[: len(text) // 2], "max_output_tokens"
    status = "incomplete" if incomplete else "completed"
    item = {"id": f"msg_{rid[5:]}", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    done = {"type": "output_text", "text": text, "annotations": []}
    completed = {**item, "status": "completed", "content": [done]}

    def response(status: str, *, output: bool = False, error: dict[str, Any] | None = None) -> dict[str, Any]:
        """A ``response`` object; no output while in progress."""
        tokens = (estimate_tokens(user), estimate_tokens(text))
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}
        return {"id": rid, "object": "response", "created_at": created, "status": status, "model": model,
                "output": [completed] if output else [], "error": error,
                "incomplete_details": {"reason": incomplete} if incomplete and output else None,
                "usage": usage if output else None}

    if body.get("stream") is not True:
        return _shape_json(spec, scenario, response(status, output=True))
    seq = itertools.count()

    def frame(kind: str, **fields: Any) -> bytes:
        return f"event: {kind}\n".encode() + sse({"type": kind, "sequence_number": next(seq), **fields})

    at = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    head: list[Part] = [
        frame("response.created", response=response("in_progress")),
        frame("response.in_progress", response=response("in_progress")),
        frame("response.output_item.added", output_index=0, item=item),
        frame("response.content_part.added", **at, part={**done, "text": ""}),
    ]
    deltas: list[Part] = [frame("response.output_text.delta", **at, delta=piece) for piece in split_deltas(text)]
    tail: list[Part] = [
        frame("response.output_text.done", **at, text=text),
        frame("response.content_part.done", **at, part=done),
        frame("response.output_item.done", output_index=0, item=completed),
        frame(f"response.{status}", response=response(status, output=True)),
    ]
    failed = frame("response.failed", response=response("failed", error={"code": "server_error", "message": _FAILED}))
    return _stream(spec, scenario, head, deltas, tail, {"stream-error-event": [failed], "truncated": []})
