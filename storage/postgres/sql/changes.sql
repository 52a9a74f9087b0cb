-- The change feed (migration 0028, storage/postgres/memories/changes.py).

-- name: read
-- One statement, so the horizon and the rows come from one snapshot: every transaction below
-- the snapshot's xmin has ended, so the rows below it are all there and no more can appear.
-- `next_xid` (the snapshot's xmax) bounds every position this database can have issued.
SELECT h.horizon::text AS horizon, h.next_xid::text AS next_xid,
       t.through_xid::text AS trimmed_xid, t.through_id AS trimmed_id,
       f.id, f.xid::text AS xid, f.what, f.target_type, f.target_id, f.revision,
       f.replacement_id, f.surface, f.at
  FROM (SELECT pg_snapshot_xmin(s) AS horizon, pg_snapshot_xmax(s) AS next_xid
          FROM pg_current_snapshot() AS s) h
  LEFT JOIN change_feed_trimmed t ON t.namespace = %(namespace)s
  LEFT JOIN LATERAL (
        SELECT c.* FROM change_feed c
         WHERE c.namespace = %(namespace)s
           AND (c.xid, c.id) > (%(after_xid)s::xid8, %(after_id)s::bigint)
           AND c.xid < h.horizon
         ORDER BY c.xid, c.id
         LIMIT %(fetch)s) f ON true
 ORDER BY f.xid, f.id;

-- name: head
SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon;
