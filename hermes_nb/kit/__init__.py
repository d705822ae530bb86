"""What notebook cells, the console and the magics call (the kernel side). The console's widgets are
:mod:`hermes_nb.kit.console` (``hermes_nb.ProbeConsole``): a job notebook's ``from hermes_nb import kit`` does not
import them."""

from hermes_nb.kit.job import open_job, record_verdict
from hermes_nb.kit.session import ConsoleSession

__all__ = ["ConsoleSession", "open_job", "record_verdict"]
