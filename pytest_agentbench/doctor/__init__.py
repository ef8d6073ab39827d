"""`--agentbench-doctor`: a device and the selected suites -> one line per suite, `ready` or what is missing and its remedy.

`needs` derives what a suite needs from the suite itself (its app, its checks' kinds and packages,
its seeds, cleanup and prove steps); `root`, `bugle`, `apps` and `testbed` read the device for
those needs in batched round trips and turn the output into problems; `examine` runs them for
one suite; `plugin` is the pytest side (one item per suite, the summary lines, the exit status).
"""
