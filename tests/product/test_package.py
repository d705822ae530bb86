"""The public API is small and explicit, and `import hermes_nb` stays light."""

import json
import pkgutil
import subprocess
import sys

import hermes_nb

#: the public surface, pinned (as httpx's tests/test_exported_members.py does): a change here is an API change.
#: One verb per job with its result, the target, the config, the client, the emulator, the receipts' check, the
#: console, the errors a caller of the verbs catches, and the IPython extension's two hooks.
EXPORTED = [
    "check", "CheckResult", "probe", "WireReport", "run_mission", "RunResult", "smoke", "SmokeOutcome",
    "run_load", "LoadReport", "Target", "HermesProxyRuntimeConfig", "resolve_runtime_config", "HermesClient",
    "Exchange", "serve_emulator", "verify_receipts", "ProbeConsole",
    "HermesError", "ConfigError", "UsageError", "ProxyUnreachable", "ProxyTimeout", "ProxyStatusError",
    "ProtocolViolation", "NotebookFailed", "RigError",
    "__version__", "load_ipython_extension", "unload_ipython_extension",
]


def test_at_most_thirty_names_and_no_alias() -> None:
    """Each exported function or class carries its own name (no ``probe_endpoint`` for ``probe``)."""
    assert len(hermes_nb.__all__) <= 30
    for name in hermes_nb.__all__:
        obj = getattr(hermes_nb, name)
        assert getattr(obj, "__name__", name) == name, name


def test_exported_members_are_pinned():
    assert sorted(hermes_nb.__all__) == sorted(EXPORTED)


def test_no_public_name_is_also_a_submodule_name():
    """``from hermes_nb import classify`` must never be a module (the flat layout's trap)."""
    submodules = {m.name for m in pkgutil.iter_modules(hermes_nb.__path__)}
    assert not submodules & set(hermes_nb.__all__)


_IDENTITY = (
    "import importlib, json, pkgutil, sys, hermes_nb\n"
    "def walk():\n"
    "    for m in pkgutil.walk_packages(hermes_nb.__path__, 'hermes_nb.'):\n"
    "        if not m.name.endswith('__main__'):\n"
    "            importlib.import_module(m.name)\n"
    "def names():\n"
    "    return {n: getattr(hermes_nb, n) for n in hermes_nb.__all__ if n in hermes_nb._LAZY}\n"
    "first = {}\n"
    "if sys.argv[1] == 'modules-first':\n"
    "    walk(); got = names()\n"
    "else:\n"
    "    got = names(); walk()\n"
    "bad = [n for n, obj in got.items()\n"
    "       if obj is not getattr(importlib.import_module('hermes_nb.' + hermes_nb._LAZY[n]),\n"
    "                             n)\n"
    "       or getattr(hermes_nb, n) is not obj or isinstance(obj, type(hermes_nb))]\n"
    "print(json.dumps(bad))\n"
)


def test_each_name_is_the_same_object_whatever_was_imported_before():
    for order in ("modules-first", "names-first"):
        out = subprocess.run([sys.executable, "-c", _IDENTITY, order], capture_output=True, text=True, check=True)
        assert json.loads(out.stdout) == [], order


def test_all_names_resolve():
    for name in hermes_nb.__all__:
        assert getattr(hermes_nb, name) is not None, name


def test_unknown_attribute_raises():
    try:
        hermes_nb.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_is_light():
    code = (
        "import sys, hermes_nb\n"
        "heavy = [m for m in ('aiohttp', 'papermill', 'ipywidgets', 'nbclient', 'nbconvert', 'httpx', 'pydantic')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_cli_version_and_help(capsys):
    from hermes_nb.cli import main

    assert main(["--json", "no-such-command"]) == 2
    captured = capsys.readouterr()
    import json

    doc = json.loads(captured.out)
    assert doc["exit_code"] == 2 and "no-such-command" in doc["error"]


def test_help_with_json_is_one_object(capsys):
    import json

    from hermes_nb.cli import main

    assert main(["run", "--help", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "--prompt" in doc["help"] and doc["exit_code"] == 0
    assert main(["--version"]) == 0
    assert "hermes-nb" in capsys.readouterr().out


def test_a_command_imports_only_its_own_module():
    code = (
        "import sys\n"
        "from hermes_nb.cli import main\n"
        "main(['emulator', '--help'])\n"
        "print('loaded:' + ','.join(m for m in ('hermes_nb.cli.commands.run', 'hermes_nb.cli.commands.smoke',"
        " 'hermes_nb.proxy.check')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage: hermes-nb emulator" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "loaded:"
    from hermes_nb.cli.app import build_parser

    full = build_parser()
    sub = next(a for a in full._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"check", "run", "smoke", "emulator", "probe"} <= set(sub.choices)
