"""The prompt a mission becomes (uh-contract §4): UH's sections in order, then the sentinel instruction.

Also prompt *input* and the one place a run keeps it:

* :func:`read_prompt` reads a prompt file or stream with a limit (default
  :data:`~hermes_nb.core.facts.MAX_PROMPT_BYTES`, just above the proxy's 10 MB body cap): ``/dev/zero`` or a
  huge file is refused after ``limit + 1`` bytes, never read whole; bytes that are not UTF-8 are one error
  naming the source and the byte offset.
* A run stores the prompt once, in ``prompt.md``; every other record of it (the request in ``request.json``,
  the session's ``args``, ``runtime.started``, a dry run's ``--json``) carries :func:`prompt_reference` instead:
  ``<prompt.md: N bytes, sha256:…>`` (the digest and size of prompt.md's bytes).
"""

from __future__ import annotations

import hashlib
from typing import Any, BinaryIO, TextIO

from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import MAX_PROMPT_BYTES, PROMPT_FILE
from hermes_nb.core.yamlio import read_bytes_file, read_limited
from hermes_nb.harness.mission import Mission, Workflow
from hermes_nb.wire.sentinel import runtime_final_message_instruction

__all__ = ["MISSION_INSTRUCTION", "render_prompt", "read_prompt", "prompt_digest", "prompt_reference",
           "refer_to_prompt"]

#: The fixed line before the sentinel instruction (uh-contract §4 item 4).
MISSION_INSTRUCTION = "Carry out the mission above and produce the expected artifacts."


def _section(parts: list[str], lines: list[str]) -> None:
    """Append one section's lines (joined by newlines, then a blank line) to ``parts``: joined once, at the end,
    so a long description is copied once (into the prompt), not once more per section."""
    for i, line in enumerate(lines):
        parts += ["\n", line] if i else [line]
    parts.append("\n\n")


def render_prompt(mission: Mission, workflow: Workflow | None = None) -> str:
    """The user message: UH's sections in order, then the sentinel instruction."""
    parts: list[str] = []
    head = [f"# Mission: {mission.display_name}"]
    if mission.description:
        head += ["", mission.description.strip()]
    _section(parts, head)
    if workflow is not None and workflow.phases:
        lines = [f"## Workflow: {workflow.name}", ""]
        for phase in workflow.phases:
            lines.append(f"### {phase.name} ({phase.agent_role})")
            if phase.description:
                lines.append(phase.description.strip())
        _section(parts, lines)
    if mission.issues:
        _section(parts, ["## Related Issues"] + [
            f"- [{i.source}] {i.reference}" + (f" ({i.url})" if i.url else "") for i in mission.issues
        ])
    if mission.read_first:
        _section(parts, ["## Read First"] + [f"- {p}" for p in mission.read_first])
    if mission.expected_artifacts:
        _section(parts, ["## Expected Artifacts"] + [
            f"- {a.path}" + (f" ({a.type})" if a.type else "") for a in mission.expected_artifacts
        ])
    checks = mission.verification.checks or []
    if checks:
        _section(parts, ["## Verification Checks"] + [f"- {c}" for c in checks])
    parts.append(MISSION_INSTRUCTION + "\n")
    parts.append(runtime_final_message_instruction())
    return "".join(parts)


def read_prompt(source: str | BinaryIO | TextIO, *, what: str, max_bytes: int = MAX_PROMPT_BYTES) -> str:
    """A prompt from a file path or a binary stream (stdin), at most ``max_bytes`` of UTF-8, without the
    whitespace around it (a mission's prompt drops it anyway); one :class:`ConfigError` line for too large, not
    UTF-8 (with the byte offset), unreadable or empty. A big prompt is decoded once, never copied again here."""
    if max_bytes <= 0:
        raise ConfigError(f"the prompt size limit must be > 0 bytes, got {max_bytes}")
    if isinstance(source, str):
        data: bytes | str = read_bytes_file(source, what, max_bytes=max_bytes)
    else:
        try:  # a text stream (no .buffer) gives characters: at least as many bytes
            data = read_limited(source, max_bytes, what)
        except OSError as exc:
            raise ConfigError(f"{what}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{what} is not UTF-8 text (byte {exc.start})") from None
        size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise ConfigError(f"{what} is larger than {max_bytes} bytes (the limit; raise it if you mean it)")
    if isinstance(data, str):
        text = data.strip()
    else:
        start, end = 0, len(data)
        while start < end and data[start] in _ASCII_SPACE:
            start += 1
        while end > start and data[end - 1] in _ASCII_SPACE:
            end -= 1
        try:  # decoded from a view: the bytes are not copied to drop the whitespace
            text = str(memoryview(data)[start:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{what} is not UTF-8 text (byte {start + exc.start}: "
                              f"0x{data[start + exc.start]:02x})") from None
    if not text or text.isspace():
        raise ConfigError(f"{what}: the prompt is empty")
    return text


_ASCII_SPACE = frozenset(b" \t\n\r\x0b\x0c")


def prompt_digest(stored: str) -> dict[str, Any]:
    """``{"file": "prompt.md", "bytes": N, "sha256": …}`` of the prompt as prompt.md holds it (redacted)."""
    digest, size, step = hashlib.sha256(), 0, 1 << 20
    for start in range(0, len(stored), step):  # a piece at a time: never a second whole copy of a big prompt
        piece = stored[start:start + step].encode("utf-8", "surrogatepass")
        digest.update(piece)
        size += len(piece)
    return {"file": PROMPT_FILE, "bytes": size, "sha256": digest.hexdigest()}


def prompt_reference(digest: dict[str, Any]) -> str:
    """What a record holds where the prompt would be: ``<prompt.md: N bytes, sha256:…>``."""
    return f"<{digest['file']}: {digest['bytes']} bytes, sha256:{digest['sha256']}>"


def refer_to_prompt(body: Any, reference: str) -> Any:
    """A request body with every user message's content replaced by ``reference`` (the run sends one user
    message, the prompt; prompt.md holds it)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return body
    messages = [{**m, "content": reference} if isinstance(m, dict) and m.get("role") == "user" else m
                for m in body["messages"]]
    return {**body, "messages": messages}
