"""One exchange as code to run elsewhere: ``curl``, Python with httpx, Python with the openai SDK.

Built from the request as recorded (method, URL, headers, JSON body), never from the live config: the
bearer is never in it. Where the request carried one, the code reads it from ``HERMES_NB_AUTH_TOKEN``
(``$HERMES_NB_AUTH_TOKEN`` in the shell, ``os.environ`` in Python); any other header value the recorder
masked stays ``<redacted>``. Everything goes through the session's redactor once more.
"""

from __future__ import annotations

import json
import pprint
import shlex
from typing import Any

from hermes_nb.core.facts import ENV_AUTH_TOKEN
from hermes_nb.core.redaction import Redactor

__all__ = ["TOKEN_ENV", "curl_snippet", "httpx_snippet", "openai_snippet", "snippets"]

TOKEN_ENV = ENV_AUTH_TOKEN
#: headers a client sets by itself: left out of the code
_OWN = {"authorization", "content-length", "host", "accept-encoding", "connection", "user-agent"}
_ROUTES = ("/chat/completions", "/completions", "/responses", "/models", "/embeddings")


def _headers(request: Any) -> dict[str, str]:
    return {k: v for k, v in (request.headers or {}).items() if k.lower() not in _OWN}


def _has_bearer(request: Any) -> bool:
    return any(k.lower() == "authorization" for k in (request.headers or {}))


def _streams(request: Any) -> bool:
    body = request.body
    return isinstance(body, dict) and body.get("stream") is True


def curl_snippet(request: Any, redactor: Redactor | None = None) -> str:
    red = redactor or Redactor()
    lines = [f"curl -sS{' -N' if _streams(request) else ''} -X {request.method} {shlex.quote(request.url)}"]
    if _has_bearer(request):
        lines.append(f'-H "Authorization: Bearer ${TOKEN_ENV}"')
    lines += [f"-H {shlex.quote(f'{k}: {v}')}" for k, v in _headers(request).items()]
    if request.body is not None:
        lines.append(f"--data-raw {shlex.quote(json.dumps(request.body, ensure_ascii=False))}")
    return red.text(" \\\n  ".join(lines)) + "\n"


def _py_headers(request: Any) -> str:
    items = [f'"Authorization": "Bearer " + os.environ["{TOKEN_ENV}"]'] if _has_bearer(request) else []
    items += [f"{k!r}: {v!r}" for k, v in _headers(request).items()]
    return "{" + ", ".join(items) + "}"


def httpx_snippet(request: Any, redactor: Redactor | None = None) -> str:
    red = redactor or Redactor()
    body = ("" if request.body is None
            else f",\n    json={pprint.pformat(request.body, sort_dicts=False, width=100)}")
    call = f'"{request.method}", {request.url!r},\n    headers={_py_headers(request)}{body},\n    timeout=300.0,'
    if _streams(request):
        code = (f"with httpx.stream(\n    {call}\n) as response:\n    print(response.status_code)\n"
                "    for line in response.iter_lines():\n        print(line)\n")
    else:
        code = f"response = httpx.request(\n    {call}\n)\nprint(response.status_code)\nprint(response.text)\n"
    return red.text(f"import os\n\nimport httpx\n\n{code}")


def _base_url(url: str) -> tuple[str, str]:
    """(base URL incl. ``/v1``, the route after it)."""
    for route in _ROUTES:
        if url.endswith(route):
            return url[: -len(route)], route
    head, sep, tail = url.partition("/v1/")
    return (head + "/v1", "/" + tail) if sep else (url.rsplit("/", 1)[0], "/" + url.rsplit("/", 1)[1])


def openai_snippet(request: Any, redactor: Redactor | None = None) -> str:
    red = redactor or Redactor()
    base, route = _base_url(request.url)
    key = f'os.environ.get("{TOKEN_ENV}", "not-needed")' if _has_bearer(request) else '"not-needed"'
    head = (f"import os\n\nfrom openai import OpenAI\n\n"
            f"client = OpenAI(base_url={base!r}, api_key={key})  # the proxy attaches the real credentials\n")
    body = request.body if isinstance(request.body, dict) else {}
    if route == "/chat/completions" and request.method == "POST":
        args = ",\n    ".join(f"{k}={pprint.pformat(v, sort_dicts=False, width=100)}" for k, v in body.items())
        if body.get("stream") is True:
            code = (f"stream = client.chat.completions.create(\n    {args},\n)\nfor chunk in stream:\n"
                    "    if chunk.choices:\n"
                    "        print(chunk.choices[0].delta.content or \"\", end=\"\", flush=True)\n"
                    "    if chunk.usage:\n        print(\"\\n\", chunk.usage)\n")
        else:
            code = (f"completion = client.chat.completions.create(\n    {args},\n)\n"
                    "print(completion.choices[0].message.content)\nprint(completion.usage)\n")
    elif route == "/models" and request.method == "GET":
        code = "for model in client.models.list():\n    print(model.id)\n"
    else:
        options = f", body={pprint.pformat(request.body, sort_dicts=False)}" if request.body is not None else ""
        code = (f"# not one of the SDK's own calls: its raw request helper\n"
                f"answer = client.{request.method.lower()}({route!r}, cast_to=object{options})\nprint(answer)\n")
    return red.text(head + "\n" + code)


def snippets(request: Any, redactor: Redactor | None = None) -> dict[str, str]:
    """``{"curl": …, "httpx": …, "openai": …}`` for one recorded request."""
    return {"curl": curl_snippet(request, redactor), "httpx": httpx_snippet(request, redactor),
            "openai": openai_snippet(request, redactor)}
