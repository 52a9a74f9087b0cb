-- Export and import of one namespace (storage/postgres/operator/transfer.py). Exports read as
-- memhub_app in one REPEATABLE READ snapshot; imports write as the owner with
-- memhub.restoring on (migration 0025). Every statement names the namespace.

-- name: export_snapshot
-- The first statement of an export's transaction: one consistent moment of the namespace.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: export_scope
-- Read as the service reads (row-level security, the artifact read function), this
-- transaction only.
SELECT set_config('role', %(role)s, true), set_config('memhub.namespaces', %(namespace)s, true);

-- name: export_counts
SELECT (SELECT count(*) FROM namespace_profiles WHERE namespace = %(namespace)s)::int AS profile,
       (SELECT count(*) FROM memories WHERE namespace = %(namespace)s)::int AS memory,
       (SELECT count(*) FROM handoffs WHERE namespace = %(namespace)s)::int AS handoff,
       (SELECT count(*) FROM sessions WHERE namespace = %(namespace)s)::int AS session,
       (SELECT count(*) FROM session_events WHERE namespace = %(namespace)s)::int
           AS session_event,
       (SELECT count(*) FROM artifacts WHERE namespace = %(namespace)s)::int AS artifact;

-- name: memories_page
-- Oldest first: an import inserts in file order, so the memories keep their order there.
-- past_expiry: ACTIVE but past expires_at, before the sweep has marked it (written EXPIRED,
-- as every read reports it).
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry
  FROM memories
 WHERE namespace = %(namespace)s AND seq > %(after)s
 ORDER BY seq
 LIMIT %(limit)s;

-- name: memories_by_id
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry
  FROM memories
 WHERE namespace = %(namespace)s AND id = ANY(%(ids)s);

-- name: revisions_of
SELECT * FROM memory_revisions
 WHERE namespace = %(namespace)s AND memory_id = ANY(%(ids)s)
 ORDER BY memory_id, revision;

-- name: verifications_of
SELECT memory_id, revision, verified_by, verified_at FROM memory_verifications
 WHERE namespace = %(namespace)s AND memory_id = ANY(%(ids)s)
 ORDER BY id;

-- name: corroborations_of
SELECT memory_id, author_client, created_at FROM memory_corroborations
 WHERE namespace = %(namespace)s AND memory_id = ANY(%(ids)s)
 ORDER BY id;

-- name: handoffs_page
SELECT * FROM handoffs
 WHERE namespace = %(namespace)s AND seq > %(after)s
 ORDER BY seq
 LIMIT %(limit)s;

-- name: handoffs_by_id
SELECT * FROM handoffs WHERE namespace = %(namespace)s AND id = ANY(%(ids)s);

-- name: sessions_page
SELECT * FROM sessions
 WHERE namespace = %(namespace)s AND seq > %(after)s
 ORDER BY seq
 LIMIT %(limit)s;

-- name: sessions_by_id
SELECT * FROM sessions WHERE namespace = %(namespace)s AND id = ANY(%(ids)s);

-- name: events_page
SELECT * FROM session_events
 WHERE namespace = %(namespace)s AND session_id = %(session_id)s AND seq > %(after)s
 ORDER BY seq
 LIMIT %(limit)s;

-- name: events_by_key
SELECT e.* FROM session_events e
  JOIN unnest(%(session_ids)s::uuid[], %(seqs)s::bigint[]) AS k(session_id, seq)
    ON e.session_id = k.session_id AND e.seq = k.seq
 WHERE e.namespace = %(namespace)s;

-- name: artifacts_page
SELECT * FROM artifacts
 WHERE namespace = %(namespace)s AND seq > %(after)s
 ORDER BY seq
 LIMIT %(limit)s;

-- name: artifacts_by_id
SELECT * FROM artifacts WHERE namespace = %(namespace)s AND id = ANY(%(ids)s);

-- name: purged
-- Records of the file that a purge removed from the target namespace (migration 0023).
SELECT target FROM purge_tombstones
 WHERE namespace = %(namespace)s AND kind = %(kind)s AND target = ANY(%(targets)s)
 ORDER BY target;

-- name: restore_scope
-- The import's transaction: confined to the target namespace (forced row-level security
-- binds the owner too, unless it is a superuser), and the guards of migration 0025 stand
-- aside for the rows it restores.
SELECT set_config('memhub.namespaces', %(namespace)s, true),
       set_config('memhub.restoring', 'on', true);

-- name: can_restore
-- Whether this connection's role may restore (migration 0025): it owns the tables.
SELECT memhub_restoring('memories'::regclass)
       AND memhub_restoring('memory_revisions'::regclass) AS allowed;

-- name: insert_memory
INSERT INTO memories (id, namespace, kind, title, content, tags, questions, key, metadata,
                      status, superseded_by, current_revision, content_hash, author_client,
                      quarantined, deleted_reason, created_at, updated_at, retired_at,
                      expires_at, lineage, origin, model, client_info, derived_from)
VALUES (%(id)s, %(namespace)s, %(kind)s, %(title)s, %(content)s, %(tags)s, %(questions)s,
        %(key)s,
        %(metadata)s, %(status)s, %(superseded_by)s, %(current_revision)s, %(content_hash)s,
        %(author_client)s, %(quarantined)s, %(deleted_reason)s, %(created_at)s,
        %(updated_at)s, %(retired_at)s, %(expires_at)s, %(lineage)s, %(origin)s, %(model)s,
        %(client_info)s, %(derived_from)s);

-- name: insert_revision
INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,
                              questions, author_client, is_current, created_at)
VALUES (%(memory_id)s, %(namespace)s, %(revision)s, %(title)s, %(content)s, %(tags)s,
        %(questions)s, %(author_client)s, %(is_current)s, %(created_at)s);

-- name: insert_corroboration
INSERT INTO memory_corroborations (namespace, memory_id, author_client, created_at)
VALUES (%(namespace)s, %(memory_id)s, %(author_client)s, %(created_at)s);

-- name: claims_of
SELECT memory_id, repo, pr, branch, sha FROM memory_claims
 WHERE namespace = %(namespace)s AND memory_id = ANY(%(ids)s);

-- name: insert_claim
-- Without its verdicts: coord_reconcile checks the claim again in this database.
INSERT INTO memory_claims (namespace, memory_id, repo, pr, branch, sha)
VALUES (%(namespace)s, %(memory_id)s, %(repo)s, %(pr)s, %(branch)s, %(sha)s);

-- name: insert_verification
-- Restored with the time it was recorded (memhub_trust_rows_guard stands aside while restoring).
INSERT INTO memory_verifications (namespace, memory_id, revision, verified_by, verified_at)
VALUES (%(namespace)s, %(memory_id)s, %(revision)s, %(verified_by)s, %(verified_at)s);

-- name: insert_handoff
INSERT INTO handoffs (id, namespace, title, body, next_steps, refs, for_surface,
                      author_client, status, taken_by, taken_at, quarantined,
                      quarantine_reasons, created_at)
VALUES (%(id)s, %(namespace)s, %(title)s, %(body)s, %(next_steps)s, %(refs)s,
        %(for_surface)s, %(author_client)s, %(status)s, %(taken_by)s, %(taken_at)s,
        %(quarantined)s, %(quarantine_reasons)s, %(created_at)s);

-- name: insert_session
INSERT INTO sessions (id, namespace, title, author_client, status, next_seq, quarantined,
                      quarantine_reasons, created_at, updated_at, closed_at, closed_by)
VALUES (%(id)s, %(namespace)s, %(title)s, %(author_client)s, %(status)s, %(next_seq)s,
        %(quarantined)s, %(quarantine_reasons)s, %(created_at)s, %(updated_at)s,
        %(closed_at)s, %(closed_by)s);

-- name: insert_event
INSERT INTO session_events (namespace, session_id, seq, event_id, type, payload,
                            request_hash, author_client, quarantined, quarantine_reasons,
                            created_at)
VALUES (%(namespace)s, %(session_id)s, %(seq)s, %(event_id)s, %(type)s, %(payload)s,
        %(request_hash)s, %(author_client)s, %(quarantined)s, %(quarantine_reasons)s,
        %(created_at)s);

-- name: insert_artifact
INSERT INTO artifacts (id, namespace, sha256, name, media_type, size, author_client,
                       created_at)
VALUES (%(id)s, %(namespace)s, %(sha256)s, %(name)s, %(media_type)s, %(size)s,
        %(author_client)s, %(created_at)s);

-- name: enqueue_missing
-- embeddings.enqueue_missing for one namespace: the imported memories' vectors are made by
-- the embedding worker (a running server, or memhub-admin backfill), never read from a file.
INSERT INTO embedding_jobs (namespace, memory_id, revision)
SELECT m.namespace, m.id, m.current_revision
  FROM memories m
  LEFT JOIN memory_embeddings e ON e.memory_id = m.id
 WHERE m.namespace = %(namespace)s
   AND m.status = 'ACTIVE'
   AND (e.memory_id IS NULL OR e.model <> %(model)s OR e.revision < m.current_revision)
   AND NOT EXISTS (SELECT 1 FROM embedding_jobs j WHERE j.memory_id = m.id)
RETURNING id;

-- name: mark_lexicon_due
-- The namespace's word statistics are recounted at the next refresh (storage/postgres/
-- lexicon.py: anything new since max_seq, counted long ago); until then the old counts serve.
-- A namespace never counted has no row and is due already.
UPDATE lexicon_state SET max_seq = 0, refreshed_at = '-infinity'
 WHERE namespace = %(namespace)s;
