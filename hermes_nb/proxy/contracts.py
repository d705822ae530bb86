"""Wire contracts (docs/wire-contract.md): a proxy's behaviour per auth state, every field tagged with its owner (only
the proxy's drift), and the judgement of a probe against one. A set is one release,
``<package>-<version>[-<provider>].json``, shipped or in the user's contracts directory."""

import json
import os
import re
from collections.abc import Mapping
from copy import copy
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import platformdirs

from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import ENV_PREFIX, contracts_dir
from hermes_nb.core.providers import DEFAULT_PROVIDER, PROXY_PROVIDERS, upstream_down_hint
from hermes_nb.core.records import ErrorEnvelope
from hermes_nb.proxy.report import LABELS, ROUTES, Drift, DriftList, NotJudged, NotJudgedReason, Owner, WireReport
from hermes_nb.wire.reading import RATE_LIMIT_CODES, UPSTREAM_DOWN_CODES

FORMAT = "hermes-nb.wire-contract/2"
ENV_CONTRACTS_DIR = ENV_PREFIX + "CONTRACTS_DIR"
#: per-route fields a contract compares (``json_keys``: the contract's keys must be present)
ROUTE_FIELDS: tuple[str, ...] = ("status", "content_type", "error_type", "error_code", "error_message", "body_kind",
                                "body_excerpt", "json_keys", "outcome", "answered_by", "ended", "floor_missing",
                                "sse_events")
#: route fields that describe the upstream when the proxy relayed the answer (``answered_by: upstream``)
RELAYED_FIELDS = tuple(f for f in ROUTE_FIELDS if f not in ("answered_by", "ended", "floor_missing"))
#: relayed fields the proxy may rewrite (it appends ``[DONE]``): its own when hermes_nb's upstream answered
STREAM_FIELDS = ("sse_events",)
ADMISSION_FIELDS = AUTH_RELAYED_FIELDS = ("status", "error_type", "outcome")
AUTH_FIELDS = (*ADMISSION_FIELDS, "answered_by")
#: section-level fields and their owners
TOP_OWNERS: dict[str, Owner] = {
    **dict.fromkeys(("provider", "bearer_required", "stream_failure_shape", "server_product", "cors_headers",
                     "rate_limit_headers"), "proxy"), **dict.fromkeys(("relayed_cors_headers",
                                                                     "relayed_rate_limit_headers"), "upstream")}
#: proxy errors whose message wraps an underlying exception text (``<prefix>: <why>``)
_WRAPPING = frozenset({"upstream_auth_failed", "upstream_unreachable", "upstream_timeout", "proxy_error"})
_LOOPBACK_PORT = re.compile(r"\b(127\.0\.0\.1|localhost|\[::1\]):\d+")
_LIST_FIELDS = frozenset(f for f in TOP_OWNERS if f.endswith("_headers"))
#: the provider suffix of a set's file name (``hermes-agent-0.19.0-xai``)
_PROVIDER_SUFFIX = re.compile(f"-({'|'.join(PROXY_PROVIDERS)})$")


def owners(fields: tuple[str, ...], relayed_fields: tuple[str, ...], answered: Any,
           stream_owner: Owner = "unknown") -> dict[str, list[str]]:
    """The owner tags of one entry: the relayed fields of an upstream's answer are not the proxy's."""
    tags: dict[str, list[str]] = {"proxy": [], "upstream": []}
    for f in fields:
        relayed = answered == "upstream" and f in relayed_fields
        tags.setdefault("proxy" if not relayed else stream_owner if f in STREAM_FIELDS else "upstream", []).append(f)
    return tags


def _owner_map(entry: Mapping[str, Any], fields: tuple[str, ...], relayed: tuple[str, ...],
               observed: Mapping[str, Any], upstream_known: Any) -> dict[str, Owner]:
    """Each field's owner: the expected entry's tags; an answer the proxy now gives itself is the proxy's in every
    field; a relayed stream field is the proxy's only behind hermes_nb's upstream (else ``unknown``)."""
    out: dict[str, Owner] = {f: "proxy" for f in fields}
    if observed.get("answered_by") == "proxy":
        return out
    tags = entry.get("owners") or owners(fields, relayed, entry.get("answered_by"))
    for side, names in tags.items():
        out.update({f: cast(Owner, side) for f in names if f in out})
    for f in STREAM_FIELDS:
        if f in out and entry.get("answered_by") == "upstream":
            out[f] = "proxy" if out[f] == "proxy" and upstream_known else "unknown"
    return out


def message_template(error_type: str | None, message: str | None) -> str | None:
    """The compared form of an error message: loopback ports become ``<port>``; the environment-specific reason of
    the proxy's wrapping errors (after the first ``": "``) becomes ``<why>``."""
    if message is None:
        return None
    text = _LOOPBACK_PORT.sub(r"\1:<port>", message)
    if error_type in _WRAPPING and ": " in text:
        text = text.split(": ", 1)[0] + ": <why>"
    return text


def contract_section(report: WireReport) -> dict[str, Any]:
    """The compared fields of one probe report (no endpoint, no timings), each entry tagged with its owners."""
    stream_owner: Owner = "proxy" if report.upstream_known else "unknown"
    routes = []
    for spec in ROUTES:
        found = report.route(spec.name)
        entry: dict[str, Any] = {"name": spec.name, "method": spec.method, "path": spec.display_path}
        entry |= {f: getattr(found, f) if found else None for f in ROUTE_FIELDS}
        if found:
            entry["error_message"] = message_template(found.error_type, found.error_message)
        entry["owners"] = owners(ROUTE_FIELDS, RELAYED_FIELDS, entry["answered_by"], stream_owner)
        routes.append(entry)
    auth = {}
    for c in report.auth:
        item: dict[str, Any] = {f: getattr(c, f) for f in AUTH_FIELDS}
        auth[c.case] = item | {"owners": owners(AUTH_FIELDS, AUTH_RELAYED_FIELDS, item["answered_by"])}
    return {
        "routes": routes, "auth": auth, **{f: copy(getattr(report, f)) for f in TOP_OWNERS},
        "admission": {c.case: {f: getattr(c, f) for f in ADMISSION_FIELDS} for c in report.admission} or None,
        # recorded, not compared: the aiohttp version belongs to the install; the upstream to the environment
        "server_observed": report.server, "upstream_known": report.upstream_known,
        "owners": {side: [f for f, o in TOP_OWNERS.items() if o == side] for side in ("proxy", "upstream")},
    }


def contract_document(sections: Mapping[str, WireReport], *, target: str, source: str = "observed",
                      notes: list[str] | None = None, provider: str | None = None, **about: Any) -> dict[str, Any]:
    """A contract file from one probe report per state (``about``: ``package``, ``version``, ``executable``)."""
    seen = provider or next((r.provider for r in sections.values() if r.provider), None)
    return {"format": FORMAT, "source": source, "target": target, "provider": seen, "notes": list(notes or []),
            **about, "states": {state: contract_section(report) for state, report in sorted(sections.items())}}


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
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("states"), dict):
        raise UsageError(f"contract {p} is not a {FORMAT} document")
    return doc


def user_contracts_dir() -> Path:
    """Where recorded sets go (searched after the shipped ones): ``$HERMES_NB_CONTRACTS_DIR``, else user data."""
    given = os.environ.get(ENV_CONTRACTS_DIR)
    return Path(given).expanduser().absolute() if given else Path(platformdirs.user_data_dir("hermes-nb")) / "contracts"


def resolve_contract(name: str, provider: str | None = None) -> Path:
    """A ``.json`` file or a name (shipped, then the user's), as ``provider``'s file of its set (``x.json`` ↔
    ``x-xai.json``) when there is one."""
    named = [Path(name)] if name.endswith(".json") else [h / f"{name}.json" for h in (contracts_dir(),
                                                                                     user_contracts_dir())]
    found = next((p for p in named if p.is_file()), None)
    if found is None and name.endswith(".json"):
        raise UsageError(f"contract file {name} not found")
    if found is None:
        raise UsageError(f"unknown contract {name!r}; recorded: seed, {', '.join(sorted(recorded_contracts()))}, "
                         "or give a .json file")
    own = found.with_name(f"{contract_file_name(_PROVIDER_SUFFIX.sub('', found.stem), provider)}.json")
    return own if provider in PROXY_PROVIDERS and own.is_file() else found


def recorded_contracts() -> dict[str, dict[str, Any]]:
    """Every observed contract file, shipped then the user's (which wins): file stem → document."""
    found: dict[str, dict[str, Any]] = {}
    for home in (contracts_dir(), user_contracts_dir()):
        for path in sorted(home.glob("*.json")) if home.is_dir() else []:
            try:
                doc = load_contract(path)
            except UsageError:
                continue  # a stray file in the user's directory is not a contract
            if doc.get("source") == "observed":
                found[path.stem] = doc
    return found


def _release_of(doc: Mapping[str, Any]) -> tuple[str, str]:
    """(package, version) of a contract: its own fields, else its ``target`` (``hermes-agent 0.19.0``)."""
    package, _, version = str(doc.get("target") or "").rpartition(" ")
    return str(doc.get("package") or package), str(doc.get("version") or version)


def version_key(version: str) -> tuple[int, ...]:
    """``0.22.2.post1`` → ``(0, 22, 2, 1)``: numeric parts in order."""
    return tuple(int(p) for p in re.findall(r"\d+", version))


def release_contract(package: str, version: str) -> str | None:
    """The recorded set of one release (its package and its version, or the one ``hermes --version`` printed)."""
    for name, doc in recorded_contracts().items():
        pkg, ver = _release_of(doc)
        if pkg == package and version in (ver, str(doc.get("target", "")).rpartition(" ")[2]):
            return _PROVIDER_SUFFIX.sub("", name)
    return None


def _scored(report: WireReport) -> list[tuple[int, str, dict[str, Any]]]:
    """(proxy-owned drift lines, set name, document) of every recorded contract of the report's provider."""
    provider = report.provider or DEFAULT_PROVIDER
    return [(len(compare(report, doc)), _PROVIDER_SUFFIX.sub("", name), doc)
            for name, doc in recorded_contracts().items() if (doc.get("provider") or DEFAULT_PROVIDER) == provider]


def closest_contract(report: WireReport) -> str | None:
    """The set of the recorded release ``report`` drifts least from (ties: the newest)."""
    scored = sorted((n, [-v for v in version_key(_release_of(doc)[1])], name) for n, name, doc in _scored(report))
    return scored[0][2] if scored else None


def behaves_as(report: WireReport) -> list[str]:
    """The recorded releases (their ``target``) ``report`` answers exactly like, in its state and for its provider;
    only contracts that judge the admission layer count."""
    if report.state not in ("stale", "live") or report.provider is None:
        return []
    found = {str(doc.get("target")) for n, _, doc in _scored(report)
             if not n and (doc["states"].get(report.state) or {}).get("admission")}
    return sorted(found, key=lambda t: version_key(t.rpartition(" ")[2]))


def _differs(field: str, expected: Any, observed: Any) -> bool:
    if expected is None:
        return False
    if field == "json_keys":
        return observed is None or not set(expected) <= set(observed)
    if field == "floor_missing":  # only a 2xx JSON answer below the OpenAI floor counts
        return bool(observed) and sorted(observed) != sorted(expected)
    if field in _LIST_FIELDS:
        return sorted(expected) != sorted(observed or [])
    return bool(expected != observed)


def judge(report: WireReport, contract: Mapping[str, Any], *,
          state: str | None = None) -> tuple[list[Drift], list[NotJudged]]:
    """Every difference from the contract's section for ``state`` (else the detected one, else the first), with its
    owner; and what could not be judged: the upstream's trouble is not drift, the proxy's own answers always count."""
    if not report.reachable or report.state == "not_local":
        first = report.routes[0].transport_error if report.routes else None
        why = (f"no route got an HTTP answer from {report.endpoint} ({first or 'no answer'})" if not report.reachable
               else report.action or "")
        return [], [NotJudged(field="(every field)", reason="unreachable" if not report.reachable else "not_local",
                              detail=why)]
    states = contract["states"]
    if state is not None and state not in states:
        raise UsageError(f"contract has no state {state!r}; it has {', '.join(sorted(states))}")
    name = state or (report.state if report.state in states else sorted(states)[0])
    section = states[name]
    drift = [Drift(field="state", expected=name, observed=report.state)] if (
        report.state != name and report.state in ("stale", "live")) else []
    skipped = _not_judged(section, report)
    return drift + section_diff(section, contract_section(report), skip={n.field for n in skipped}), skipped


def _why_not(exp: Mapping[str, Any], got: Any) -> tuple[NotJudgedReason, str] | None:
    """``(reason, detail)`` when an observed route or auth case cannot judge the expected one."""
    if got.outcome == "skipped" and got.transport_error != "upstream_slow":
        return "probe_deadline", "not sent: the probe's overall deadline ran out"
    if exp.get("answered_by") != "upstream":
        return None
    code = getattr(got, "error_code", None)
    codes = ErrorEnvelope(type=got.error_type, code=code).codes
    if got.answered_by == "proxy" and codes & UPSTREAM_DOWN_CODES:
        message = message_template(got.error_type, getattr(got, "error_message", None))
        return "upstream_down", f"the proxy answered {got.status} {got.error_type}: {message or ''}".rstrip(": ")
    if got.status == 429 or codes & RATE_LIMIT_CODES:
        return "rate_limited", f"HTTP {got.status} from the upstream" + (
            f"; Retry-After {got.retry_after_s:g} s" if got.retry_after_s is not None else "")
    if got.outcome == "skipped":
        return "upstream_slow", "not sent: the upstream was too slow for an earlier forwarded request"
    if got.outcome == "timeout":
        return "upstream_slow", f"no answer within the probe's per-request deadline ({got.transport_error})"
    if (cut := getattr(got, "ended", None)) in ("deadline", "read_timeout"):
        return "upstream_slow", f"the answer did not end within the probe's per-request deadline ({cut})"
    return None


def _not_judged(section: Mapping[str, Any], report: WireReport) -> list[NotJudged]:
    """The entries of ``section`` (expected) that ``report`` cannot judge."""
    routes, cases = {r.name: r for r in report.routes}, {c.case: c for c in report.auth}
    pairs: list[tuple[str, Any, Any]] = [(f"routes[{LABELS.get(e['name'], e['name'])}]", e, routes.get(e["name"]))
                                         for e in section.get("routes", [])]
    pairs += [(f"auth[{case}]", e, cases.get(case)) for case, e in (section.get("auth") or {}).items()]
    out = [NotJudged(field=field, reason=why[0], detail=why[1],
                     retry_after_s=got.retry_after_s if why[0] == "rate_limited" else None)
           for field, exp, got in pairs if got is not None and (why := _why_not(exp, got)) is not None]
    if report.bearer_required is None and any(n.field.startswith("auth[") for n in out):
        out.append(NotJudged(field="bearer_required", reason=next(n.reason for n in out if n.field.startswith("auth[")),
                             detail="the auth cases it is told from were not judged"))
    return out


def contract_label(contract: Mapping[str, Any]) -> str:
    """``hermes-agent 0.19.0``, ``hermes-agent 0.19.0 (xai)``: its ``target``, and a provider other than the default."""
    label = str(contract.get("target") or "the recorded contract")
    provider = contract.get("provider")
    return f"{label} ({provider})" if provider and provider != DEFAULT_PROVIDER else label


def compare(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> DriftList:
    """The drift: the differences on proxy-owned fields (:func:`judge`), each printed as ``field: a → b``."""
    return DriftList((d for d in judge(report, contract, state=state)[0] if d.owner == "proxy"),
                     contract=contract_label(contract))


def apply_contract(report: WireReport, contract: Mapping[str, Any], *, state: str | None = None) -> WireReport:
    """Judge ``report`` against ``contract`` in place (:func:`judge`), naming the contract."""
    judged, report.not_judged = judge(report, contract, state=state)
    report.drift = [d for d in judged if d.owner == "proxy"]
    report.upstream_differences = [d for d in judged if d.owner != "proxy"]
    report.contract = contract_label(contract)
    blocking = next((n for n in report.not_judged if n.reason in ("rate_limited", "upstream_down")), None)
    if report.action is None and blocking is not None:
        report.action = (upstream_down_hint(report.provider, blocking.detail) if blocking.reason == "upstream_down"
                         else "re-run later" + (f" (Retry-After: {blocking.retry_after_s:g} s)"
                                                if blocking.retry_after_s is not None else ""))
    return report


def _entries(section: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], tuple[str, ...], tuple[str, ...]]]:
    """Each compared entry of a section by its label (``auth[none]``), with its fields and those the upstream relays."""
    out = {"routes[" + LABELS.get(r.get("name"), f"{r.get('method')} {r.get('path')}") + "]":
           (r, ROUTE_FIELDS, RELAYED_FIELDS) for r in section.get("routes", [])}
    out |= {f"auth[{c}]": (e, AUTH_FIELDS, AUTH_RELAYED_FIELDS) for c, e in (section.get("auth") or {}).items()}
    return out | {f"admission[{c}]": (e, ADMISSION_FIELDS, ()) for c, e in (section.get("admission") or {}).items()}


def section_diff(expected: Mapping[str, Any], observed: Mapping[str, Any], *, prefix: str = "",
                 skip: set[str] | frozenset[str] = frozenset()) -> list[Drift]:
    """Field-by-field differences between two sections, owners taken from ``expected`` (nulls not compared);
    ``skip``: entries not judged (``routes[<label>]``, ``auth[<case>]``, a top-level field)."""
    drift: list[Drift] = []
    known, seen = bool(observed.get("upstream_known")), _entries(observed)
    for label, (exp, fields, relayed) in _entries(expected).items():
        if label in skip:
            continue
        if label.startswith("routes[") and label not in seen:
            drift.append(Drift(field=prefix + label, expected="probed", observed="missing"))
            continue
        got = seen.get(label, ({},))[0]
        owned = _owner_map(exp, fields, relayed, got, known)
        drift += [Drift(field=f"{prefix}{label}.{f}", expected=exp.get(f), observed=got.get(f), owner=owned[f])
                  for f in fields if _differs(f, exp.get(f), got.get(f))]
    top: dict[str, Owner] = dict(TOP_OWNERS)
    for side, names in (expected.get("owners") or {}).items():
        top.update({n: cast(Owner, side) for n in names})
    drift += [Drift(field=f"{prefix}{f}", expected=expected.get(f), observed=observed.get(f), owner=top[f])
              for f in TOP_OWNERS if f not in skip and _differs(f, expected.get(f), observed.get(f))]
    return drift


def contract_drift(expected: Mapping[str, Any], observed: Mapping[str, Any]) -> list[Drift]:
    """The proxy-owned differences between two contract documents, state by state (a state on one side only: a line)."""
    drift: list[Drift] = []
    exp, obs = expected.get("states", {}), observed.get("states", {})
    for state in sorted(set(exp) | set(obs)):
        if state in exp and state in obs:
            drift += [d for d in section_diff(exp[state], obs[state], prefix=f"{state}.") if d.owner == "proxy"]
        else:
            drift.append(Drift(field=state, expected="probed" if state in exp else "not probed",
                               observed="probed" if state in obs else "not probed"))
    return drift


def release_changes(provider: str = DEFAULT_PROVIDER) -> list[tuple[str, str, list[Drift]]]:
    """``(from, to, proxy-owned differences)`` between consecutive recorded releases."""
    docs = [d for d in recorded_contracts().values() if (d.get("provider") or DEFAULT_PROVIDER) == provider]
    docs.sort(key=lambda d: version_key(_release_of(d)[1]))
    return [(str(a["target"]), str(b["target"]), contract_drift(a, b)) for a, b in pairwise(docs)]
