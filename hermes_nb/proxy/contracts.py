"""Wire contracts: the documented or observed behaviour of a proxy, and drift against a probe.

A contract file (``hermes_nb/data/contracts/<name>.json``, shipped in the wheel; format
``hermes-nb.wire-contract/2``) holds one section per auth state (``stale``,
``live``); each section lists the compared fields of every route, the auth
handoff, the stream-failure shape, the server product and the CORS and
rate-limit header names. Every field is tagged with its owner: the proxy
(drift when it differs) or the upstream behind it (shown, never a failure).
``null`` (or a missing key) means "not specified": not compared. The format is
deterministic (no ports, timestamps, versions of the server's libraries in compared
fields); see docs/wire-contract.md.

One file per hermes-agent release and provider: ``hermes-agent-<v>.json`` is the proxy's default
provider (``nous``), ``hermes-agent-<v>-<provider>.json`` another (``xai``); :func:`resolve_contract`
picks the detected provider's. What the upstream could not answer — in time, at all (the proxy's own
502/504), or yet (429) — is not judged (:func:`not_judged`); an unreachable proxy is one line, no drift.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import contract_names, contracts_dir
from hermes_nb.core.providers import DEFAULT_PROVIDER, PROXY_PROVIDERS, upstream_down_hint
from hermes_nb.proxy.drift import NotJudged, Owner
from hermes_nb.proxy.not_judged import section_not_judged
from hermes_nb.proxy.probe import ROUTES
from hermes_nb.proxy.report import Drift, DriftList, WireReport

__all__ = [
    "FORMAT", "ROUTE_FIELDS", "message_template", "contract_section", "contract_document", "load_contract",
    "resolve_contract", "compare", "contract_label", "apply_contract", "judge", "not_judged",
    "upstream_differences", "contract_file_name", "owners", "upgrade_document", "section_diff",
    "section_drift", "contract_drift", "dumps_contract",
]

FORMAT = "hermes-nb.wire-contract/2"
#: formats :func:`load_contract` reads (``/1`` files are converted: owners tagged by the rule)
READ_FORMATS = ("hermes-nb.wire-contract/1", FORMAT)
#: per-route fields a contract compares (``json_keys``: the contract's keys must be present)
ROUTE_FIELDS = ("status", "content_type", "error_type", "error_code", "error_message", "body_kind",
                "body_excerpt", "json_keys", "outcome", "answered_by", "ended", "floor_missing", "sse_events")
#: route fields that describe the upstream when the proxy relayed the answer (``answered_by: upstream``)
RELAYED_FIELDS = ("status", "content_type", "error_type", "error_code", "error_message", "body_kind",
                  "body_excerpt", "json_keys", "outcome", "sse_events")
AUTH_FIELDS = ("status", "error_type", "outcome", "answered_by")
AUTH_RELAYED_FIELDS = ("status", "error_type", "outcome")
#: section-level fields and their owners
TOP_OWNERS: dict[str, Owner] = {
    "provider": "proxy",
    "bearer_required": "proxy", "stream_failure_shape": "proxy", "server_product": "proxy",
    "cors_headers": "proxy", "rate_limit_headers": "proxy",
    "relayed_cors_headers": "upstream", "relayed_rate_limit_headers": "upstream",
}
TOP_FIELDS = tuple(TOP_OWNERS)
#: proxy errors whose message wraps an underlying exception text (``<prefix>: <why>``)
_WRAPPING = frozenset({"upstream_auth_failed", "upstream_unreachable", "upstream_timeout", "proxy_error"})
_LOOPBACK_PORT = re.compile(r"\b(127\.0\.0\.1|localhost|\[::1\]):\d+")
_LIST_FIELDS = frozenset({"cors_headers", "rate_limit_headers", "relayed_cors_headers", "relayed_rate_limit_headers"})


def owners(fields: tuple[str, ...], relayed_fields: tuple[str, ...], answered: Any) -> dict[str, list[str]]:
    """The owner tags of one route or auth entry: everything is the proxy's unless the upstream answered."""
    upstream = [f for f in fields if answered == "upstream" and f in relayed_fields]
    return {"proxy": [f for f in fields if f not in upstream], "upstream": upstream}


def _owner_map(entry: Mapping[str, Any], fields: tuple[str, ...], relayed: tuple[str, ...], *,
               observed: Mapping[str, Any] | None = None) -> dict[str, Owner]:
    """Each field's owner: the expected entry's tags, except that an answer the proxy now gives
    itself (observed ``answered_by: proxy``) is the proxy's in every field."""
    out: dict[str, Owner] = {f: "proxy" for f in fields}
    if observed is not None and observed.get("answered_by") == "proxy":
        return out
    tags = entry.get("owners") or owners(fields, relayed, entry.get("answered_by"))
    out.update({f: "upstream" for f in tags.get("upstream", [])})
    return out


def message_template(error_type: str | None, message: str | None) -> str | None:
    """The compared form of an error message.

    Loopback ports become ``<port>``; for the proxy's wrapping errors the text
    after the first ``": "`` (the environment-specific reason) becomes ``<why>``:
    ``Failed to refresh Nous Portal credentials: <why>``.
    """
    if message is None:
        return None
    text = _LOOPBACK_PORT.sub(r"\1:<port>", message)
    if error_type in _WRAPPING and ": " in text:
        text = text.split(": ", 1)[0] + ": <why>"
    return text


def _route_fields(route: Any) -> dict[str, Any]:
    out = {f: getattr(route, f) for f in ROUTE_FIELDS}
    out["error_message"] = message_template(route.error_type, route.error_message)
    return out


def contract_section(report: WireReport) -> dict[str, Any]:
    """The compared fields of one probe report (deterministic; the endpoint and timings left out).

    Every route and auth entry carries ``owners``: which of its fields describe the proxy and
    which the upstream (see docs/wire-contract.md, "Who owns a field").
    """
    routes = []
    for spec in ROUTES:
        found = report.route(spec.name)
        entry: dict[str, Any] = {"name": spec.name, "method": spec.method, "path": spec.display_path}
        entry |= _route_fields(found) if found else {f: None for f in ROUTE_FIELDS}
        entry["owners"] = owners(ROUTE_FIELDS, RELAYED_FIELDS, entry["answered_by"])
        routes.append(entry)
    auth = {}
    for c in report.auth:
        item: dict[str, Any] = {f: getattr(c, f) for f in AUTH_FIELDS}
        item["owners"] = owners(AUTH_FIELDS, AUTH_RELAYED_FIELDS, item["answered_by"])
        auth[c.case] = item
    return {
        "routes": routes,
        "auth": auth,
        "provider": report.provider,
        "bearer_required": report.bearer_required,
        "stream_failure_shape": report.stream_failure_shape,
        "server_product": report.server_product,
        # recorded, not compared: the aiohttp version belongs to the install, not to the proxy
        "server_observed": report.server,
        "cors_headers": list(report.cors_headers),
        "rate_limit_headers": list(report.rate_limit_headers),
        "relayed_cors_headers": list(report.relayed_cors_headers),
        "relayed_rate_limit_headers": list(report.relayed_rate_limit_headers),
        "owners": _top_owners(),
    }


def _top_owners() -> dict[str, list[str]]:
    return {side: [f for f, o in TOP_OWNERS.items() if o == side] for side in ("proxy", "upstream")}


def _answered_from_outcome(outcome: Any) -> str | None:
    """``/1`` files have no ``answered_by``: a forwarded answer was the upstream's, anything else the proxy's."""
    if outcome is None:
        return None
    return "upstream" if outcome in ("forwarded", "bad_response") else "proxy"


def upgrade_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A ``/1`` contract as ``/2``: ``answered_by`` from each outcome, new fields unspecified, owners tagged."""
    out = json.loads(json.dumps(doc))
    out["format"] = FORMAT
    for section in out.get("states", {}).values():
        for entry in section.get("routes", []):
            entry.setdefault("answered_by", _answered_from_outcome(entry.get("outcome")))
            for f in ROUTE_FIELDS:
                entry.setdefault(f, None)
            entry.setdefault("owners", owners(ROUTE_FIELDS, RELAYED_FIELDS, entry["answered_by"]))
        for item in (section.get("auth") or {}).values():
            item.setdefault("answered_by", _answered_from_outcome(item.get("outcome")))
            item.setdefault("owners", owners(AUTH_FIELDS, AUTH_RELAYED_FIELDS, item["answered_by"]))
        for f in TOP_FIELDS:
            section.setdefault(f, None)
        section.setdefault("owners", _top_owners())
    return out


def contract_document(sections: Mapping[str, WireReport], *, target: str, source: str = "observed",
                      notes: list[str] | None = None, provider: str | None = None) -> dict[str, Any]:
    """A whole contract file from one probe report per state (``provider``: the one the proxy fronted)."""
    seen = provider or next((r.provider for r in sections.values() if r.provider), None)
    return {
        "format": FORMAT,
        "source": source,
        "target": target,
        "provider": seen,
        "notes": list(notes or []),
        "states": {state: contract_section(report) for state, report in sorted(sections.items())},
    }


def contract_file_name(name: str, provider: str | None = None) -> str:
    """``hermes-agent-0.19.0`` + ``xai`` → ``hermes-agent-0.19.0-xai``; the default provider keeps the plain name."""
    return name if provider in (None, DEFAULT_PROVIDER) else f"{name}-{provider}"


def dumps_contract(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_contract(path: str | Path) -> dict[str, Any]:
    """Read and check a contract file. Raises :class:`UsageError` (exit 2) when it is unusable."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read contract {p}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"contract {p} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") not in READ_FORMATS or not isinstance(doc.get("states"), dict):
        raise UsageError(f"contract {p} is not a {FORMAT} document")
    return doc if doc["format"] == FORMAT else upgrade_document(doc)


def resolve_contract(name: str, provider: str | None = None) -> Path:
    """``seed`` / ``hermes-agent-0.19.0`` (a contract shipped with hermes_nb) or a ``.json`` file path.

    ``provider`` (the one the probe detected): a shipped name resolves to that provider's contract
    (``hermes-agent-0.19.0`` + ``xai`` → ``hermes-agent-0.19.0-xai.json``) when there is one.
    """
    candidate = Path(name)
    if candidate.suffix == ".json" and candidate.exists():
        return candidate
    if provider in PROXY_PROVIDERS and candidate.suffix != ".json":
        own = contracts_dir() / f"{contract_file_name(name, provider)}.json"
        if own.is_file():
            return own
    shipped = contracts_dir() / f"{name}.json"
    if candidate.suffix != ".json" and shipped.is_file():
        return shipped
    if candidate.suffix == ".json":
        raise UsageError(f"contract file {name} not found")
    raise UsageError(f"unknown contract {name!r}; shipped: {', '.join(contract_names())}, or give a .json file")


def _pick_state(report: WireReport, contract: Mapping[str, Any], state: str | None) -> tuple[str, dict[str, Any]]:
    states = contract["states"]
    wanted = state or report.state
    if wanted in states:
        return wanted, states[wanted]
    if state is not None:
        raise UsageError(f"contract has no state {state!r}; it has {', '.join(sorted(states))}")
    first = sorted(states)[0]
    return first, states[first]


def _differs(field: str, expected: Any, observed: Any) -> bool:
    if expected is None:
        return False
    if field == "json_keys":
        return observed is None or not set(expected) <= set(observed)
    if field == "floor_missing":  # only a 2xx JSON answer below the OpenAI floor counts
        return bool(observed) and sorted(observed) != sorted(expected)
    if field in _LIST_FIELDS:
        return sorted(expected) != sorted(observed or [])
    return expected != observed


def judge(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> list[Drift]:
    """Every difference between ``report`` and the contract's section for its state, each with its owner.

    The section is ``state`` if given, else the report's detected state
    (``stale``/``live``), else the contract's first. Fields the contract leaves
    null are not compared. ``owner="proxy"`` differences are drift; ``owner="upstream"``
    ones describe whatever answers behind the proxy and are information only. What
    :func:`not_judged` lists is left out (an unreachable proxy: nothing is compared).
    """
    if not report.reachable:
        return []
    name, section = _pick_state(report, contract, state)
    drift: list[Drift] = []
    if report.state != name and report.state in ("stale", "live"):
        drift.append(Drift(field="state", expected=name, observed=report.state))
    observed = contract_section(report)
    skipped = section_not_judged(section, observed, report)
    return drift + section_diff(section, observed, skip={n.field for n in skipped})


def not_judged(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> list[NotJudged]:
    """What the judgement leaves out, and why: the upstream's trouble is never the proxy's drift.

    Unreachable proxy: one entry, nothing compared. A route (or auth case) the contract expects the
    upstream to answer is not judged when the upstream did not answer in time (``upstream_slow``; also
    an answer the probe's deadline cut), when the proxy answered its own 502/504 instead
    (``upstream_down``) or when the answer was a 429 (``rate_limited``, with its Retry-After). A route
    the probe's overall deadline left unsent is ``probe_deadline``. Routes the proxy answers itself are
    always judged.
    """
    if not report.reachable:
        first = report.routes[0].transport_error if report.routes else None
        return [NotJudged(field="(every field)", reason="unreachable",
                          detail=f"no route got an HTTP answer from {report.endpoint} ({first or 'no answer'})")]
    _, section = _pick_state(report, contract, state)
    return section_not_judged(section, contract_section(report), report)


def contract_label(contract: Mapping[str, Any]) -> str:
    """How a display names a contract: its ``target`` (``hermes-agent 0.19.0``), with the provider when it is
    not the default one (``hermes-agent 0.19.0 (xai)``)."""
    label = str(contract.get("target") or "the recorded contract")
    provider = contract.get("provider")
    return f"{label} ({provider})" if provider and provider != DEFAULT_PROVIDER else label


def compare(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> DriftList:
    """The drift: differences on proxy-owned fields only (see :func:`judge`). Each prints as ``field: a → b``."""
    return DriftList((d for d in judge(report, contract, state=state) if d.owner == "proxy"),
                     contract=contract_label(contract))


def apply_contract(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> WireReport:
    """Judge ``report`` against ``contract`` in place: its drift, its upstream differences, what it could not
    judge (:func:`not_judged`), the contract's name."""
    judged = judge(report, contract, state=state)
    report.drift = [d for d in judged if d.owner == "proxy"]
    report.upstream_differences = [d for d in judged if d.owner == "upstream"]
    report.not_judged = not_judged(report, contract, state=state)
    report.contract = contract_label(contract)
    blocking = next((n for n in report.not_judged if n.reason in ("rate_limited", "upstream_down")), None)
    if report.action is None and blocking is not None:
        report.action = (upstream_down_hint(report.provider, blocking.detail) if blocking.reason == "upstream_down"
                         else "re-run later" + (f" (Retry-After: {blocking.retry_after_s:g} s)"
                                                if blocking.retry_after_s is not None else ""))
    return report


def upstream_differences(report: WireReport, contract: Mapping[str, Any], *,
                         state: str | None = None) -> list[Drift]:
    """Differences on upstream-owned fields: shown, never a failure."""
    return [d for d in judge(report, contract, state=state) if d.owner == "upstream"]


def section_diff(expected: Mapping[str, Any], observed: Mapping[str, Any], *, prefix: str = "",
                 skip: set[str] | frozenset[str] = frozenset()) -> list[Drift]:
    """Field-by-field differences between two sections, owners taken from ``expected`` (nulls not compared).

    ``skip``: entries not judged (``routes[<label>]``, ``auth[<case>]``, a top-level field name).
    """
    drift: list[Drift] = []
    obs_routes = {r.get("name"): r for r in observed.get("routes", [])}
    labels = {spec.name: spec.label for spec in ROUTES}
    for exp in expected.get("routes", []):
        fallback = f"{exp.get('method')} {exp.get('path')}"
        label = f"{prefix}routes[{labels.get(exp.get('name'), fallback)}]"
        if label[len(prefix):] in skip:
            continue
        got = obs_routes.get(exp.get("name"))
        if got is None:
            drift.append(Drift(field=label, expected="probed", observed="missing"))
            continue
        owned = _owner_map(exp, ROUTE_FIELDS, RELAYED_FIELDS, observed=got)
        for f in ROUTE_FIELDS:
            if _differs(f, exp.get(f), got.get(f)):
                drift.append(Drift(field=f"{label}.{f}", expected=exp.get(f), observed=got.get(f),
                                   owner=owned[f]))
    for case, exp in (expected.get("auth") or {}).items():
        if f"auth[{case}]" in skip:
            continue
        got = (observed.get("auth") or {}).get(case, {})
        owned = _owner_map(exp, AUTH_FIELDS, AUTH_RELAYED_FIELDS, observed=got)
        for f in AUTH_FIELDS:
            if _differs(f, exp.get(f), got.get(f)):
                drift.append(Drift(field=f"{prefix}auth[{case}].{f}", expected=exp.get(f), observed=got.get(f),
                                   owner=owned[f]))
    top: dict[str, Owner] = dict(TOP_OWNERS)
    for side, names in (expected.get("owners") or {}).items():
        top.update({n: side for n in names})
    for f in TOP_FIELDS:
        if f in skip:
            continue
        if _differs(f, expected.get(f), observed.get(f)):
            drift.append(Drift(field=f"{prefix}{f}", expected=expected.get(f), observed=observed.get(f),
                               owner=top[f]))
    return drift


def section_drift(expected: Mapping[str, Any], observed: Mapping[str, Any], *, prefix: str = "") -> list[Drift]:
    """The proxy-owned differences between two sections."""
    return [d for d in section_diff(expected, observed, prefix=prefix) if d.owner == "proxy"]


def contract_drift(expected: Mapping[str, Any], observed: Mapping[str, Any], *,
                   include_upstream: bool = False) -> list[Drift]:
    """Differences between two contract documents, state by state (``stale.routes[GET /].status: …``).

    Proxy-owned differences only, unless ``include_upstream``. A state section present on one
    side only is one drift (``live: not probed → probed``).
    """
    drift: list[Drift] = []
    exp_states, obs_states = expected.get("states", {}), observed.get("states", {})
    for state in sorted(set(exp_states) | set(obs_states)):
        if state not in exp_states or state not in obs_states:
            drift.append(Drift(field=state, expected="probed" if state in exp_states else "not probed",
                               observed="probed" if state in obs_states else "not probed"))
            continue
        found = section_diff(exp_states[state], obs_states[state], prefix=f"{state}.")
        drift += [d for d in found if include_upstream or d.owner == "proxy"]
    return drift


