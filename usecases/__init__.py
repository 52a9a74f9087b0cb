"""The use cases behind the tools: what spans several storage calls or an outside service, so a
tool stays an adapter (it parses, authorizes, makes one call here and shapes the answer).
`bootstrap.py` (session_bootstrap's steps), `reconcile.py` (claims checked against GitHub),
`writes.py` (memory writes: the intent gate's preview, the write, pacing); `curator/` is the
same kind of package for coord_curate."""
