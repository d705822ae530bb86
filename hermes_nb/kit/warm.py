"""What every receipt notebook's first cell loads, imported by a kernel of the smoke before its first cell runs.

The private kernelspec of :mod:`hermes_nb.nbrun.kernels` asks IPython to run ``import hermes_nb.kit.warm``
at start-up (its documented ``exec_lines`` config, in the kernel's argv), so each kernel imports pydantic, the
runtime config, httpx and the display toolkit while the runner is still preparing the notebooks (importing
papermill, resolving the target) instead of after. The same imports the notebooks' first cells would do:
nothing else runs, nothing is started, and the notebook's namespace is left as it was (the line binds a
private name and deletes it). A notebook that never imports the kit pays for them (~0.15 s of CPU); one whose
import fails here fails the same way in its own cell, where the receipt shows it.
"""

from __future__ import annotations

import httpcore  # noqa: F401  (httpx imports it with its first client)

import hermes_nb.core.records  # noqa: F401  (the exchange records every probe, check and run keeps)
import hermes_nb.core.resolve  # noqa: F401  (pydantic and the runtime config: every notebook resolves one)
import hermes_nb.kit.display  # noqa: F401  (the notebooks' tables)
import hermes_nb.kit.verdicts  # noqa: F401  (every notebook's last cell)
import hermes_nb.wire.client  # noqa: F401  (httpx: every notebook talks to its target)

__all__: list[str] = []
