"""Storage boundary: the `StorageBackend` ABC and its PostgreSQL implementation."""
