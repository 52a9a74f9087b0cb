"""Driving memhub's OAuth authorization server over plain HTTP in tests: register a client,
send the operator through login and consent (the same forms a browser posts), exchange the
code. PKCE pairs come from the MCP SDK's client (PKCEParameters), never from test code."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
from mcp.client.auth.oauth2 import PKCEParameters

from tests.support.admin import csrf_of, login

CALLBACK = "http://127.0.0.1:45999/callback"


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@dataclass
class Client:
    client_id: str
    client_secret: str | None


class OAuthFlow:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.resource = f"{base_url}/mcp"
        self.http = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        self.operator = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        assert login(self.operator).status_code == 303

    def close(self) -> None:
        self.http.close()
        self.operator.close()

    def register(self, redirect_uris=(CALLBACK,), **extra) -> httpx.Response:
        return self.http.post("/register", json={
            "client_name": "test client", "redirect_uris": list(redirect_uris),
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post", **extra})

    def client(self) -> Client:
        response = self.register()
        assert response.status_code == 201, response.text
        body = response.json()
        return Client(body["client_id"], body.get("client_secret"))

    def authorize(self, client: Client, pkce: PKCEParameters, *, drop=(), **overrides):
        params = {"response_type": "code", "client_id": client.client_id,
                  "redirect_uri": CALLBACK, "state": "state-123",
                  "code_challenge": pkce.code_challenge, "code_challenge_method": "S256",
                  "resource": self.resource, **overrides}
        return self.http.get("/authorize", params={k: v for k, v in params.items()
                                                   if k not in drop})

    def consent(self, consent_url: str, *, namespaces: str = "alpha", access="read-write",
                decision: str = "approve", scope: str = "namespaces") -> httpx.Response:
        path = consent_url.removeprefix(self.base_url)
        page = self.operator.get(path)
        assert page.status_code == 200, page.text
        return self.operator.post("/admin/oauth/consent", data={
            "csrf": csrf_of(page.text), "request": query_of(path)["request"],
            "surface": "web", "scope": scope, "namespaces": namespaces, "access": access,
            "tool_profile": "full", "decision": decision})

    def code(self, client: Client, pkce: PKCEParameters, **consent) -> str:
        response = self.authorize(client, pkce)
        assert response.status_code == 302, response.text
        approved = self.consent(response.headers["location"], **consent)
        assert approved.status_code == 303, approved.text
        answer = query_of(approved.headers["location"])
        assert answer["state"] == "state-123"
        return answer["code"]

    def token(self, client: Client, **form) -> httpx.Response:
        return self.http.post("/token", data={"client_id": client.client_id,
                                              "client_secret": client.client_secret, **form})

    def exchange(self, client: Client, code: str, verifier: str, **extra) -> httpx.Response:
        return self.token(client, **{"grant_type": "authorization_code", "code": code,
                                     "code_verifier": verifier, "redirect_uri": CALLBACK,
                                     "resource": self.resource, **extra})

    def refresh(self, client: Client, refresh_token: str, **extra) -> httpx.Response:
        return self.token(client, **{"grant_type": "refresh_token",
                                     "refresh_token": refresh_token, "resource": self.resource,
                                     **extra})

    def connect(self, **consent) -> tuple[Client, dict]:
        """Register, consent and exchange: the client and its token response."""
        client = self.client()
        pkce = PKCEParameters.generate()
        response = self.exchange(client, self.code(client, pkce, **consent), pkce.code_verifier)
        assert response.status_code == 200, response.text
        return client, response.json()


def mcp_status(mcp_url: str, token: str) -> int:
    """The HTTP status of an MCP initialize sent with `token` as a bearer token."""
    return httpx.post(mcp_url, timeout=30, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "oauth-test", "version": "1"}}}).status_code
