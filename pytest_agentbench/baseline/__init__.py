"""The baseline stage: an audited run + a recorded baseline -> deltas, sequence diff, flags; clean runs -> baseline.yml."""
