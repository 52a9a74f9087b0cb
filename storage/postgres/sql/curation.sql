-- The curator (storage/postgres/work/curation.py, curator/apply.py). Every statement names the
-- namespace; row-level security confines it too.

-- name: curated_from_session
-- Memories an earlier curation of the session wrote or revised: origin 'curated' and the
-- session among their sources. Any status: a curated memory superseded since still shows the
-- session was curated. A scan of the namespace's curated rows; curation is rare and on demand.
SELECT id, status, kind
  FROM memories
 WHERE namespace = %(namespace)s
   AND origin = 'curated'
   AND derived_from @> jsonb_build_array(jsonb_build_object('type', 'session',
                                                            'id', %(session_id)s::text))
 ORDER BY created_at, id
 LIMIT %(limit)s;
