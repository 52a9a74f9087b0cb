"""Operator surfaces: the /admin dashboard and the memhub-admin CLI."""
