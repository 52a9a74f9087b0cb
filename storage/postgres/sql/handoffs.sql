-- name: insert
INSERT INTO handoffs (namespace, title, body, next_steps, refs, for_surface, author_client,
                      quarantined, quarantine_reasons)
VALUES (%(namespace)s, %(title)s, %(body)s, %(next_steps)s, %(refs)s, %(for_surface)s,
        %(author)s, %(quarantined)s, %(reasons)s)
RETURNING *;

-- name: by_id
SELECT * FROM handoffs WHERE namespace = %(namespace)s AND id = %(id)s;

-- name: latest_open_for
-- The newest open handoff addressed to this surface or to anyone.
SELECT * FROM handoffs
 WHERE namespace = %(namespace)s
   AND status = 'open'
   AND (for_surface IS NULL OR for_surface = %(surface)s)
   AND (%(include_quarantined)s OR NOT quarantined)
 ORDER BY seq DESC
 LIMIT 1;

-- name: take
-- The compare-and-set: only an open handoff can be taken, so of two racing loaders exactly
-- one UPDATE finds status = 'open' (the other re-checks the row after the winner commits).
UPDATE handoffs
   SET status = 'taken', taken_by = %(surface)s, taken_at = now()
 WHERE namespace = %(namespace)s AND id = %(id)s AND status = 'open'
RETURNING *;

-- name: list
SELECT * FROM handoffs
 WHERE namespace = %(namespace)s
   AND (%(status)s = 'all' OR status = %(status)s)
   AND (%(include_quarantined)s OR NOT quarantined)
   AND (%(before_seq)s::bigint IS NULL OR seq < %(before_seq)s::bigint)
 ORDER BY seq DESC
 LIMIT %(limit)s;
