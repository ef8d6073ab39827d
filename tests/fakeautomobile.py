"""A fake AutoMobile checkout -> `node dist/src/index.js` that speaks MCP over stdio, with sources whose age a test sets.

The server lists AutoMobile-style tools (device-aware ones take a `device` string) and honours
AUTOMOBILE_DISABLED_TOOLS as AutoMobile does, so a test can tell which environment it got.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TOOLS = [
    {"name": "listDevices", "description": "inventory", "inputSchema": {"type": "object", "properties": {"platform": {"type": "string"}}}},
    {"name": "observe", "description": "screen", "inputSchema": {"type": "object", "properties": {"device": {"type": "string"}}}},
    {"name": "tapOn", "description": "tap", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "device": {"type": "string"}}}},
]

SERVER_JS = r"""
const tools = %(tools)s;
const disabled = (process.env.AUTOMOBILE_DISABLED_TOOLS || "").split(",").filter(Boolean);
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let newline;
  while ((newline = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, newline).trim();
    buffer = buffer.slice(newline + 1);
    if (!line) continue;
    const message = JSON.parse(line);
    if (message.id === undefined) continue;
    let result;
    if (message.method === "initialize") {
      result = {protocolVersion: message.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "auto-mobile", version: "0.0.0-fake"}};
    } else if (message.method === "tools/list") {
      result = {tools: tools.filter((tool) => !disabled.includes(tool.name))};
    } else {
      process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: message.id, error: {code: -32601, message: "no " + message.method}}) + "\n");
      continue;
    }
    process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: message.id, result}) + "\n");
  }
});
process.stdin.on("end", () => process.exit(0));
"""


def make_checkout(root: Path, *, build_age_s: float = 0.0, newest_source: str = "src/server/tools.ts") -> Path:
    """A checkout with `src/`, `schemas/tool-definitions.json` and a built `dist/src/index.js`.

    Args:
        root: Where the checkout goes.
        build_age_s: How many seconds the build is older than `newest_source` (0: built after it).
        newest_source: The source file with the newest modification time.

    Returns:
        The checkout directory.
    """
    (root / "src" / "server").mkdir(parents=True)
    (root / "schemas").mkdir()
    (root / "dist" / "src").mkdir(parents=True)
    (root / "src" / "index.ts").write_text("export {};\n", encoding="utf-8")
    (root / "src" / "server" / "tools.ts").write_text("export const tools = [];\n", encoding="utf-8")
    (root / "schemas" / "tool-definitions.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (root / "package.json").write_text('{"name": "auto-mobile", "scripts": {"build": "tsc"}}\n', encoding="utf-8")
    index = root / "dist" / "src" / "index.js"
    index.write_text(SERVER_JS % {"tools": json.dumps(TOOLS)}, encoding="utf-8")
    base = 1_700_000_000
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (base, base))
    os.utime(root / newest_source, (base + 100, base + 100))
    built = base + 100 - build_age_s if build_age_s else base + 200
    os.utime(index, (built, built))
    return root
