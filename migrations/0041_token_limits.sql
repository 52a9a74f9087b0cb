-- A token's own limits (gateway/token_limits.py; docs/operations.md#limits): requests in flight
-- at once, and a sustained rate per minute with its burst (a token bucket). NULL is the
-- server's default (MEMHUB_TOKEN_MAX_IN_FLIGHT, MEMHUB_TOKEN_RATE_PER_MINUTE,
-- MEMHUB_TOKEN_RATE_BURST); a rate of 0 turns the rate limit off for the token. Set by the
-- operator (memhub-admin token limits, the dashboard), read with the token at every request,
-- so a change applies from the token's next request, in every process. A rotation carries the
-- surface token's limits to its successor.
ALTER TABLE api_tokens
    ADD COLUMN max_in_flight integer
        CONSTRAINT api_tokens_max_in_flight_check CHECK (max_in_flight BETWEEN 1 AND 1000),
    ADD COLUMN rate_per_minute integer
        CONSTRAINT api_tokens_rate_per_minute_check CHECK (rate_per_minute BETWEEN 0 AND 1000000),
    ADD COLUMN rate_burst integer
        CONSTRAINT api_tokens_rate_burst_check CHECK (rate_burst BETWEEN 1 AND 100000);
