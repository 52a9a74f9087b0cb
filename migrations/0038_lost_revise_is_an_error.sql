-- A write that did not apply is an error (CONFLICT, with what is there now in its details),
-- never an answer: a revise that loses its compare-and-set no longer answers
-- {"outcome": "conflict", ...} (storage/postgres/memories/memories.py). An error commits
-- nothing, its client_request_id included.
--
-- Keys that recorded such a loss as an answer would replay it as a success-shaped
-- {"outcome": "replayed", "original_outcome": "conflict"}: they go. A retry sent with one of
-- them runs the compare-and-set again, and fails again (a memory's revision only grows, so a
-- stale expected_revision stays stale), now as the error.

-- Under forced row-level security the migrating role sees the rows only with an
-- all-namespace scope.
SELECT set_config('memhub.namespaces', '*', true);

DELETE FROM idempotency_keys
 WHERE operation = 'revise' AND response ->> 'outcome' = 'conflict';
