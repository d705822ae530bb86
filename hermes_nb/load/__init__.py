"""The load probe, a wing: how many streams one proxy carries (docs/load.md).

The rest of the package reaches it at its three faces only: ``hermes-nb load`` (``cli/commands/load.py``),
``%hermes_load`` (``kit/magics.py``) and the ``load`` notebook. Inside, bottom-up: :mod:`.spec` (every option,
once), :mod:`.samples` (the raw record), :mod:`.metrics` (figures from samples), :mod:`.report` (the record and
its verdict), :mod:`.generator` (asyncio + aiohttp), :mod:`.target` (the embedded emulator, what answers),
:mod:`.run` (``run_load``), :mod:`.plots` and :mod:`.views` (SVG, text, HTML), :mod:`.receipt` (``--out`` and
the notebook's cells). Importing the wing inside IPython registers the report's displays there.
"""

from __future__ import annotations

from hermes_nb.load.views import register_displays

register_displays()
