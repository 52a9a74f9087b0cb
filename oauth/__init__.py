"""OAuth 2.1 for remote MCP clients: memhub as the authorization server of its own `/mcp`.

The protocol pieces are the MCP Python SDK's (`mcp.server.auth`: metadata, registration,
authorization and token endpoints, PKCE verification); this package supplies the provider
behind them (oauth/provider.py), the operator's consent on /admin (oauth/consent.py) and the
wiring (oauth/routes.py). Issued access tokens are api_tokens rows, so the token gate, the
scope checks and row-level security treat them like any project-scoped token.
"""
