-- Retrieval: how a query becomes lexical terms, and the embedding queue's wake-up signal.
-- The stored tsvector (0002) already holds both 'english' stems and 'simple' words, so a term
-- can match either spelling; these functions build the query side to match.

-- OR of tsqueries (the aggregate form of `||`), to combine per-word queries.
CREATE AGGREGATE memhub_tsquery_or(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);

-- Spellings a query word may have in stored text. Stemming alone misses identifiers:
-- Snowball leaves "JWTs" alone (no vowel before the s), and "SSO'd" parses to 'sso' <-> 'd'.
-- So a word also matches its contraction-stripped form ("SSO'd" -> SSO), its acronym singular
-- ("JWTs" -> JWT) and its acronym plural ("JWT" -> JWTs).
CREATE FUNCTION memhub_word_variants(w text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_remove(ARRAY[
        w,
        nullif(b, w),
        nullif(regexp_replace(b, '(?<=[A-Z0-9]{2})s$', ''), b),
        CASE WHEN b ~ '^[A-Z][A-Z0-9]+$' THEN b || 's' END
    ], NULL)
      FROM (SELECT regexp_replace(w, '[''’](s|d|ll|re|ve|t|m)$', '', 'i') AS b) v
$$;

-- One tsquery per meaningful word of `q` (a whitespace-separated chunk, so an identifier such as
-- PAYSTREAM_WEBHOOK_SECRET or PS-4021 stays one phrase), each the OR of its variants under both
-- configurations. Words that are only English stopwords are dropped: they carry no topic.
-- The lexical leg ranks by how many of these a memory matches, then by ts_rank_cd.
CREATE FUNCTION memhub_query_terms(q text) RETURNS tsquery[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(t ORDER BY first_ord), '{}')
      FROM (
        SELECT min(ord) AS first_ord, t
          FROM (
            SELECT s.ord,
                   (SELECT memhub_tsquery_or(
                               phraseto_tsquery('english', v) || phraseto_tsquery('simple', v))
                      FROM unnest(memhub_word_variants(s.w)) AS v) AS t
              FROM regexp_split_to_table(left(q, 1000), '\s+') WITH ORDINALITY AS s(w, ord)
             WHERE numnode(phraseto_tsquery('english', s.w)) > 0
               AND s.ord <= 64
          ) per_word
         WHERE numnode(t) > 0
         GROUP BY t
      ) uniq
$$;

-- Wake the embedding worker when a job is committed (NOTIFY is delivered at COMMIT, so the
-- worker never looks for a job before it is visible). Polling remains the fallback.
CREATE FUNCTION memhub_embedding_jobs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memhub_embedding_jobs', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER embedding_jobs_notify
    AFTER INSERT ON embedding_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_embedding_jobs_notify();

-- The re-embed scan (model changed, vector missing) looks vectors up by memory and model.
CREATE INDEX memory_embeddings_model ON memory_embeddings (model);
