"""GitHub, the outside service claims are checked against: a low-level client of its REST API
(github/client.py), reached only through MEMHUB_GITHUB_API_URL. What uses it lives elsewhere:
the claim checks in usecases/reconcile.py, the webhook route in gateway/github_webhook.py."""
