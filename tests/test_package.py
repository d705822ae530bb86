"""The public API is small and explicit, and `import hermes_nb` stays light."""

import subprocess
import sys

import hermes_nb


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
        "print('loaded:' + ','.join(m for m in ('hermes_nb.commands.run', 'hermes_nb.commands.smoke', 'hermes_nb.check')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage: hermes-nb emulator" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "loaded:"
    from hermes_nb.cli import build_parser

    full = build_parser()
    sub = next(a for a in full._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"check", "run", "smoke", "emulator", "probe"} <= set(sub.choices)
