"""Warm starts: a pre-imported interpreter (forkserver.py) that the console scripts hand their stdio to (launch.py).

Each run starts two Python programs (the MCP server and, with the replay agent, the agent), and
each would spend about half a second of CPU importing the MCP SDK and the package. The session
starts one fork server that has imported them once; `agentbench-mcp` and `agentbench-replay`
connect to it (AGENTBENCH_WARM_SOCKET), pass it their stdin, stdout and stderr, and stay alive as
the forked program's stand-in in the agent's process group. Without the variable, or when the
server does not answer, they run as before, in process.
"""
