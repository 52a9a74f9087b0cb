-- name: insert
INSERT INTO sessions (namespace, title, author_client, quarantined, quarantine_reasons)
VALUES (%(namespace)s, %(title)s, %(author)s, %(quarantined)s, %(reasons)s)
RETURNING *;

-- name: by_id
SELECT * FROM sessions WHERE namespace = %(namespace)s AND id = %(id)s;

-- name: lock
-- Every append to a session takes this row lock first, so appends to one session run one
-- at a time (and the event_id check below it sees every committed event).
SELECT * FROM sessions WHERE namespace = %(namespace)s AND id = %(id)s FOR UPDATE;

-- name: event_by_event_id
SELECT * FROM session_events
 WHERE namespace = %(namespace)s AND session_id = %(session_id)s AND event_id = %(event_id)s;

-- name: bump_seq
UPDATE sessions SET next_seq = next_seq + 1, updated_at = now()
 WHERE namespace = %(namespace)s AND id = %(id)s AND status = 'open'
RETURNING next_seq;

-- name: insert_event
INSERT INTO session_events (namespace, session_id, seq, event_id, type, payload, request_hash,
                            author_client, quarantined, quarantine_reasons)
VALUES (%(namespace)s, %(session_id)s, %(seq)s, %(event_id)s, %(type)s, %(payload)s,
        %(request_hash)s, %(author)s, %(quarantined)s, %(reasons)s)
RETURNING *;

-- name: close
UPDATE sessions
   SET status = 'closed', closed_at = now(), closed_by = %(surface)s, updated_at = now()
 WHERE namespace = %(namespace)s AND id = %(id)s AND status = 'open'
RETURNING *;

-- name: list
SELECT * FROM sessions
 WHERE namespace = %(namespace)s
   AND (%(status)s = 'all' OR status = %(status)s)
   AND (%(include_quarantined)s OR NOT quarantined)
   AND (%(before_seq)s::bigint IS NULL OR seq < %(before_seq)s::bigint)
 ORDER BY seq DESC
 LIMIT %(limit)s;

-- name: events
SELECT * FROM session_events
 WHERE namespace = %(namespace)s AND session_id = %(session_id)s
   AND seq > %(after_seq)s
   AND (%(include_quarantined)s OR NOT quarantined)
 ORDER BY seq
 LIMIT %(limit)s;
