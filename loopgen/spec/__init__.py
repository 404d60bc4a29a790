"""Stage 1: the spec: the flag table, its JSON Schema, and the YAML loader that makes a validated `Spec`."""
