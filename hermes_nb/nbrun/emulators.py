"""Each notebook's embedded emulator, started by the smoke's runner instead of inside its kernel.

A notebook aimed at the embedded emulator (its ``endpoint`` parameter None) starts one in its kernel
(:func:`hermes_nb.kit.start_target`) unless its ``emulator`` parameter names one already running. The runner
starts that one (:func:`notebook_emulator`): the same :func:`hermes_nb.emulator.serve`, with the notebook's
``profile`` and ``scenario`` parameters (else the template's defaults) and seed 0, one per notebook, stopped
when the notebook is done — so receipts still never share an emulator, and each still records target kind
``emulator``. What changes is where it runs: the runner imports aiohttp once for the run and no kernel imports
it (about 0.15 s of CPU per kernel; docs/performance.md). A notebook run by papermill or nbval on its own still
starts its emulator in its kernel.

The endpoint is known before the emulator runs: the runner listens on a free loopback port first
(:func:`hermes_nb.emulator.server.listen`), hands that endpoint to the notebook and starts the emulator on the
socket in the background, while the kernel runs its first cells (a request that comes sooner waits in the
socket's backlog). Only a template that declares an ``emulator`` parameter gets one (papermill's
``inspect_notebook`` reads them); an explicit ``emulator`` or ``endpoint`` parameter, or a profile and scenario
the emulator would refuse (the kernel then raises the emulator's own error), is left to the notebook.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["EMULATOR_PARAM", "NotebookEmulator", "notebook_emulator"]

#: the templates' parameter naming an emulator already running for the notebook (:mod:`hermes_nb.nbrun.templates`)
EMULATOR_PARAM = "emulator"


@dataclass
class NotebookEmulator:
    """The emulator the runner starts for one notebook: its endpoint at once, the server once it is up."""

    endpoint: str
    profile: str | None
    scenario: str | None
    handle: Any = None
    #: why it did not start (None while starting or once running)
    error: str | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _declared(template: Path) -> dict[str, Any]:
    """The template's parameters and their default values (literals), as papermill reads them."""
    import papermill

    from hermes_nb.nbrun.execute import notebook_schema_ready

    notebook_schema_ready()  # papermill reads (validates) the template: one schema compile for all the threads
    found: dict[str, Any] = {}
    for name, info in papermill.inspect_notebook(str(template)).items():
        try:
            found[name] = ast.literal_eval(str(info.get("default")))
        except (ValueError, SyntaxError):
            found[name] = None
    return found


@contextmanager
def notebook_emulator(template: Path, parameters: dict[str, Any]) -> Iterator[NotebookEmulator | None]:
    """Name the notebook's emulator in ``parameters`` and start it in the background (yields it; stopped on exit),
    or yield None when the notebook has an endpoint, already names an emulator, its template takes none, or the
    emulator would refuse its profile or scenario."""
    if parameters.get("endpoint") is not None or parameters.get(EMULATOR_PARAM) is not None:
        yield None
        return
    try:
        declared = _declared(template)
    except Exception:  # noqa: BLE001 — an unreadable template: papermill reports it when it runs the notebook
        declared = {}
    if EMULATOR_PARAM not in declared:
        yield None
        return
    from hermes_nb.emulator.scenarios import check_profile
    from hermes_nb.emulator.server import endpoint_of_socket, listen

    chosen = {key: parameters.get(key, declared.get(key)) for key in ("profile", "scenario")}
    kwargs: dict[str, Any] = {key: value for key, value in chosen.items() if value is not None}
    try:
        check_profile(**kwargs)
        sock = listen()
    except (ValueError, OSError):  # the kernel starts its own and reports what is wrong
        yield None
        return
    emulator = NotebookEmulator(endpoint_of_socket(sock), chosen["profile"], chosen["scenario"])

    def start() -> None:
        from hermes_nb.emulator import serve

        try:
            emulator.handle = serve(sock=sock, seed=0, **kwargs)
        except Exception as exc:  # noqa: BLE001 — thread edge: the notebook then finds nobody answering
            emulator.error = f"{type(exc).__name__}: {exc}"
            sock.close()

    emulator._thread = threading.Thread(target=start, name="hermes-nb-emulator-start", daemon=True)
    emulator._thread.start()
    parameters[EMULATOR_PARAM] = emulator.endpoint
    try:
        yield emulator
    finally:
        emulator.wait()
        if emulator.handle is not None:
            emulator.handle.close()
        sock.close()
