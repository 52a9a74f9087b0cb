"""GitHub, the outside service claims are checked against: its REST API (github/client.py)
and its webhook deliveries (github/webhook.py). Reached only through MEMHUB_GITHUB_API_URL."""
