"""`strato mcp`: the workspace's flows, gates, guard, decisions and graph as MCP tools."""
