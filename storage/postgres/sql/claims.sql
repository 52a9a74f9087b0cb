-- Claims and their verdicts (storage/postgres/memories/claims.py; migration 0032). Every statement
-- names its namespace where it has one; row-level security confines it too.

-- name: insert_claim
-- A deduplicated write keeps the claim the memory already has (ON CONFLICT: claims never change).
INSERT INTO memory_claims (namespace, memory_id, repo, pr, branch, sha)
VALUES (%(namespace)s, %(memory_id)s, %(repo)s, %(pr)s, %(branch)s, %(sha)s)
ON CONFLICT (memory_id) DO NOTHING;

-- name: claims_of
-- The listed memories' claims, live or not: reconciling a superseded memory's claim is allowed
-- (its verdict stays readable in the audit reads). `granted`: the operator granted the
-- repository to this namespace; `quarantined`: the memory is held back, its claim not checked.
SELECT c.memory_id, c.repo, c.pr, c.branch, c.sha, m.quarantined,
       EXISTS (SELECT 1 FROM github_repo_grants g
                WHERE g.namespace = c.namespace AND g.repo = lower(c.repo)) AS granted
  FROM memory_claims c
  JOIN memories m ON m.id = c.memory_id AND m.namespace = c.namespace
 WHERE c.namespace = %(namespace)s AND c.memory_id = ANY (%(ids)s::uuid[]);

-- name: due_claims
-- Live, unquarantined memories' claims never checked, or last checked more than %(recheck)s
-- seconds ago, least recently checked first.
SELECT c.memory_id, c.repo, c.pr, c.branch, c.sha,
       EXISTS (SELECT 1 FROM github_repo_grants g
                WHERE g.namespace = c.namespace AND g.repo = lower(c.repo)) AS granted
  FROM memory_claims c
  JOIN live_memories m ON m.id = c.memory_id AND m.namespace = c.namespace
  LEFT JOIN LATERAL (
    SELECT v.checked_at FROM claim_verdicts v
     WHERE v.memory_id = c.memory_id AND v.namespace = c.namespace
     ORDER BY v.id DESC LIMIT 1) last ON true
 WHERE c.namespace = %(namespace)s AND NOT m.quarantined
   AND (last.checked_at IS NULL
        OR last.checked_at < now() - make_interval(secs => %(recheck)s))
 ORDER BY last.checked_at NULLS FIRST, c.created_at
 LIMIT %(limit)s;

-- name: quarantined_claims
-- The claims due_claims passes over because their memory is quarantined, newest first.
SELECT c.memory_id
  FROM memory_claims c
  JOIN live_memories m ON m.id = c.memory_id AND m.namespace = c.namespace
 WHERE c.namespace = %(namespace)s AND m.quarantined
 ORDER BY m.seq DESC
 LIMIT %(limit)s;

-- name: insert_verdict
-- observed_at is never later than now: a clock ahead of the database's cannot put a verdict
-- beyond every later delivery's reach. NULL stays NULL (LEAST alone would make it now()).
INSERT INTO claim_verdicts (namespace, memory_id, verdict, evidence, source, observed_at)
VALUES (%(namespace)s, %(memory_id)s, %(verdict)s, %(evidence)s, %(source)s,
        CASE WHEN %(observed_at)s::timestamptz IS NOT NULL
             THEN least(%(observed_at)s::timestamptz, now()) END)
RETURNING memory_id, verdict, evidence, checked_at;

-- name: claim_delivery
-- The webhook's replay guard: no row back when this delivery id, or a delivery with the same
-- body (the signature covers only the body), was handled before.
INSERT INTO github_deliveries (delivery_id, event, body_sha256)
VALUES (%(delivery_id)s, %(event)s, %(body_sha256)s)
ON CONFLICT DO NOTHING
RETURNING delivery_id;

-- name: webhook_pr_verdicts
-- A pull_request delivery decides every claim on that pull request in the namespaces that
-- granted its repository, except a claim that recorded a newer state than this event's.
INSERT INTO claim_verdicts (namespace, memory_id, verdict, evidence, source, observed_at)
SELECT c.namespace, c.memory_id, %(verdict)s, %(evidence)s, 'webhook',
       least(%(observed_at)s::timestamptz, now())
  FROM memory_claims c
  JOIN github_repo_grants g ON g.namespace = c.namespace AND g.repo = lower(c.repo)
 WHERE lower(c.repo) = lower(%(repo)s) AND c.pr = %(pr)s
   AND NOT EXISTS (SELECT 1 FROM claim_verdicts v
                    WHERE v.memory_id = c.memory_id AND v.namespace = c.namespace
                      AND v.observed_at > least(%(observed_at)s::timestamptz, now()));

-- name: webhook_branch_verdicts
-- A push decides every claim on that branch's head in the namespaces that granted its
-- repository (current when the claimed commit is the new head: an abbreviation matches the id
-- it starts; stale otherwise), except a claim that recorded a newer state than this push.
INSERT INTO claim_verdicts (namespace, memory_id, verdict, evidence, source, observed_at)
SELECT c.namespace, c.memory_id,
       CASE WHEN starts_with(%(head_sha)s, c.sha) THEN 'current' ELSE 'stale' END,
       %(evidence)s, 'webhook', least(%(observed_at)s::timestamptz, now())
  FROM memory_claims c
  JOIN github_repo_grants g ON g.namespace = c.namespace AND g.repo = lower(c.repo)
 WHERE lower(c.repo) = lower(%(repo)s) AND c.branch = %(branch)s
   AND NOT EXISTS (SELECT 1 FROM claim_verdicts v
                    WHERE v.memory_id = c.memory_id AND v.namespace = c.namespace
                      AND v.observed_at > least(%(observed_at)s::timestamptz, now()));

-- name: drift_near_duplicates
-- Pairs of live memories of one namespace, close in meaning (cosine distance below %(close)s)
-- but not the same text, among each namespace's %(window)s newest memories with a vector of the
-- current model: two records of one thing that may have drifted apart.
WITH recent AS (
    SELECT m.namespace, m.id, m.seq, m.kind, m.title, m.content_hash, e.embedding
      FROM (SELECT l.namespace, l.id, l.seq, l.kind, l.title, l.content_hash,
                   l.current_revision, l.quarantined,
                   row_number() OVER (PARTITION BY l.namespace ORDER BY l.seq DESC) AS n
              FROM live_memories l
             WHERE (%(namespaces)s::text[] IS NULL OR l.namespace = ANY (%(namespaces)s::text[]))
               AND NOT l.quarantined) m
      JOIN memory_embeddings e
        ON e.memory_id = m.id AND e.revision = m.current_revision AND e.model = %(model)s
       AND e.namespace = m.namespace
     WHERE m.n <= %(window)s
)
SELECT a.namespace, a.id AS older_id, b.id AS newer_id, a.title AS older_title,
       b.title AS newer_title, (a.embedding <=> b.embedding)::float8 AS distance
  FROM recent a
  JOIN recent b ON b.namespace = a.namespace AND b.seq > a.seq
 WHERE a.content_hash <> b.content_hash
   AND (a.embedding <=> b.embedding) < %(close)s
 ORDER BY distance, b.seq DESC
 LIMIT %(limit)s;

-- name: drift_same_title
-- Without vectors: live memories of one namespace with the same title (ignoring case and
-- spacing) and different text.
SELECT a.namespace, a.id AS older_id, b.id AS newer_id, a.title AS older_title,
       b.title AS newer_title, NULL::float8 AS distance
  FROM live_memories a
  JOIN live_memories b ON b.namespace = a.namespace AND b.seq > a.seq
 WHERE (%(namespaces)s::text[] IS NULL OR a.namespace = ANY (%(namespaces)s::text[]))
   AND a.title IS NOT NULL AND NOT a.quarantined AND NOT b.quarantined
   AND lower(regexp_replace(a.title, '\s+', ' ', 'g'))
       = lower(regexp_replace(b.title, '\s+', ' ', 'g'))
   AND a.content_hash <> b.content_hash
 ORDER BY b.seq DESC
 LIMIT %(limit)s;

-- name: drift_stale_claims
-- From the claims, not the memories: only memories with a claim pay for their verdict's lookup.
SELECT m.namespace, m.id, m.title, memhub_claim_state(c.namespace, c.memory_id) AS claim
  FROM memory_claims c
  JOIN live_memories m ON m.id = c.memory_id AND m.namespace = c.namespace
 WHERE (%(namespaces)s::text[] IS NULL OR c.namespace = ANY (%(namespaces)s::text[]))
   AND memhub_claim_state(c.namespace, c.memory_id) ->> 'verdict' = 'stale'
 ORDER BY m.seq DESC
 LIMIT %(limit)s;

-- name: drift_contradictions
-- A live DECISION, CONVENTION or FACT and a newer live DECISION of the same namespace on the
-- same topic (a shared tag), both still ACTIVE: the newer decision may have replaced the older
-- memory without superseding it. Among each namespace's %(window)s newest tagged memories, as
-- the near-duplicates: a pairwise join over a whole namespace would grow with its square.
WITH recent AS (
    SELECT t.namespace, t.id, t.seq, t.kind, t.title, t.tags
      FROM (SELECT l.namespace, l.id, l.seq, l.kind, l.title, l.tags,
                   row_number() OVER (PARTITION BY l.namespace ORDER BY l.seq DESC) AS n
              FROM live_memories l
             WHERE (%(namespaces)s::text[] IS NULL OR l.namespace = ANY (%(namespaces)s::text[]))
               AND NOT l.quarantined AND cardinality(l.tags) > 0
               AND l.kind IN ('DECISION', 'CONVENTION', 'FACT')) t
     WHERE t.n <= %(window)s
)
SELECT o.namespace, o.id AS older_id, d.id AS decision_id, o.kind AS older_kind,
       o.title AS older_title, d.title AS decision_title,
       ARRAY(SELECT unnest(o.tags) INTERSECT SELECT unnest(d.tags) ORDER BY 1) AS shared_tags
  FROM recent d
  JOIN recent o ON o.namespace = d.namespace AND o.seq < d.seq
 WHERE d.kind = 'DECISION'
   AND o.tags && d.tags
 ORDER BY d.seq DESC, o.seq DESC
 LIMIT %(limit)s;
