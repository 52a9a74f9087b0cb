"""Throttle refused tokens per client address, in process and in bounded memory.

Every request's token costs a database lookup, so a flood of guessed tokens is a flood of
lookups competing with the good clients' queries. Each address has a token bucket of
`limit` refusals that refills evenly over `window` seconds; an address whose bucket is empty
is answered 429 RATE_LIMITED before its token is looked up. Only refusals spend it: an
address that was never refused (or has refilled) is not counted at all, so any number of
concurrent clients with good tokens behind one address never meet the limit. Once an address
has been refused, each of its lookups takes one from the bucket before it starts and gives it
back if the token was good, so a burst of concurrent guesses cannot overshoot what is left; the
first burst from an address never refused may overshoot by the lookups already in flight.

A client behind the same address as a flood (one NAT, one proxy, the loopback) keeps working
if its token authenticated recently: such a token is still looked up, as every token is
(revoking it stops it at once), only not refused unseen. The memory is bounded: at most
`max_addresses` buckets and `max_known` recently good tokens (keyed hashes, never the
tokens), the least recently used dropped first. The address is the ASGI scope's `client`,
which uvicorn has already resolved (forwarded headers included, when trusted).
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

logger = logging.getLogger(__name__)

MAX_ADDRESSES = 10_000
MAX_KNOWN = 1024


class _Bucket:
    __slots__ = ("level", "updated", "logged")

    def __init__(self, level: float, now: float) -> None:
        self.level = level
        self.updated = now
        self.logged = -math.inf


class FailedLookupLimiter:
    def __init__(self, limit: int, window: float, *, max_addresses: int = MAX_ADDRESSES,
                 max_known: int = MAX_KNOWN,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self.rate = limit / window  # refusals regained per second
        self.max_addresses = max_addresses
        self.max_known = max_known
        self.clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._known: OrderedDict[bytes, None] = OrderedDict()
        self._key = secrets.token_bytes(32)

    def retry_after(self, address: str) -> float:
        """Seconds until `address` may have a token looked up again; 0 when it is not
        throttled."""
        bucket = self._refilled(address)
        if bucket is None or bucket.level >= 1:
            return 0.0
        now = self.clock()
        if now - bucket.logged >= self.window:
            bucket.logged = now
            # An operator wants to know someone is guessing tokens; once per address and window.
            logger.warning("refused tokens throttled", extra={"client": address,
                                                              "limit": self.limit,
                                                              "window_seconds": self.window})
        return (1 - bucket.level) / self.rate

    def reserve(self, address: str) -> bool:
        """Before a lookup: take one refusal from `address`'s bucket if it has been refused
        lately (True), so concurrent guesses count while in flight; an address with no refusals
        takes nothing (False) and is charged only if its token is refused."""
        bucket = self._refilled(address)
        if bucket is None:
            return False
        bucket.level = max(bucket.level - 1, 0.0)
        return True

    def spend(self, address: str) -> None:
        """Take one refusal from `address`'s bucket: after a refused lookup that `reserve` did
        not charge."""
        bucket = self._refilled(address)
        if bucket is None:
            bucket = _Bucket(float(self.limit), self.clock())
            self._buckets[address] = bucket
            if len(self._buckets) > self.max_addresses:
                self._buckets.popitem(last=False)
        bucket.level = max(bucket.level - 1, 0.0)

    def refund(self, address: str) -> None:
        """Give back what `reserve` took for a lookup that was not refused."""
        bucket = self._refilled(address)
        if bucket is not None:
            bucket.level += 1
            if bucket.level >= self.limit:
                del self._buckets[address]

    def forget(self, token: str) -> None:
        """`token` was refused (revoked since it was accepted, say): no longer known."""
        self._known.pop(self._digest(token), None)

    def accepted(self, token: str) -> None:
        digest = self._digest(token)
        self._known[digest] = None
        self._known.move_to_end(digest)
        if len(self._known) > self.max_known:
            self._known.popitem(last=False)

    def known(self, token: str) -> bool:
        """Whether `token` authenticated recently (and was not refused since)."""
        return self._digest(token) in self._known

    def _refilled(self, address: str) -> _Bucket | None:
        """The address's bucket, refilled to now; None when it has none or it is full again
        (a full bucket is forgotten: the address costs no memory until it is refused)."""
        bucket = self._buckets.get(address)
        if bucket is None:
            return None
        now = self.clock()
        bucket.level += (now - bucket.updated) * self.rate
        bucket.updated = now
        if bucket.level >= self.limit:
            del self._buckets[address]
            return None
        self._buckets.move_to_end(address)
        return bucket

    def _digest(self, token: str) -> bytes:
        return hashlib.blake2b(token.encode("utf-8", "surrogatepass"), key=self._key,
                               digest_size=16).digest()
