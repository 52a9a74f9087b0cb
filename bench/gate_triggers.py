#!/usr/bin/env python3
"""What evaluating a namespace's skill triggers costs one intent_open (storage/gate_input.py).

    .venv/bin/python -m bench.gate_triggers [--out PATH]

Every intent_open evaluates every trigger of the namespace, in the event loop. For several
rule shapes, each grown to the largest trigger a skill may have, this times (in CPU time) one
evaluation over a 2,000-character intent and reports microseconds per byte of trigger (bytes
as PostgreSQL prints the jsonb, which is what the namespace's limit counts). Then it times
`select_guidance` over a namespace filled to the limits (SKILLS_MAX skills, TRIGGERS_BYTES_MAX
bytes) with the costliest shape: the most work one intent_open does. No database: the cost is
Python's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from bench.common import default_out, machine, provenance, summary_ms, write_result
from memhub.storage.gate_input import (
    SKILLS_MAX,
    TRIGGER_BYTES_MAX,
    TRIGGERS_BYTES_MAX,
    check_trigger,
    evaluate,
    select_guidance,
)

INTENT = {"kind": "deploy", "tags": ["prod", "api"],
          "text": ("roll out the billing API to production after the migration " * 40)[:2000]}
SHAPES: dict[str, Callable[[int], dict[str, Any]]] = {
    "not": lambda n: {"and": [{"!": 0}] * n},
    "var": lambda n: {"and": [{"var": "kind"}] * n},
    "equals": lambda n: {"and": [{"==": [{"var": "kind"}, "deploy"]}] * n},
    "in_tags": lambda n: {"and": [{"in": ["api", {"var": "tags"}]}] * n},
    "contains_text": lambda n: {"or": [{"contains": [{"var": "text"}, f"absent-{i:03d}"]}
                                       for i in range(n)]},
}


def pg_bytes(rule: dict[str, Any]) -> int:
    """The size PostgreSQL's jsonb output gives the rule (", " and ": " separators)."""
    return len(json.dumps(rule, separators=(", ", ": ")).encode())


def largest(shape: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    n = 1
    while len(json.dumps(shape(n + 1), sort_keys=True).encode()) <= TRIGGER_BYTES_MAX:
        n += 1
    return check_trigger(shape(n))


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds of this thread's CPU time per run: the work, not the wait for a core on a
    shared machine."""
    out = []
    for _ in range(runs):
        start = time.thread_time()
        fn()
        out.append((time.thread_time() - start) * 1000)
    return out


def measure() -> dict[str, object]:
    shapes = {}
    for name, shape in SHAPES.items():
        rule = largest(shape)
        ms = summary_ms(timed(lambda rule=rule: evaluate(rule, INTENT), 200))
        shapes[name] = {"bytes": pg_bytes(rule), "ms": ms,
                        "us_per_byte": round(ms["p50"] * 1000 / pg_bytes(rule), 3)}
        print(name, shapes[name], flush=True)
    worst = max(shapes, key=lambda k: float(shapes[k]["us_per_byte"]))
    rule = largest(SHAPES[worst])
    count = min(SKILLS_MAX, TRIGGERS_BYTES_MAX // pg_bytes(rule))
    skills = [{"name": f"s{i:03d}", "version": 1, "guidance": "g", "trigger": rule}
              for i in range(count)]
    call = summary_ms(timed(lambda: select_guidance(skills, INTENT), 50))
    print("full namespace", worst, count, call, flush=True)
    return {"machine": machine(), **provenance(), "intent_text_chars": len(INTENT["text"]),
            "shapes": shapes, "worst_shape": worst,
            "full_namespace": {"skills": count, "trigger_bytes": count * pg_bytes(rule),
                               "limit_bytes": TRIGGERS_BYTES_MAX, "select_guidance_ms": call}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    path = write_result(args.out or default_out("gate-triggers"), measure())
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
