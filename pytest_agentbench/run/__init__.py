"""The run stage: preflight, the isolated agent and the post-run reads -> one Run record (no verdict is decided here)."""
