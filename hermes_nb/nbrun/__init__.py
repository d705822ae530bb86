"""The notebook runner: templates, kernels, one notebook through papermill, the smoke and the refresh."""
