"""The one process that owns a store: the landscape app and the MCP endpoint.

(Placeholder: to be written.)
"""
