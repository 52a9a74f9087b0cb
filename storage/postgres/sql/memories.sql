-- Versioned memory: every statement runs inside a transaction scoped by RLS to one namespace,
-- and still names the namespace (defence in depth; the indexes lead with it).

-- name: expire_due_in_namespace
-- Lazily retire what has passed its expires_at before a write looks for duplicates, keys or
-- supersession targets, so an invisible (expired) memory can never absorb a new write.
UPDATE memories SET status = 'EXPIRED'
 WHERE namespace = %(namespace)s AND status = 'ACTIVE' AND expires_at <= now();

-- name: expire_due_batch
-- The periodic sweep, across every namespace; SKIP LOCKED so two processes never wait on
-- each other and a row a writer holds is simply taken next time.
UPDATE memories SET status = 'EXPIRED'
 WHERE id IN (SELECT id FROM memories
               WHERE status = 'ACTIVE' AND expires_at <= now()
               ORDER BY expires_at
               LIMIT %(limit)s
               FOR UPDATE SKIP LOCKED)
   AND status = 'ACTIVE' AND expires_at <= now()
RETURNING id;

-- name: is_in_past
SELECT %(ts)s::timestamptz <= now() AS past;

-- name: active_by_hash
SELECT * FROM memories
 WHERE namespace = %(namespace)s AND content_hash = %(content_hash)s AND status = 'ACTIVE';

-- name: active_by_key
SELECT id FROM memories
 WHERE namespace = %(namespace)s AND key = %(key)s AND status = 'ACTIVE';

-- name: supersede
-- Retire the named memories in favour of %(new_id)s; only ACTIVE ones move. Under READ
-- COMMITTED a row another transaction is superseding is re-checked after it commits
-- (EvalPlanQual), so two supersessions of one memory cannot both succeed.
UPDATE memories SET status = 'SUPERSEDED', superseded_by = %(new_id)s
 WHERE namespace = %(namespace)s AND id = ANY(%(ids)s) AND status = 'ACTIVE'
RETURNING id;

-- name: now_of
-- What the named memories are now, with their current revision's author and time: the details
-- of a write that did not apply (storage/memory_dicts.memory_now).
SELECT m.*, (m.status = 'ACTIVE' AND m.expires_at <= now()) IS TRUE AS past_expiry,
       r.author_client AS revision_author, r.created_at AS revision_at
  FROM memories m
  JOIN memory_revisions r ON r.memory_id = m.id AND r.is_current
 WHERE m.namespace = %(namespace)s AND m.id = ANY(%(ids)s);

-- name: insert_memory
-- ON CONFLICT on the ACTIVE-content index only: a concurrent identical assertion becomes a
-- dedup (no row returned), while a key collision still raises. `lineage` (0017): the words of
-- the memories this one supersedes (`supersede` pointed them at %(id)s earlier in this
-- transaction), so a query in the replaced words finds the replacement; NULL when it
-- supersedes nothing. Provenance (0029): origin, model, client_info, derived_from.
INSERT INTO memories (id, namespace, kind, title, content, tags, questions, key, metadata,
                      content_hash, author_client, quarantined, expires_at, origin, model,
                      client_info, derived_from, lineage)
VALUES (%(id)s, %(namespace)s, %(kind)s, %(title)s, %(content)s, %(tags)s, %(questions)s,
        %(key)s,
        %(metadata)s, %(content_hash)s, %(author)s, %(quarantined)s, %(expires_at)s,
        %(origin)s, %(model)s, %(client_info)s, coalesce(%(derived_from)s::jsonb, '[]'),
        (SELECT left(string_agg(concat_ws(' ', o.title, o.content, o.lineage), ' '
                                ORDER BY o.seq), 8000)
           FROM memories o
          WHERE o.namespace = %(namespace)s AND o.superseded_by = %(id)s))
ON CONFLICT (namespace, content_hash) WHERE status = 'ACTIVE' DO NOTHING
RETURNING *;

-- name: insert_revision
INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags, questions,
                              author_client)
VALUES (%(memory_id)s, %(namespace)s, %(revision)s, %(title)s, %(content)s, %(tags)s,
        %(questions)s, %(author)s);

-- name: retire_current_revision
UPDATE memory_revisions SET is_current = false
 WHERE memory_id = %(memory_id)s AND namespace = %(namespace)s AND is_current;

-- name: enqueue_embedding
INSERT INTO embedding_jobs (namespace, memory_id, revision)
VALUES (%(namespace)s, %(memory_id)s, %(revision)s);

-- name: corroborate
-- One row per (memory, surface); the author repeating itself is not corroboration.
INSERT INTO memory_corroborations (namespace, memory_id, author_client)
SELECT %(namespace)s, %(memory_id)s, %(author)s
 WHERE %(author)s <> %(memory_author)s
ON CONFLICT (memory_id, author_client) DO NOTHING
RETURNING id;

-- name: get_by_id
-- past_expiry: ACTIVE but past expires_at by the database clock, before the sweep has
-- marked it (memory_dict reports it EXPIRED: search already leaves it out).
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry,
       memhub_needs_reverification(namespace, id, kind, status) AS needs_reverification,
       memhub_claim_state(namespace, id) AS claim
  FROM memories WHERE namespace = %(namespace)s AND id = %(id)s;

-- name: get_by_key
-- The ACTIVE memory holding the key, else the most recent one that held it (audit read).
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry,
       memhub_needs_reverification(namespace, id, kind, status) AS needs_reverification,
       memhub_claim_state(namespace, id) AS claim
  FROM memories
 WHERE namespace = %(namespace)s AND key = %(key)s
 ORDER BY (status = 'ACTIVE') DESC, seq DESC
 LIMIT 1;

-- name: revise_cas
-- The compare-and-set, in ONE statement: the predicate is evaluated against the latest
-- committed row version. A writer blocked on the row lock re-checks it once the winner
-- commits (EvalPlanQual) and then matches nothing: zero rows means "you lost". Provenance not
-- given (NULL) is kept.
UPDATE memories
   SET current_revision = current_revision + 1,
       title = %(title)s, content = %(content)s, tags = %(tags)s, questions = %(questions)s,
       content_hash = %(content_hash)s, quarantined = %(quarantined)s,
       origin = coalesce(%(origin)s, origin), model = coalesce(%(model)s, model),
       client_info = coalesce(%(client_info)s, client_info),
       derived_from = coalesce(%(derived_from)s::jsonb, derived_from)
 WHERE id = %(id)s AND namespace = %(namespace)s
   AND current_revision = %(expected_revision)s
   AND status = 'ACTIVE'
RETURNING *;

-- name: current_revision_of
SELECT m.*, (m.status = 'ACTIVE' AND m.expires_at <= now()) IS TRUE AS past_expiry,
       r.author_client AS revision_author, r.created_at AS revision_at
  FROM memories m
  JOIN memory_revisions r ON r.memory_id = m.id AND r.is_current
 WHERE m.namespace = %(namespace)s AND m.id = %(id)s;

-- name: forget
UPDATE memories SET status = 'DELETED', deleted_reason = %(reason)s
 WHERE id = %(id)s AND namespace = %(namespace)s AND status IN ('ACTIVE', 'EXPIRED')
RETURNING *;

-- name: list_live
-- Stage 0: the ACTIVE listing reads live_memories, the one place that says what is live.
-- `key_prefix`: starts_with, planned with its value, is a range of memories_key_prefix
-- (migration 0048). Not LIKE: it is not leakproof, so under row-level security it could never
-- be an index condition, and its wildcards would need escaping.
SELECT * FROM live_memories
 WHERE namespace = %(namespace)s
   AND (%(kind)s::text IS NULL OR kind = %(kind)s)
   AND (%(tag)s::text IS NULL
        OR tag_ns_tsv @@ memhub_tag_gate(%(namespace)s, ARRAY[%(tag)s::text]))
   AND (%(include_quarantined)s OR NOT quarantined)
   AND (%(key_prefix)s::text IS NULL OR starts_with(key, %(key_prefix)s))
   AND (%(after_seq)s::bigint IS NULL OR seq < %(after_seq)s)
 ORDER BY seq DESC
 LIMIT %(limit)s;

-- name: list_by_status
-- Audit listings. EXPIRED includes memories past expires_at that the sweep has not reached
-- yet (reported EXPIRED, as past_expiry says); ALL (status NULL) is everything.
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry,
       memhub_needs_reverification(namespace, id, kind, status) AS needs_reverification,
       memhub_claim_state(namespace, id) AS claim
  FROM memories
 WHERE namespace = %(namespace)s
   AND (%(status)s::text IS NULL
        OR (%(status)s = 'EXPIRED' AND (status = 'EXPIRED'
                                         OR (status = 'ACTIVE' AND expires_at <= now())))
        OR (%(status)s <> 'EXPIRED' AND status = %(status)s))
   AND (%(kind)s::text IS NULL OR kind = %(kind)s)
   AND (%(tag)s::text IS NULL
        OR tag_ns_tsv @@ memhub_tag_gate(%(namespace)s, ARRAY[%(tag)s::text]))
   AND (%(include_quarantined)s OR NOT quarantined)
   AND (%(key_prefix)s::text IS NULL OR starts_with(key, %(key_prefix)s))
   AND (%(after_seq)s::bigint IS NULL OR seq < %(after_seq)s)
 ORDER BY seq DESC
 LIMIT %(limit)s;

-- name: revisions_of
SELECT revision, title, content, tags, questions, author_client, is_current, created_at
  FROM memory_revisions
 WHERE namespace = %(namespace)s AND memory_id = %(id)s
 ORDER BY revision;

-- name: superseded_by_this
SELECT id FROM memories
 WHERE namespace = %(namespace)s AND superseded_by = %(id)s
 ORDER BY seq;

-- name: corroborations_of
SELECT author_client, created_at FROM memory_corroborations
 WHERE namespace = %(namespace)s AND memory_id = %(id)s
 ORDER BY created_at, id;
