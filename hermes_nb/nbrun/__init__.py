"""The notebook runner: templates, kernels, one notebook through papermill, the smoke and the refresh."""

from hermes_nb.core.facts import ADAPTER_CHECK, E2E_SMOKE, WIRE_SPIKE
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.harness.prepare import RunSpec
from hermes_nb.proxy.check import CheckSpec
from hermes_nb.proxy.probe import ProbeSpec

#: each job notebook's spec: its parameters cell is generated from it (the CLI's words and defaults), and the
#: notebook's ``kit.open_job`` builds it (here, not in the templates: a kernel never imports nbformat or the load wing)
JOB_SPECS: dict[str, type[ConfigOptions]] = {WIRE_SPIKE: ProbeSpec, ADAPTER_CHECK: CheckSpec, E2E_SMOKE: RunSpec}
