"""The audit stage: a Run record and its transcript -> checks, stumbles, metrics and the one verdict (pure)."""
