"""What notebook cells, the console and the magics call; ``from hermes_nb import kit`` does not load the widgets."""

from hermes_nb.kit.job import open_job, record_verdict
from hermes_nb.kit.session import ConsoleSession

__all__ = ["ConsoleSession", "open_job", "record_verdict"]
