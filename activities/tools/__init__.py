"""Tools: the tool activities (`tool_calls`), the registry and users' own tools (`--tools`).

Also MCP servers, remote A2A agents and agent profiles as tools, a tool's state effects, and
the check of an approver's edited arguments.
"""
