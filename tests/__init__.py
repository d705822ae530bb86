"""The suite, laid out like the package (docs/architecture/layers.md, "Where the tests live")."""
