"""Upstream behaviour: one request in, one :class:`Reply` (a plan of bytes and actions) out.

Pure except for nothing: the plan is executed by :mod:`hermes_nb.emulator.app`,
either directly (``upstream`` and ``seed`` profiles) or through the proxy
pass-through of the ``hermes-agent`` profile, which copies status, headers and
body like the real proxy does and ends the body cleanly when the upstream breaks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.core.providers import PROXY_PROVIDERS

from . import content as c

__all__ = [
    "check_profile",
    "PROFILES",
    "SCENARIO_HEADER",
    "PROFILE_HEADER",
    "SCENARIOS",
    "PROXY_SCENARIOS",
    "ALL_SCENARIOS",
    "IN_BAND_SCENARIOS",
    "TROUBLE_SCENARIOS",
    "UPSTREAM_SCENARIOS",
    "LOAD_SCENARIOS",
    "Settings",
    "Pause",
    "Action",
    "STALL",
    "RESET",
    "Reply",
    "json_reply",
    "upstream_reply",
    "paced_reply",
    "UPSTREAM_ROUTES",
]

#: per-request scenario override (the real proxy forwards it to its upstream)
SCENARIO_HEADER = "X-Hermes-Emulator-Scenario"
#: on the answer to an unknown scenario: the profile that answered (``upstream`` behind a real proxy)
PROFILE_HEADER = "X-Hermes-Emulator-Profile"
PROFILES: tuple[str, ...] = ("hermes-agent", "seed", "upstream", "minimal")
SCENARIOS: tuple[str, ...] = (
    "ok", "no-sentinel", "empty", "length", "auth-stale", "rate-limited", "server-error", "bad-gateway",
    "model-missing", "stream-error-event", "truncated", "slow", "stall", "reset", "malformed", "no-done",
)
#: faults of the proxy itself (hermes-agent and seed profiles; the real proxy's own 502/504 envelopes)
PROXY_SCENARIOS: tuple[str, ...] = ("upstream-unreachable", "upstream-timeout")
#: in-band errors in the other shapes other servers emit inside a 200 stream, and a whole message after
#: the deltas (issue 10); kept out of SCENARIOS, the list checked against the real proxy's pass-through
IN_BAND_SCENARIOS: tuple[str, ...] = ("stream-error-flat", "stream-error-typed", "stream-error-anthropic",
                                      "late-message")
#: for the load probe (issue 22): ``paced`` (the first delta after ``first_delta_s``, one token per delta every
#: ``token_interval_s``, ``max_tokens`` of them) and ``concurrency-limited`` (paced, and a 429 with Retry-After for
#: each request beyond ``max_concurrent`` in flight); see :func:`paced_reply`
LOAD_SCENARIOS: tuple[str, ...] = ("paced", "concurrency-limited")
#: upstream trouble that is not a fault (:mod:`.trouble`): a slow first byte, a slow answer
TROUBLE_SCENARIOS: tuple[str, ...] = ("slow-first-byte", "slow-answer")
#: what an upstream can do (everything but the proxy's own faults): the rig's live upstream takes these
UPSTREAM_SCENARIOS: tuple[str, ...] = SCENARIOS + IN_BAND_SCENARIOS + LOAD_SCENARIOS + TROUBLE_SCENARIOS
ALL_SCENARIOS: tuple[str, ...] = UPSTREAM_SCENARIOS + PROXY_SCENARIOS
JSON_CT = "application/json; charset=utf-8"
SSE_CT = "text/event-stream"
#: upstream routes (relative to /v1) -> allowed method
UPSTREAM_ROUTES: dict[str, str] = {
    "/chat/completions": "POST", "/completions": "POST", "/embeddings": "POST", "/models": "GET",
}
BAD_GATEWAY_HTML = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)



def check_profile(profile: str = "hermes-agent", scenario: str = "ok", provider: str = "nous") -> None:
    """ValueError unless ``profile`` is known, ``scenario`` is one it plays and ``provider`` one the proxy
    profiles front (:data:`hermes_nb.core.providers.PROXY_PROVIDERS`): what an emulator checks at start."""
    if provider not in PROXY_PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; choose one of: {', '.join(PROXY_PROVIDERS)}")
    if profile not in PROFILES:
        raise ValueError(f"unknown emulator profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    if profile == "minimal" and scenario != "ok":
        raise ValueError(f"the minimal profile has one scenario, ok (got {scenario!r})")
    if scenario not in ALL_SCENARIOS or (profile == "upstream" and scenario in PROXY_SCENARIOS):
        raise ValueError(f"unknown emulator scenario {scenario!r} for the {profile} profile; "
                         f"choose one of: {', '.join(ALL_SCENARIOS)} (the last two need a proxy profile)")


@dataclass(frozen=True, slots=True)
class Settings:
    """How an emulator instance behaves (fixed at start; the scenario can be overridden per request)."""

    profile: str = "hermes-agent"
    scenario: str = "ok"
    seed: int = 0
    models: tuple[str, ...] = c.DEFAULT_MODELS
    #: delay before each delta in the ``slow`` scenario
    delay_s: float = 0.05
    #: Retry-After value of the ``rate-limited`` scenario (seconds)
    retry_after: int = 2
    #: how long the ``reset`` scenario waits after its last delta before the RST (lets the text arrive first)
    reset_grace_s: float = 0.05
    #: the provider a proxy profile fronts (``hermes proxy start --provider``): its /health name, paths, texts
    provider: str = "nous"
    #: ``slow-first-byte``: seconds before the status line; ``slow-answer``: seconds a generated answer takes
    first_byte_s: float = 6.0
    answer_s: float = 25.0
    #: load scenarios: the pause before the first content delta, and between the next ones (seconds)
    first_delta_s: float = 0.1
    token_interval_s: float = 0.01
    #: ``concurrency-limited``: requests in flight beyond this many are answered 429 with Retry-After
    max_concurrent: int = 4
    #: load scenarios: reasoning deltas before the answer, a pause after half the answer (a stall), and a pause
    #: between the last answer token and the finish, usage and ``[DONE]`` chunks (a trailer)
    reasoning_tokens: int = 0
    stall_s: float = 0.0
    trailer_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


@dataclass(frozen=True, slots=True)
class Action:
    name: str


STALL = Action("stall")
RESET = Action("reset")
Part = bytes | Pause | Action


@dataclass(slots=True)
class Reply:
    status: int
    content_type: str
    parts: list[Part]
    headers: dict[str, str] = field(default_factory=dict)
    #: chunked body written piece by piece (SSE, or a faulty JSON body); else one body with Content-Length
    streamed: bool = False

    @property
    def body(self) -> bytes:
        return b"".join(p for p in self.parts if isinstance(p, bytes))


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    """Same bytes and content type as ``aiohttp.web.json_response``."""
    return Reply(status, JSON_CT, [json.dumps(obj).encode()], dict(headers or {}))


def _invalid(message: str, *, param: str | None = None, code: str | None = None, status: int = 400) -> Reply:
    return json_reply(status, c.envelope(message, "invalid_request_error", code, param=param, with_param=True))


def error_reply(scenario: str, settings: Settings, *, model: str | None = None) -> Reply | None:
    """The upstream's answer for an error scenario, or None."""
    if scenario == "auth-stale":
        return _invalid("Incorrect API key provided: the bearer token is expired or revoked.",
                        code="invalid_api_key", status=401)
    if scenario == "rate-limited":
        msg = f"Rate limit reached for requests. Please try again in {settings.retry_after}s."
        return json_reply(429, c.envelope(msg, "rate_limit_error", "rate_limit_exceeded"),
                          {"Retry-After": str(settings.retry_after)})
    if scenario == "server-error":
        msg = "The server had an error while processing your request. Sorry about that!"
        return json_reply(500, c.envelope(msg, "server_error", None))
    if scenario == "bad-gateway":
        return Reply(502, "text/html", [BAD_GATEWAY_HTML.encode()])
    if scenario == "model-missing" and model is not None:
        return json_reply(404, c.envelope(f"The model `{model}` does not exist", "invalid_request_error",
                                          "model_not_found"))
    return None


def upstream_reply(settings: Settings, scenario: str, route: str, method: str, raw: bytes) -> Reply:
    """What an OpenAI-compatible upstream answers to ``method /v1<route>`` with body ``raw``."""
    if UPSTREAM_ROUTES.get(route) != method and not (route == "/models" and method == "HEAD"):
        return _invalid(f"Invalid URL ({method} /v1{route})", status=404)
    early = error_reply(scenario, settings)
    if early is not None:
        return early
    if route == "/models":
        return _shape_json(settings, scenario, c.models_body(settings.seed, () if scenario == "empty"
                                                              else settings.models))
    if not raw.strip():
        return _invalid("you must provide a model parameter")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return _invalid("We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                        "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
                        "sent was not valid JSON.)")
    if not isinstance(body, dict):
        return _invalid(f"Invalid type for request body: expected an object, but got {type(body).__name__} instead.",
                        code="invalid_type")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _invalid("you must provide a model parameter")
    problem = _validate(route, body)
    if problem is not None:
        return problem
    missing = error_reply(scenario, settings, model=model)
    if missing is not None:
        return missing
    if route == "/embeddings":
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        emb = c.embeddings_body(settings.seed, model, [str(i) for i in inputs], body.get("encoding_format"))
        return _shape_json(settings, scenario, emb)
    return _generate(settings, scenario, route, body, model)


def _validate(route: str, body: dict[str, Any]) -> Reply | None:
    if route == "/chat/completions":
        messages = body.get("messages")
        if messages is None:
            return _invalid("Missing required parameter: 'messages'.", param="messages",
                            code="missing_required_parameter")
        if not isinstance(messages, list):
            return _invalid("Invalid type for 'messages': expected an array.", param="messages", code="invalid_type")
        if not messages:
            return _invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
                            "empty array instead.", param="messages", code="empty_array")
    elif route == "/completions" and "prompt" not in body:
        return _invalid("Missing required parameter: 'prompt'.", param="prompt", code="missing_required_parameter")
    elif route == "/embeddings" and not isinstance(body.get("input"), (str, list)):
        return _invalid("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
    return None


def _shape_json(settings: Settings, scenario: str, obj: dict[str, Any]) -> Reply:
    """A JSON answer bent by a body-shaping scenario (slow, truncated, stall, reset, malformed, error event)."""
    data = json.dumps(obj).encode()
    half = data[: max(1, len(data) // 2)]
    if scenario == "slow":
        return Reply(200, JSON_CT, [Pause(settings.delay_s), data])
    if scenario == "truncated":
        return Reply(200, JSON_CT, [half], streamed=True)
    if scenario == "stall":
        return Reply(200, JSON_CT, [half, STALL], streamed=True)
    if scenario == "reset":
        return Reply(200, JSON_CT, [half, Pause(settings.reset_grace_s), RESET], streamed=True)
    if scenario == "malformed":
        return Reply(200, JSON_CT, [half + b"<<not json"])
    if scenario == "stream-error-event":
        return json_reply(200, _in_band_error())
    if scenario in _OTHER_ERROR_SHAPES:
        return json_reply(200, _OTHER_ERROR_SHAPES[scenario])
    return json_reply(200, obj)


def _in_band_error() -> dict[str, Any]:
    return c.envelope("The upstream model failed while generating the answer.", "server_error", "stream_error")


#: the other in-band error shapes: flat with a status (recognised in plain bodies too), a typed frame
#: (litellm and others), Anthropic's error event (sent as ``event: error`` when streamed)
_OTHER_ERROR_SHAPES: dict[str, dict[str, Any]] = {
    "stream-error-flat": {"status": 401, "message": "Nous Portal credentials expired; the upstream refused them."},
    "stream-error-typed": {"type": "error", "message": "Upstream overloaded while streaming.", "code": "overloaded"},
    "stream-error-anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
}


#: output tokens of a load-scenario answer when the request sets no ``max_tokens`` (and the most it may ask for)
PACED_DEFAULT_TOKENS = 16
PACED_MAX_TOKENS = 4096


def paced_reply(settings: Settings, route: str, body: dict[str, Any], model: str) -> Reply:
    """A load-scenario chat answer: ``reasoning_tokens`` reasoning deltas (``reasoning_content``), then
    ``max_tokens`` (or ``max_completion_tokens``) one-token answer deltas (``tok``); the first delta after
    ``first_delta_s``, each next one ``token_interval_s`` later, ``stall_s`` more after half the answer, and
    ``trailer_s`` before the closing chunks; the usage chunk counts them exactly (prompt: ~4 characters a token)."""
    requested = next((v for v in (body.get("max_tokens"), body.get("max_completion_tokens"))
                      if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)
    count = min(requested or PACED_DEFAULT_TOKENS, PACED_MAX_TOKENS)
    thinking = settings.reasoning_tokens
    cid = c.request_id("chatcmpl", settings.seed, route, body)
    created = c.created_at(settings.seed)
    prompt = c.prompt_text(body)
    usage: dict[str, Any] = {**c.usage_for(prompt, ""), "completion_tokens": count + thinking}
    usage["total_tokens"] = usage["prompt_tokens"] + count + thinking
    if thinking:
        usage["completion_tokens_details"] = {"reasoning_tokens": thinking}
    finish = "length" if requested else "stop"
    took = settings.first_delta_s + settings.token_interval_s * (count + thinking - 1)
    if body.get("stream") is not True:
        whole = c.chat_completion(cid, created, model, "tok " * count, finish, prompt)
        whole["usage"] = usage
        return Reply(200, JSON_CT, [Pause(took + settings.stall_s + settings.trailer_s), json.dumps(whole).encode()])
    parts: list[Part] = [c.sse(c.chat_chunk(cid, created, model, content="", role=True)), Pause(settings.first_delta_s)]
    reasoning = c.chat_chunk(cid, created, model)
    reasoning["choices"][0]["delta"] = {"reasoning_content": "think "}
    thought = c.sse(reasoning)
    delta = c.sse(c.chat_chunk(cid, created, model, content="tok "))
    for i in range(thinking + count):
        if i and settings.token_interval_s > 0:
            parts.append(Pause(settings.token_interval_s))
        if i == thinking + count // 2 and settings.stall_s > 0:
            parts.append(Pause(settings.stall_s))
        parts.append(thought if i < thinking else delta)
    if settings.trailer_s > 0:
        parts.append(Pause(settings.trailer_s))
    parts.append(c.sse(c.chat_chunk(cid, created, model, finish_reason=finish)))
    parts.append(c.sse(c.chat_chunk(cid, created, model, usage=usage, empty_choices=True)))
    parts.append(c.sse("[DONE]"))
    return Reply(200, SSE_CT, parts, {"Cache-Control": "no-cache"}, streamed=True)


def _generate(settings: Settings, scenario: str, route: str, body: dict[str, Any], model: str) -> Reply:
    if scenario in LOAD_SCENARIOS and route == "/chat/completions":
        return paced_reply(settings, route, body, model)
    seed = settings.seed
    cid = c.request_id("chatcmpl" if route == "/chat/completions" else "cmpl", seed, route, body)
    created = c.created_at(seed)
    text = "" if scenario == "empty" else c.reply_text(seed, body, sentinel=scenario != "no-sentinel")
    finish = "stop"
    if scenario == "length":
        text, finish = text[: len(text) // 2], "length"
    prompt = c.prompt_text(body)
    chat = route == "/chat/completions"
    if body.get("stream") is not True:
        build = c.chat_completion if chat else c.text_completion
        return _shape_json(settings, scenario, build(cid, created, model, text, finish, prompt))

    frame: Callable[[str], bytes]
    if chat:
        def frame(piece: str) -> bytes:
            return c.sse(c.chat_chunk(cid, created, model, content=piece))
        head = [c.sse(c.chat_chunk(cid, created, model, content="", role=True))]
        tail_finish = c.sse(c.chat_chunk(cid, created, model, finish_reason=finish))
    else:
        def frame(piece: str) -> bytes:
            return c.sse(c.completion_chunk(cid, created, model, piece, None))
        head = []
        tail_finish = c.sse(c.completion_chunk(cid, created, model, "", finish))
    options = body.get("stream_options")
    usage_wanted = not (isinstance(options, dict) and options.get("include_usage") is False)
    tail: list[Part] = [tail_finish]
    if usage_wanted and chat:
        tail.append(c.sse(c.chat_chunk(cid, created, model, usage=c.usage_for(prompt, text), empty_choices=True)))
    tail.append(c.sse("[DONE]"))

    deltas = [frame(piece) for piece in c.split_deltas(text)]
    parts: list[Part] = list(head)
    if scenario == "slow":
        for delta in deltas:
            parts += [Pause(settings.delay_s), delta]
        parts += tail
    elif scenario == "stream-error-event":
        parts += deltas[:3] + [c.sse(_in_band_error())]
    elif scenario == "stream-error-anthropic":
        parts += deltas[:3] + [b"event: error\n" + c.sse(_OTHER_ERROR_SHAPES[scenario])]
    elif scenario in _OTHER_ERROR_SHAPES:
        parts += deltas[:3] + [c.sse(_OTHER_ERROR_SHAPES[scenario])]
    elif scenario == "late-message" and chat:
        whole = c.chat_completion(cid, created, model, text, finish, prompt)
        parts += deltas[: len(deltas) // 2] + [c.sse({**whole, "object": "chat.completion.chunk"})] + tail
    elif scenario == "truncated":
        parts += deltas[:3]
    elif scenario == "no-done":  # a clean end with a finish_reason but no [DONE] (hermes-agent >= 0.21 appends one)
        parts += deltas + tail[:-1]
    elif scenario == "stall":
        parts += deltas[:2] + [STALL]
    elif scenario == "reset":
        parts += deltas[:3] + [Pause(settings.reset_grace_s), RESET]
    elif scenario == "malformed":
        broken = f'data: {{"id":"{cid}","object":"chat.completion.chunk","choices":[{{"delta":{{"content":"oops'
        parts += deltas[:2] + [broken.encode() + b"\n\n"] + deltas[2:] + tail
    else:
        parts += deltas + tail
    return Reply(200, SSE_CT, parts, {"Cache-Control": "no-cache"}, streamed=True)
