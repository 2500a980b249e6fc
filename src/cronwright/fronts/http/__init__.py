"""The HTTP front: the ASGI app (the protocol at /v1/call, MCP at /mcp, the dashboard at /ui/,
/metrics), and the HTTP status of each reply."""
