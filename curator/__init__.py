"""The curator behind `coord_curate` (docs/curator.md): a closed session's events and the
memories similar to them go to a model over the Anthropic Messages API (curator/client.py);
its answer is validated against a strict schema (curator/operations.py), screened for secrets
and personal data (curator/screen.py) and applied through the normal write paths
(curator/apply.py). The same client serves the intent gate's tier 2 (curator/review.py): the
model's concerns about a previewed supersede or forget. Reached only through
MEMHUB_ANTHROPIC_BASE_URL."""
