"""agentbench-agent: seed 004's loop that lets a text-only model behind an OpenAI-compatible server operate a phone through an MCP server."""

from __future__ import annotations
