"""Layer 6, the notebook runner: templates, kernels, papermill's engine and I/O handler, executing one
notebook, the smoke and the refresh. A sibling of :mod:`hermes_nb.kit`, which it never imports."""
