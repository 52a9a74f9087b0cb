-- Listings read a namespace newest first (ORDER BY seq DESC LIMIT n). seq was unique across
-- the table (0002), and that index let the planner walk every namespace's memories from the
-- newest, skipping other namespaces' rows until it had n of this one: it assumes a namespace's
-- rows are spread evenly over seq, but each project's are clustered where it was written. A
-- namespace written before a larger one read all of the larger one on every memory_list: 71 ms
-- for 10k memories beside 100k, with or without a status filter. Unique within the namespace
-- is what keyset pagination needs (cursors are per namespace; the identity keeps seq unique
-- across the table anyway), and this index serves that order from the namespace's own rows.
ALTER TABLE memories DROP CONSTRAINT memories_seq_key;
ALTER TABLE memories ADD CONSTRAINT memories_namespace_seq_key UNIQUE (namespace, seq);
