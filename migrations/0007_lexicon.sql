-- Word statistics per namespace, for the lexical leg's BM25 ranking (storage/postgres/lexicon.py).
--
-- ts_rank and ts_rank_cd know nothing of the corpus: a memory matching "cache" and "policy" ties
-- with one matching "redis" and "eviction", though the second pair is what the query is about.
-- BM25 weights each word by its inverse document frequency, which needs the number of live
-- memories containing it. Counting that per search would read every posting of every common
-- word, so the counts are kept here, refreshed in the background when a namespace has grown
-- (storage/postgres/lexicon.py). They are per namespace, never shared: another tenant's vocabulary must
-- not move this tenant's ranking. Stale counts only shift weights; which memories may be
-- returned is decided by stage 0 at query time, never by this table.

CREATE TABLE lexicon_state (
    namespace    text PRIMARY KEY,
    docs         integer NOT NULL CHECK (docs >= 0),
    avg_length   float8 NOT NULL CHECK (avg_length >= 0),  -- lexemes per search_tsv
    max_seq      bigint NOT NULL,   -- newest live memory counted: later writes make it stale
    refreshed_at timestamptz NOT NULL DEFAULT now()
);

-- Only words in at least two memories are stored: a missing word counts as in one (rare), which
-- is also right for a word first written after the last refresh.
CREATE TABLE lexicon_words (
    namespace text NOT NULL,
    lexeme    text NOT NULL,
    ndoc      integer NOT NULL CHECK (ndoc > 1),
    PRIMARY KEY (namespace, lexeme)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['lexicon_state', 'lexicon_words']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (memhub_ns_visible(namespace))'
                       ' WITH CHECK (memhub_ns_visible(namespace))', t);
    END LOOP;
END
$$;

-- Recount one namespace from its live memories. Returns the number of memories counted, or -1
-- when another session is recounting it right now (two memhub processes on one database).
-- Runs as the caller, so row-level security scopes every statement, ts_stat's query included.
CREATE FUNCTION memhub_refresh_lexicon(p_namespace text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_docs integer;
    v_avg float8;
    v_seq bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_lexicon'), hashtext(p_namespace)) THEN
        RETURN -1;
    END IF;
    -- Read first: a memory committed while this runs has a larger seq and triggers the next.
    SELECT coalesce(max(seq), 0) INTO v_seq
      FROM memories WHERE namespace = p_namespace AND status = 'ACTIVE';
    SELECT count(*), coalesce(avg(length(search_tsv)), 0) INTO v_docs, v_avg
      FROM live_memories WHERE namespace = p_namespace AND NOT quarantined;
    DELETE FROM lexicon_words WHERE namespace = p_namespace;
    INSERT INTO lexicon_words (namespace, lexeme, ndoc)
    SELECT p_namespace, s.word, s.ndoc
      FROM ts_stat(format('SELECT search_tsv FROM live_memories WHERE namespace = %L'
                          ' AND NOT quarantined', p_namespace)) AS s
     WHERE s.ndoc > 1;
    INSERT INTO lexicon_state (namespace, docs, avg_length, max_seq, refreshed_at)
    VALUES (p_namespace, v_docs, v_avg, v_seq, now())
    ON CONFLICT (namespace) DO UPDATE
       SET docs = EXCLUDED.docs, avg_length = EXCLUDED.avg_length,
           max_seq = EXCLUDED.max_seq, refreshed_at = EXCLUDED.refreshed_at;
    RETURN v_docs;
END
$$;

-- The lexemes of each query word (memhub_query_terms gives each word as a tsquery, e.g.
-- 'jwt' | 'jwts'), so a memory's term frequency can be read from its tsvector.
CREATE FUNCTION memhub_tsquery_lexemes(t tsquery) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT replace(m[1], '''''', '''')), '{}')
      FROM regexp_matches(t::text, '''((?:[^'']|'''')*)''', 'g') AS m
$$;

-- The coverage levels (0006) stop at the leg's depth, usually tens of rows: planned as the
-- default thousand, their join to memories became a hash join over the whole namespace.
ALTER FUNCTION memhub_lexical_candidates(text, tsquery[], tsquery[], int[], int, int, text[],
                                         text[]) ROWS 100;
