"""Tools named in a spec: Python objects by import reference (`imports`), and MCP servers."""
