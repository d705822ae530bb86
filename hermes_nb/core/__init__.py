"""Layer 1: errors, the runtime config and its one resolver, specs, the manifest, records, redaction, shared facts."""
