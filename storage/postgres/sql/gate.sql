-- The intent gate (storage/postgres/work/gate.py, gate_cache.py; migration 0033). Every statement
-- names the namespace; row-level security confines it too.

-- name: gate_profile
SELECT COALESCE(profile ->> 'intent_gate', 'off') AS intent_gate,
       COALESCE(profile ->> 'tier2', 'off') AS tier2, version
  FROM namespace_profiles
 WHERE namespace = %(namespace)s;

-- name: skills
-- The skills an intent is checked against: in name order, as many as fit both of the
-- namespace's limits (all of them, unless the namespace held more before the limits existed).
SELECT name, trigger, guidance, version, updated_at
  FROM (SELECT s.name, s.trigger, s.guidance, s.version, s.updated_at,
               count(*) OVER running AS n,
               sum(octet_length(s.trigger::text)) OVER running AS bytes
          FROM gate_skills s
         WHERE s.namespace = %(namespace)s
        WINDOW running AS (ORDER BY s.name)) upto
 WHERE n <= %(limit)s AND bytes <= %(bytes)s
 ORDER BY name;

-- name: lock_skills
-- Serialises the skill definitions of one namespace until COMMIT, so the count below is the
-- one the insert sees (the key is the namespace's, in a space of its own).
SELECT pg_advisory_xact_lock(hashtextextended('memhub.gate_skills:' || %(namespace)s, 0));

-- name: skills_beside
-- What a definition of the named skill with %(trigger)s would leave the namespace holding:
-- how many other skills and their triggers' bytes, and the bytes of this one, before and after.
SELECT count(*) FILTER (WHERE name <> %(name)s) AS others,
       coalesce(sum(octet_length(trigger::text)) FILTER (WHERE name <> %(name)s), 0)
           AS others_bytes,
       coalesce(sum(octet_length(trigger::text)) FILTER (WHERE name = %(name)s), 0) AS bytes_now,
       octet_length(%(trigger)s::jsonb::text) AS bytes,
       coalesce(bool_or(name = %(name)s), false) AS exists
  FROM gate_skills
 WHERE namespace = %(namespace)s;

-- name: upsert_skill
-- A redefinition bumps the version only when the trigger or guidance changed.
INSERT INTO gate_skills (namespace, name, trigger, guidance, updated_by)
VALUES (%(namespace)s, %(name)s, %(trigger)s, %(guidance)s, %(updated_by)s)
ON CONFLICT (namespace, name) DO UPDATE
   SET trigger = EXCLUDED.trigger, guidance = EXCLUDED.guidance,
       version = gate_skills.version + 1, updated_by = EXCLUDED.updated_by, updated_at = now()
 WHERE (gate_skills.trigger, gate_skills.guidance)
       IS DISTINCT FROM (EXCLUDED.trigger, EXCLUDED.guidance)
RETURNING name, trigger, guidance, version, updated_by, updated_at, (xmax = 0) AS inserted;

-- name: insert_skill
-- skill_define with expected_version 0: only a skill not defined yet is created.
INSERT INTO gate_skills (namespace, name, trigger, guidance, updated_by)
VALUES (%(namespace)s, %(name)s, %(trigger)s, %(guidance)s, %(updated_by)s)
ON CONFLICT (namespace, name) DO NOTHING
RETURNING name, trigger, guidance, version, updated_by, updated_at, true AS inserted;

-- name: update_skill_cas
-- skill_define with expected_version N: the compare-and-set, in one statement (a writer
-- blocked on the row re-checks the version once the other commits, and matches nothing).
UPDATE gate_skills
   SET trigger = %(trigger)s, guidance = %(guidance)s, version = version + 1,
       updated_by = %(updated_by)s, updated_at = now()
 WHERE namespace = %(namespace)s AND name = %(name)s AND version = %(expected)s
   AND (trigger, guidance) IS DISTINCT FROM (%(trigger)s::jsonb, %(guidance)s::text)
RETURNING name, trigger, guidance, version, updated_by, updated_at, false AS inserted;

-- name: skill
SELECT name, trigger, guidance, version, updated_by, updated_at
  FROM gate_skills
 WHERE namespace = %(namespace)s AND name = %(name)s;

-- name: skill_now
-- The skill as it is now, and whether it already says what this definition says.
SELECT name, trigger, guidance, version, updated_by, updated_at,
       (trigger, guidance) IS NOT DISTINCT FROM (%(trigger)s::jsonb, %(guidance)s::text) AS same
  FROM gate_skills
 WHERE namespace = %(namespace)s AND name = %(name)s;

-- name: insert_intent
INSERT INTO gate_intents (namespace, text, kind, tags, opened_by)
VALUES (%(namespace)s, %(text)s, %(kind)s, %(tags)s, %(opened_by)s)
RETURNING id, opened_at;

-- name: close_intent
-- Only an open intent closes; the trigger of migration 0033 refuses a second close anyway.
UPDATE gate_intents
   SET outcome = %(outcome)s, closed_by = %(closed_by)s, closed_at = now()
 WHERE namespace = %(namespace)s AND id = %(id)s AND closed_at IS NULL
RETURNING id, outcome, closed_by, closed_at, opened_at;

-- name: intent
SELECT id, outcome, closed_by, closed_at, opened_at
  FROM gate_intents
 WHERE namespace = %(namespace)s AND id = %(id)s;

-- name: spend_nonce
INSERT INTO gate_nonces (namespace, nonce) VALUES (%(namespace)s, %(nonce)s)
ON CONFLICT DO NOTHING
RETURNING used_at;

-- name: preview_targets
-- The memories a supersede or forget would change, with how fresh each is: its current
-- revision's age and its last verification (of any revision).
SELECT m.id, m.kind, m.title, m.status, m.superseded_by, m.current_revision, m.updated_at,
       (SELECT max(v.verified_at) FROM memory_verifications v
         WHERE v.namespace = m.namespace AND v.memory_id = m.id) AS last_verified_at,
       floor(extract(epoch FROM now() - m.updated_at))::bigint AS updated_age_seconds
  FROM memories m
 WHERE m.namespace = %(namespace)s AND m.id = ANY(%(ids)s::uuid[])
 ORDER BY m.updated_at DESC;

-- name: preview_dependents
-- What depends on those memories: the ACTIVE memories that name one in derived_from, and the
-- memories they superseded (their own lineage), each with its freshness.
SELECT m.id, m.kind, m.title, m.status, m.updated_at,
       CASE WHEN m.superseded_by = ANY(%(ids)s::uuid[]) THEN 'superseded_by_target'
            ELSE 'derived_from_target' END AS relation,
       (SELECT max(v.verified_at) FROM memory_verifications v
         WHERE v.namespace = m.namespace AND v.memory_id = m.id) AS last_verified_at,
       floor(extract(epoch FROM now() - m.updated_at))::bigint AS updated_age_seconds
  FROM memories m
 WHERE m.namespace = %(namespace)s AND NOT (m.id = ANY(%(ids)s::uuid[]))
   AND ((m.status = 'ACTIVE' AND EXISTS (
            SELECT 1 FROM jsonb_array_elements(m.derived_from) d
             WHERE d ->> 'type' = 'memory' AND d ->> 'id' = ANY(%(ids)s::text[])))
        OR m.superseded_by = ANY(%(ids)s::uuid[]))
 ORDER BY m.updated_at DESC
 LIMIT 50;

-- name: review_memories
-- What tier 2's model reads beside the change: the memories it would retire, then the ACTIVE
-- memories that name one in derived_from (they would go stale). A quarantined memory's text
-- is never shown to a model.
SELECT m.id, m.kind, m.title, m.status,
       CASE WHEN m.quarantined THEN NULL ELSE m.content END AS content,
       CASE WHEN m.id = ANY(%(ids)s::uuid[]) THEN 'retired' ELSE 'dependent' END AS role
  FROM memories m
 WHERE m.namespace = %(namespace)s
   AND (m.id = ANY(%(ids)s::uuid[])
        OR (m.status = 'ACTIVE' AND NOT m.quarantined AND EXISTS (
            SELECT 1 FROM jsonb_array_elements(m.derived_from) d
             WHERE d ->> 'type' = 'memory' AND d ->> 'id' = ANY(%(ids)s::text[]))))
 ORDER BY m.id = ANY(%(ids)s::uuid[]) DESC, m.updated_at DESC
 LIMIT %(limit)s;
