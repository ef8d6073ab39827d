"""The report stage: audited runs -> result.json, the text report, the terminal summary and the session document."""
