"""Layer 6, the notebook runner: templates, kernels, one notebook through papermill, the smoke and the
refresh. A sibling of :mod:`hermes_nb.kit`, which it never imports."""
