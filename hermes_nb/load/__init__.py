"""The load probe, a wing: how many streams one proxy carries (docs/load.md). Reached at its faces only:
``hermes-nb load``, ``%hermes_load`` and the ``load`` notebook. Imported inside IPython, its report displays there."""

from __future__ import annotations

from hermes_nb.load.views import register_displays

register_displays()
