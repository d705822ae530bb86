"""The providers hermes-agent's proxy fronts (``nous``, ``xai``) in ONE table, and every operator hint built from
it; when the proxy's own error names a ``hermes …`` command, that text wins. Pure: no IO."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProviderInfo:
    """``display_name``: ``/health``'s ``upstream``; ``auth_store_id``: ``hermes auth``'s id for it."""

    id: str
    display_name: str
    auth_store_id: str
    allowed_paths: frozenset[str]
    default_model: str
    status_command: str
    login_command: str
    #: clears a credential the pool parked ("": the provider has no pool rule)
    reset_command: str = ""
    #: how long the pool parks its only credential after a relayed status
    cooldown_s: Mapping[int, int] = field(default_factory=dict)
    #: (from this release, seconds): the 429 cool-down from that release on (0.20: 60 s)
    sole_cooldown: tuple[tuple[int, int], int] | None = None
    #: the releases [from, to) whose ``reset_command`` leaves a live cool-down in place (0.20.x)
    reset_noop: tuple[tuple[int, ...], tuple[int, ...]] | None = None


_OPENAI_PATHS = frozenset({"/chat/completions", "/completions", "/embeddings", "/models"})
#: THE table (hermes-agent 0.16.0 … 0.19.0 ship exactly these two)
PROVIDER_TABLE: tuple[ProviderInfo, ...] = (
    ProviderInfo(
        id="nous", display_name="Nous Portal", auth_store_id="nous", allowed_paths=_OPENAI_PATHS,
        default_model="nousresearch/hermes-4-405b",
        status_command="hermes auth status nous", login_command="hermes auth add nous",
    ),
    ProviderInfo(
        id="xai", display_name="xAI Grok OAuth", auth_store_id="xai-oauth",
        allowed_paths=_OPENAI_PATHS | {"/responses"}, default_model="grok-4.3",
        status_command="hermes auth status xai-oauth", login_command="hermes auth add xai-oauth --type oauth",
        reset_command="hermes auth reset xai-oauth", cooldown_s={429: 3600, 401: 300},
        sole_cooldown=((0, 20), 60), reset_noop=((0, 20), (0, 21, 3)),
    ),
)
#: what ``hermes proxy start`` fronts without ``--provider``
DEFAULT_PROVIDER = "nous"
PROXY_PROVIDERS: tuple[str, ...] = tuple(p.id for p in PROVIDER_TABLE)
#: a sentence of an error message that names a ``hermes …`` command in backticks
_SENTENCE = re.compile(r"[^.!?]*`hermes [^`]+`[^.!?]*[.!?]?")
#: aiohttp's "Cannot connect to host api.x.ai:443 …" inside the proxy's ``upstream_unreachable`` message
_HOST = re.compile(r"(?:to host|host) ([A-Za-z0-9.\-\[\]:]+)")
_VERSION = re.compile(r"\b\d+\.\d+(?:\.\d+)?")
#: the Nous free tier's answers (hermes-agent 0.22), relayed as 401: each one's own action, never a re-login
_FREE_TIER = (
    ("Finish the quick check in your browser", "the Nous free tier asks for its browser check: start `{exe}` in a "
     "terminal (it opens the check in your browser), finish it, then re-run; the credentials need no re-login"),
    ("The quick check couldn't finish", "the Nous free tier's browser check did not finish: start `{exe}` in a "
     "terminal to finish it, then re-run"),
    ("Lots of people are getting started right now", "the Nous free tier is busy: re-run later (the proxy's "
     "message says when); nothing to fix"),
)


def provider_info(provider: str | None) -> ProviderInfo | None:
    """The row of ``provider`` (a proxy name, or an auth-store id such as ``xai-oauth``); None if unknown."""
    key = (provider or "").strip().lower()
    return next((p for p in PROVIDER_TABLE if key in (p.id, p.auth_store_id)), None) if key else None


def auth_store_id(provider: str) -> str:
    info = provider_info(provider)
    return info.auth_store_id if info else provider


def default_model_for(provider: str | None) -> str | None:
    info = provider_info(provider)
    return info.default_model if info else None


def provider_by_display_name(name: str | None) -> str | None:
    """``"xAI Grok OAuth"`` (``/health``'s ``upstream``) → ``xai``."""
    wanted = (name or "").strip().lower()
    return next((p.id for p in PROVIDER_TABLE if p.display_name.lower() == wanted), None) if wanted else None


def provider_by_allowed_paths(paths: Iterable[str]) -> str | None:
    """The provider whose forwarded paths are exactly ``paths`` (a ``path_not_allowed`` message's list)."""
    given = frozenset(p.strip() for p in paths if p and p.strip())
    return next((p.id for p in PROVIDER_TABLE if p.allowed_paths == given), None) if given else None


def provider_in_text(text: str | None) -> str | None:
    low = (text or "").lower()
    return next((p.id for p in PROVIDER_TABLE
                 if p.display_name.lower() in low or f"`hermes auth add {p.auth_store_id}" in low), None)


def proxy_remediation(message: str | None) -> str | None:
    """The sentences of a proxy error that name a ``hermes …`` command, verbatim; None when there are none."""
    return " ".join(m.group(0).strip() for m in _SENTENCE.finditer(message or "")) or None


def _cmd(info: ProviderInfo | None, command: Callable[[ProviderInfo], str], executable: str) -> str:
    """The provider's ``command`` in backticks with ``executable``; every provider's, joined by "or", if unknown."""
    rows = (info,) if info else PROVIDER_TABLE
    return " or ".join(f"`{executable}{command(p).removeprefix('hermes')}`" for p in rows)


def _span(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds >= 3600 else f"{seconds // 60} min" if seconds >= 300 else \
        f"about {seconds} s"


def _cooldown(info: ProviderInfo, status: int, executable: str, release: str | None) -> tuple[str, str]:
    """(how long a relayed ``status`` parks the only credential, what the reset does) on the releases named."""
    versions = [tuple(int(p) for p in v.split(".")) for v in _VERSION.findall(release or "")]
    span = _span(info.cooldown_s[status])
    if status == 429 and info.sole_cooldown is not None:
        since, sole = info.sole_cooldown
        newer = {v[:2] >= since for v in versions}
        span = (_span(sole) if newer == {True} else span if newer == {False} else
                f"{span} on hermes-agent before {'.'.join(map(str, since))}, {_span(sole)} from it on")
    if not info.reset_command:
        return span, ""
    reset = _cmd(info, lambda p: p.reset_command, executable)
    lo, hi = info.reset_noop or ((), ())
    noop = {lo <= v < hi for v in versions}
    return span, (f"{reset} clears it" if noop == {False} else f"{reset} does not clear it on this release (a no-op "
                  "on 0.20.x): wait it out" if noop == {True} else f"{reset} clears it (a no-op on 0.20.x: wait it "
                  "out there)")


def cooldown_note(provider: str | None, status: int | None, executable: str = "hermes", *,
                  release: str | None = None) -> str | None:
    """What a relayed 429/401 did to the provider's credential pool; None when it has no pool rule."""
    info = provider_info(provider)
    if info is None or (status or 0) not in info.cooldown_s:
        return None
    span, fix = _cooldown(info, int(status or 0), executable, release)
    return (f"the proxy has now parked this {info.display_name} credential for {span} (HTTP {status}): every "
            f"request until then is refused" + (f"; {fix}" if fix else ""))


def reauth_hint(provider: str | None = None, message: str | None = None, executable: str = "hermes", *,
                status: int | None = None, relayed: bool = False, release: str | None = None) -> str:
    """What to run when the proxy is locked: a free-tier challenge's action, the proxy's own remediation, else the
    provider's row (configured or named in ``message``; none: every provider's)."""
    free = next((action.format(exe=executable) for text, action in _FREE_TIER if text in (message or "")), None)
    if free is not None:
        return free
    own = proxy_remediation(message)
    info = provider_info(provider) or provider_info(provider_in_text(message))
    parked = cooldown_note(info.id if info else None, status, executable, release=release) if relayed else None
    if own:
        own = own.replace("`hermes ", f"`{executable} ")
        if not parked and info is not None and 429 in info.cooldown_s:  # a credential parked by a relayed 429/401?
            (span, fix), (span401, _) = (_cooldown(info, code, executable, release) for code in (429, 401))
            parked = f"a credential a relayed 429 parked comes back after {span}, after a 401 in {span401}; {fix}"
        return f"the proxy says: {own}" + (f" ({parked})" if parked else "")
    login = _cmd(info, lambda p: p.login_command, executable)
    if info is None:
        return (f"run `{executable} proxy status` (it shows which provider is logged in) and re-authenticate it: "
                f"{login}")
    hint = f"run {_cmd(info, lambda p: p.status_command, executable)} and re-authenticate with {login}"
    if parked:
        return f"{hint}; {parked}"
    if info.reset_command:
        hint += f" (or {_cmd(info, lambda p: p.reset_command, executable)} to clear a credential left in cool-down)"
    return hint


def logged_out_hint(provider: str | None = None, executable: str = "hermes") -> str:
    info = provider_info(provider)
    login = _cmd(info, lambda p: p.login_command, executable)
    if info is None:
        return f"log in first ({login}), then `{executable} proxy start`"
    start = _cmd(info, lambda p: f"hermes proxy start --provider {p.id}", executable)
    return f"run {login} (see `{executable} auth`) before {start}"


def start_hint(provider: str | None = None, executable: str = "hermes") -> str:
    info = provider_info(provider)
    start = _cmd(info, lambda p: f"hermes proxy start --provider {p.id}", executable)
    return (f"start the proxy with {start} (if it refuses because it is not logged in, run "
            f"{_cmd(info, lambda p: p.login_command, executable)} first) and check the endpoint's port")


def upstream_down_hint(provider: str | None = None, message: str | None = None) -> str:
    """The proxy answered 502/504 itself: name its upstream (the provider, the host it could not reach)."""
    info = provider_info(provider) or provider_info(provider_in_text(message))
    host = _HOST.search(message or "")
    names = [n for n in (info.display_name if info else None, f"host {host.group(1)}" if host else None) if n]
    who = f"its upstream ({', '.join(names)})" if names else "its upstream"
    return (f"the proxy answered, but {who} did not: check the provider's service status and this machine's "
            "network, then re-run (nothing to change in hermes-proxy)")
