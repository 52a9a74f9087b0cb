"""The token gate's parts without a server: which query parameter is the token, which strings
can be tokens, the per-address throttle of refused tokens and its memory bound, the log's
masking of every spelling of a token."""

from __future__ import annotations

import asyncio

import pytest

from memhub.gateway.body_limit import take_over_mcp_body_limit
from memhub.gateway.rate_limit import FailedLookupLimiter
from memhub.gateway.token_gate import TokenGate, extract_token, token_shape_check
from memhub.logs import redact
from memhub.storage.postgres.operator.tokens import new_token
from memhub.storage.principal import Principal

SECRET = "Plain-Secret-0123456789"


def _scope(query: bytes = b"", headers=(), client=("10.0.0.7", 5555)) -> dict:
    return {"type": "http", "method": "POST", "path": "/mcp", "query_string": query,
            "headers": list(headers), "client": client}


def test_the_token_parameter_counts_only_under_its_plain_name():
    assert extract_token(_scope(b"a=1&token=abc&b=2")) == ("abc", b"a=1&b=2")
    for spelled in (b"%74oken=abc", b"t%6Fken=abc", b"TOKEN=abc", b"token%3Dabc"):
        assert extract_token(_scope(b"a=1&" + spelled)) == (None, b"a=1&" + spelled)


def test_the_token_value_is_decoded_and_the_header_wins():
    assert extract_token(_scope(b"token=a%2Bb+c"))[0] == "a+b c"
    header = [(b"authorization", b"Bearer from-header")]
    assert extract_token(_scope(b"token=from-query", header)) == ("from-header", b"")
    assert extract_token(_scope(b"token=&x=1")) == (None, b"x=1")


def test_issued_tokens_and_the_configured_one_are_plausible_and_nothing_else():
    plausible = token_shape_check(SECRET)
    assert plausible(new_token()) and plausible("mh_test_" + "0" * 32) and plausible(SECRET)
    for junk in ("", "x", "Bearer", SECRET[:-1], SECRET + "x", "mh_short", "mh_" + "a" * 198,
                 "mh_has space in it", "' OR 1=1 --", "mh_\u00e9" + "a" * 20):
        assert not plausible(junk), junk
    assert not token_shape_check(None)(SECRET)


def test_a_string_that_cannot_be_a_token_is_refused_without_a_lookup():
    looked_up: list[str] = []

    async def authenticate(token: str):
        looked_up.append(token)
        return None

    async def app(scope, receive, send):  # never reached: every token here is refused
        raise AssertionError("the request passed the gate")

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    gate = TokenGate(app, authenticate, ("/mcp",), plausible=token_shape_check(SECRET))
    for token in (b"not-a-token", b"mh_" + b"x" * 43):
        scope = _scope(headers=[(b"authorization", b"Bearer " + token)])
        asyncio.run(gate(scope, None, send))
    assert looked_up == ["mh_" + "x" * 43]
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [401, 401]


def test_a_burst_of_concurrent_guesses_gets_no_more_lookups_than_are_left():
    looked_up: list[str] = []
    statuses: list[int] = []

    async def burst() -> None:
        release = asyncio.Event()

        async def authenticate(token: str):
            looked_up.append(token)
            await release.wait()  # every lookup still in flight when the next request comes
            return None

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        limiter = FailedLookupLimiter(4, 600.0)
        limiter.spend("10.0.0.7")  # refused once already: 3 refusals left
        gate = TokenGate(None, authenticate, ("/mcp",), limiter=limiter)
        requests = [asyncio.create_task(gate(_scope(headers=[
            (b"authorization", f"Bearer mh_guess{i:040d}".encode())]), None, send))
            for i in range(10)]
        async def the_others_answered() -> None:
            while len(statuses) < 7:
                await asyncio.sleep(0)

        await asyncio.wait_for(the_others_answered(), timeout=10)
        release.set()
        await asyncio.gather(*requests)

    asyncio.run(burst())
    assert len(looked_up) == 3
    assert sorted(statuses) == [401] * 3 + [429] * 7


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_throttled_after_its_limit_and_regains_one_refusal_per_interval():
    clock = Clock()
    limiter = FailedLookupLimiter(3, 60.0, clock=clock)
    for _ in range(3):
        assert limiter.retry_after("a") == 0
        limiter.spend("a")
    assert limiter.retry_after("a") == pytest.approx(20.0)
    assert limiter.retry_after("b") == 0  # per address
    clock.now += 19.0
    assert limiter.retry_after("a") == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter.retry_after("a") == 0
    limiter.spend("a")
    assert limiter.retry_after("a") > 0


def test_a_lookup_that_was_not_refused_gives_back_what_it_took():
    limiter = FailedLookupLimiter(2, 60.0)
    for _ in range(5):
        limiter.spend("a")  # taken before the lookup
        limiter.refund("a")  # the token was good
    assert limiter.retry_after("a") == 0
    limiter.spend("a")
    limiter.spend("a")
    assert limiter.retry_after("a") > 0


def test_a_token_that_authenticated_is_known_until_it_is_refused():
    limiter = FailedLookupLimiter(3, 60.0)
    limiter.accepted("mh_good")
    assert limiter.known("mh_good") and not limiter.known("mh_other")
    limiter.forget("mh_good")  # refused since: revoked
    assert not limiter.known("mh_good")


def test_the_limiter_memory_is_bounded_however_many_addresses_and_tokens_it_sees():
    clock = Clock()
    limiter = FailedLookupLimiter(2, 60.0, max_addresses=50, max_known=20, clock=clock)
    for i in range(10_000):
        limiter.spend(f"10.{i // 256}.{i % 256}.1")
        limiter.accepted(f"mh_good{i}")
    assert len(limiter._buckets) == 50 and len(limiter._known) == 20
    clock.now += 60.0  # every bucket full again: forgotten as soon as it is looked at
    for i in range(9_950, 10_000):
        assert limiter.retry_after(f"10.{i // 256}.{i % 256}.1") == 0
    assert len(limiter._buckets) == 0


def test_the_sdks_body_limiter_is_taken_out_or_the_server_refuses_to_start():
    with pytest.raises(RuntimeError, match="MEMHUB_ARTIFACT_MAX_BYTES"):
        take_over_mcp_body_limit(object())


@pytest.mark.parametrize("text", [
    "/mcp?token=SECRETVALUE", "/mcp?%74oken=SECRETVALUE", "/mcp?t%6Fken=SECRETVALUE",
    "/mcp?TOKEN=SECRETVALUE", "/mcp?x=1&to%6Ben+=SECRETVALUE", "/mcp?x=1;token=SECRETVALUE",
    "/mcp?access_token=SECRETVALUE",
])
def test_the_log_masks_a_token_parameter_however_its_name_is_spelled(text):
    assert "SECRETVALUE" not in redact(text)


def test_the_log_masks_a_memhub_token_however_its_value_is_spelled():
    token = new_token()
    every_char = "".join(f"%{ord(c):02X}" for c in token)
    for text in (f"/mcp?x={every_char}", f"/mcp?x={token.replace('_', '%5F')}",
                 f"/mcp?token%3D{token}", f"GET {token} HTTP/1.1"):
        out = redact(text)
        assert token not in out and token[3:] not in out and every_char not in out, out
    assert redact("/mcp?q=hello&page=2") == "/mcp?q=hello&page=2"


def test_concurrent_good_tokens_from_one_address_are_never_throttled():
    """Fifty clients behind one address (a NAT, the loopback) each start with a token the
    limiter has not seen: none is refused while the others' lookups are in flight."""
    statuses: list[int] = []

    async def crowd() -> None:
        release = asyncio.Event()

        async def authenticate(token: str):
            await release.wait()
            return Principal(token_id=1, surface="cursor", namespaces=None)

        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        gate = TokenGate(app, authenticate, ("/mcp",), limiter=FailedLookupLimiter(3, 600.0))
        requests = [asyncio.create_task(gate(_scope(headers=[
            (b"authorization", f"Bearer mh_good{i:040d}".encode())]), None, send))
            for i in range(50)]
        for _ in range(100):
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*requests)

    asyncio.run(crowd())
    assert statuses == [200] * 50
