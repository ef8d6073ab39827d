"""The simulated phone's system services that hold state outside any app: app-ops, the log buffer, power."""
