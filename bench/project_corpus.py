"""A generated corpus that reads like one project's notes, for bench/cost.py.

A real project's memories keep naming the same few dozen components, technologies and topics
("the billing service", "Redis", "connection pool"), so a short query's words are each in
thousands of notes. bench/search.py's generator gives every note a unique identifier and
ticket, and its queries a number matching nothing: its lexical leg always has a rare word to
start from. Here the words repeat as they do in practice: a few notes carry a ticket or a
figure, and the queries are short keyword lookups and natural questions built from the same
vocabulary. Deterministic for a seed.
"""

from __future__ import annotations

import random

COMPONENTS = [
    "billing service", "auth service", "API gateway", "search indexer", "job scheduler",
    "notification service", "admin dashboard", "mobile app", "web frontend", "data pipeline",
    "payments worker", "user service", "reporting service", "audit log", "feature flags",
    "rate limiter", "session store", "webhook dispatcher", "export worker", "import worker",
    "CI pipeline", "deploy tooling", "metrics exporter", "config service", "file uploads",
    "email sender", "cache layer", "migration runner", "Python SDK", "CLI",
]
TECH = [
    "PostgreSQL", "Redis", "Kafka", "S3", "Kubernetes", "Terraform", "nginx", "gRPC",
    "GraphQL", "FastAPI", "React", "TypeScript", "Go", "Celery", "Docker", "Helm",
    "GitHub Actions", "Sentry", "Prometheus", "Grafana", "OpenTelemetry", "pgbouncer",
    "Elasticsearch", "RabbitMQ", "Stripe",
]
# topic -> phrases a note about it uses
TOPICS = {
    "connection pool": ["connection pool", "pool size", "pool exhaustion", "idle connections"],
    "retries": ["retries", "exponential backoff", "retry budget", "jitter"],
    "timeouts": ["timeouts", "request timeout", "statement timeout", "deadline"],
    "caching": ["cache invalidation", "TTL", "cache hit rate", "eviction"],
    "migrations": ["schema migration", "table lock", "backfill", "rollback script"],
    "rate limiting": ["rate limit", "token bucket", "429 responses", "burst limit"],
    "authentication": ["JWT", "refresh token", "session cookie", "token expiry"],
    "logging": ["structured logs", "log level", "request id", "log sampling"],
    "alerting": ["alert", "on-call page", "error budget", "SLO"],
    "deploys": ["canary deploy", "rollback", "blue-green deploy", "release freeze"],
    "testing": ["flaky test", "integration test", "test fixtures", "load test"],
    "memory": ["memory leak", "OOM kill", "heap size", "memory limit"],
    "latency": ["p99 latency", "slow query", "N+1 queries", "query plan"],
    "pagination": ["cursor pagination", "page size", "offset pagination", "sort order"],
    "idempotency": ["idempotency key", "duplicate events", "exactly-once", "dedup window"],
    "queues": ["queue backlog", "consumer lag", "dead letter queue", "batch size"],
    "secrets": ["secret rotation", "API key", "Vault", "environment variables"],
    "errors": ["error handling", "500 errors", "panic", "stack trace"],
    "configuration": ["config flag", "default value", "environment override", "feature toggle"],
    "webhooks": ["webhook signature", "webhook retries", "delivery receipts", "callback URL"],
}
REASONS = [
    "it was already in the stack", "the old approach fell over under load",
    "it keeps the on-call load down", "the team knows it well", "it is cheaper to run",
    "it makes local development simpler", "it gives us better visibility",
    "the vendor limit kept biting us",
]
SYMPTOMS = [
    "requests hang", "latency spikes", "workers crash", "jobs run twice", "errors pile up",
    "the dashboard shows stale data", "deploys stall", "memory keeps growing",
]
CONDITIONS = [
    "traffic peaks on Monday mornings", "a node is drained", "the nightly batch runs",
    "a tenant imports a large file", "the primary fails over", "a deploy overlaps a backup",
]
ACTIONS = [
    "set an explicit timeout", "add a request id to every log line", "bump the pool size",
    "pin the client version", "add a retry with backoff", "write a migration test",
    "check the feature flag", "update the runbook", "add an alert", "drain the queue",
]
KINDS = ("DECISION", "FACT", "CONVENTION", "NOTE", "TODO")


def _topic(rng: random.Random) -> tuple[str, str]:
    topic = rng.choice(list(TOPICS))
    return topic, rng.choice(TOPICS[topic])


def note(i: int, rng: random.Random) -> dict:
    """The `i`-th note: {title, content, kind, tags}."""
    comp, tech = rng.choice(COMPONENTS), rng.choice(TECH)
    topic, phrase = _topic(rng)
    kind = KINDS[i % len(KINDS)]
    if kind == "DECISION":
        content = (f"We decided to use {tech} for {phrase} in the {comp} because "
                   f"{rng.choice(REASONS)}.")
        title = f"{comp}: {tech} for {topic}"
    elif kind == "FACT":
        other, other_phrase = _topic(rng)
        content = (f"The {comp} talks to {tech} and relies on {phrase}; "
                   f"{other_phrase} is handled by the {rng.choice(COMPONENTS)}.")
        title = f"{comp} and {tech}"
    elif kind == "CONVENTION":
        content = (f"In the {comp}, always {rng.choice(ACTIONS)} before changing {phrase}. "
                   f"The same goes for {tech} settings.")
        title = f"{comp} {topic} convention"
    elif kind == "NOTE":
        content = (f"{comp}: {rng.choice(SYMPTOMS)} when {rng.choice(CONDITIONS)}; the cause "
                   f"was {phrase} in {tech}. Fixed by: {rng.choice(ACTIONS)}.")
        title = f"{comp} incident: {topic}"
    else:
        content = (f"TODO: {rng.choice(ACTIONS)} in the {comp} ({tech}); {phrase} is still "
                   f"not covered.")
        title = f"{comp}: {topic} follow-up"
    # Some notes carry a reference or a figure, as real ones do; most only the vocabulary.
    extra = rng.random()
    if extra < 0.25:
        content += f" See PR #{rng.randint(100, 9999)}."
    elif extra < 0.40:
        content += f" Measured {rng.randint(2, 900)} ms at p99."
    return {"title": title, "content": content, "kind": kind,
            "tags": [topic.replace(" ", "-"), tech.lower().replace(" ", "-")]}


def notes(start: int, stop: int, rng: random.Random, seen: set[str]):
    """Notes start..stop, each content distinct from those in `seen` (which it extends): two
    notes drawn alike get the later one's number appended, as memhub keeps one live memory
    per content and a bulk load must not trip on that."""
    for i in range(start, stop):
        item = note(i, rng)
        if item["content"] in seen:
            item["content"] += f" (#{i})"
        seen.add(item["content"])
        yield item


QUESTIONS = [
    "how do we handle {phrase} in the {comp}?",
    "why did we choose {tech} for the {comp}?",
    "what is the {phrase} for {tech}?",
    "what breaks when {condition}?",
    "which service deals with {phrase}?",
    "what should I do before changing {phrase} in the {comp}?",
]


def queries(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """`n` distinct (kind, text) queries, half short keyword lookups ("connection pool",
    "Redis", "billing service retries"), half natural questions, interleaved."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(out) < n:
        comp, tech = rng.choice(COMPONENTS), rng.choice(TECH)
        topic, phrase = _topic(rng)
        if len(out) % 2 == 0:
            text = rng.choice([phrase, tech, topic, f"{comp} {phrase}", f"{tech} {phrase}",
                               f"{comp} {tech}"])
            kind = "keyword"
        else:
            text = rng.choice(QUESTIONS).format(phrase=phrase, comp=comp, tech=tech,
                                                condition=rng.choice(CONDITIONS))
            kind = "question"
        if text not in seen or len(seen) > 2000:
            seen.add(text)
            out.append((kind, text))
    return out
