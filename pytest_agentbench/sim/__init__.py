"""A simulated Android phone that the real adb server talks to (see docs/architecture.md, "Simulated phone")."""
