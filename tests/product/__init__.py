"""Checks of the whole product that span the layers: the wheel, the layers, the docs, dead code, hardening, the
browser, CI."""
