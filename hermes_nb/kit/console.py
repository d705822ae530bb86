"""An ipywidgets console for exploratory probing in Jupyter.

    from hermes_nb.kit.console import Console
    console = Console()          # endpoint empty = the embedded emulator
    console.widget               # display it: endpoint/model/scenario/prompt, buttons check / probe / run prompt

The widgets only wire inputs to :class:`ConsoleActions`, which holds the
logic (target lifecycle, calls into ``hermes_nb``, HTML through
:mod:`hermes_nb.display`) and is tested without a browser. The token is read
from ``HERMES_NB_AUTH_TOKEN`` in the kernel; there is no token field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.emulator.scenarios import ALL_SCENARIOS
from hermes_nb.kit import display
from hermes_nb.kit.target import Target, runtime_config, start_target

__all__ = ["ConsoleActions", "Console", "SCENARIO_CHOICES"]

#: every emulator scenario (``stall`` included: the request deadline then decides)
SCENARIO_CHOICES = ALL_SCENARIOS


def _error_html(exc: HermesError) -> str:
    return display.kv_table({"status": "error", "error": str(exc)}, title="error")


@dataclass
class ConsoleActions:
    """The console's logic: each action returns HTML; an embedded emulator is started on demand."""

    profile: str = "hermes-agent"
    _target: Target | None = field(default=None, repr=False)
    _key: tuple[str, str, str] | None = field(default=None, repr=False)

    def target(self, endpoint: str, scenario: str) -> Target:
        """The target for these inputs; restarts the emulator when the scenario changed."""
        key = (endpoint.strip(), scenario, self.profile)
        if self._target is None or self._key != key:
            self.close()
            self._target = start_target(endpoint.strip() or None, profile=self.profile, scenario=scenario)
            self._key = key
        return self._target

    def check(self, endpoint: str, model: str, scenario: str, *, environ: Mapping[str, str] | None = None) -> str:
        from hermes_nb.proxy.check import adapter_check

        try:
            target = self.target(endpoint, scenario)
            config = runtime_config(target.endpoint, model, environ=environ)
        except HermesError as exc:
            return _error_html(exc)
        return display.check_html(adapter_check(config, hermes_bin=target.hermes_bin))

    def probe(self, endpoint: str, model: str, scenario: str, *, deadline_s: float = 30.0) -> str:
        from hermes_nb.proxy.probe import probe

        try:
            target = self.target(endpoint, scenario)
            report = probe(target.endpoint, model=model, deadline_s=deadline_s)
        except HermesError as exc:
            return _error_html(exc)
        return display.wire_report_html(report)

    def run_prompt(self, endpoint: str, model: str, scenario: str, prompt: str, *,
                   root: str | None = None, environ: Mapping[str, str] | None = None) -> str:
        from hermes_nb.harness.mission import Mission
        from hermes_nb.harness.run import run
        from hermes_nb.kit.verdicts import artifact_digests

        try:
            target = self.target(endpoint, scenario)
            config = runtime_config(target.endpoint, model, environ=environ)
            mission = Mission.adhoc(prompt)
            run_root = root or target.temp_dir("hermes-nb-console-")
            result = run(mission, config, root=run_root, handle_signals=False)
        except HermesError as exc:
            return _error_html(exc)
        return display.run_html(result, artifacts=artifact_digests(result.run_dir), stdout=result.text)

    def close(self) -> None:
        if self._target is not None:
            self._target.close()
        self._target = None
        self._key = None


class Console:
    """The widgets: inputs, three buttons, one HTML output. ``close()`` stops the emulator."""

    def __init__(self, *, endpoint: str = "", model: str = DEFAULT_MODEL, scenario: str = "ok",
                 prompt: str = "Summarise in one sentence what a smoke test proves.",
                 actions: ConsoleActions | None = None) -> None:
        import ipywidgets as w

        self.actions = actions or ConsoleActions()
        self.endpoint = w.Text(value=endpoint, description="endpoint", placeholder="empty: embedded emulator")
        self.model = w.Text(value=model, description="model")
        self.scenario = w.Dropdown(options=SCENARIO_CHOICES, value=scenario, description="scenario")
        self.prompt = w.Textarea(value=prompt, description="prompt")
        self.check_button = w.Button(description="check")
        self.probe_button = w.Button(description="probe")
        self.run_button = w.Button(description="run prompt")
        self.output = w.HTML(value="")
        self.check_button.on_click(lambda _b: self._show(self.actions.check(*self._inputs())))
        self.probe_button.on_click(lambda _b: self._show(self.actions.probe(*self._inputs())))
        self.run_button.on_click(lambda _b: self._show(self.actions.run_prompt(*self._inputs(), self.prompt.value)))
        self.widget = w.VBox([
            w.HBox([self.endpoint, self.model, self.scenario]),
            self.prompt,
            w.HBox([self.check_button, self.probe_button, self.run_button]),
            self.output,
        ])

    def _inputs(self) -> tuple[str, str, str]:
        return self.endpoint.value, self.model.value, self.scenario.value

    def _show(self, html: str) -> None:
        self.output.value = html

    def _ipython_display_(self) -> None:
        from IPython.display import display as ipy_display

        ipy_display(self.widget)

    def close(self) -> None:
        self.actions.close()
        self.widget.close()
