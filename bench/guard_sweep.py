#!/usr/bin/env python3
"""The retrieval guard's trade-off: recall's `kept` against its `abstain` for each similarity
floor and agreement the guard could use, with the calling model's phrasings.

    .venv/bin/python -m bench.guard_sweep [--out PATH]

The evaluation set loaded as `bench.eval_retrieval` loads it (bench/eval_set.py), then for each
(SEMANTIC_FLOOR, AGREEMENT) of the grid below, every question of `bench.eval_recall` through the
backend's own `search` and `recall` (`_side`), with phrasings (`also`) and with phrasings and
stored questions (`also+questions`). The guard's other values stay as shipped. It answers one
question: is there a setting that keeps >= 95% of the answers search finds and abstains on >=
75% of the unanswerable questions, on the `tune` split and on the `holdout` one?
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bench.common import default_out, machine, provenance, write_result
from bench.eval_recall import TARGET_ABSTAIN, TARGET_KEPT, _side
from bench.eval_set import embedded_eval_env, load_phrasings
from memhub.storage import retrieval_guard as guard

FLOORS = (0.45, 0.50, 0.535, 0.57, 0.60, 0.65)
AGREEMENTS = (1, 2, 3)
AIDS = ("also", "also+questions")


async def sweep() -> list[dict[str, Any]]:
    phrasings = load_phrasings()
    shipped = (guard.SEMANTIC_FLOOR, guard.AGREEMENT)
    rows: list[dict[str, Any]] = []
    async with embedded_eval_env("memhub-guard-sweep-") as (env, _settings):
        try:
            for floor in FLOORS:
                for agreement in AGREEMENTS:
                    guard.SEMANTIC_FLOOR, guard.AGREEMENT = floor, agreement
                    for aid in AIDS:
                        side_env = env.questioned if "questions" in aid else env
                        side = await _side(side_env, phrasings)
                        rows.append({
                            "floor": floor, "agreement": agreement, "aid": aid,
                            "kept": side["kept"], "abstain_all": side["abstain_all"],
                            **{f"abstain_{g}": v for g, v in side["abstain"].items()},
                            "meets_both": (side["kept"] >= TARGET_KEPT
                                           and side["abstain_all"] >= TARGET_ABSTAIN),
                        })
                        print(rows[-1], flush=True)
        finally:
            guard.SEMANTIC_FLOOR, guard.AGREEMENT = shipped
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = asyncio.run(sweep())
    report = {"provenance": provenance(), "machine": machine(),
              "shipped": {"floor": guard.SEMANTIC_FLOOR, "agreement": guard.AGREEMENT},
              "targets": {"kept": TARGET_KEPT, "abstain": TARGET_ABSTAIN}, "rows": rows}
    print("wrote", write_result(args.out or default_out("guard-sweep"), report))


if __name__ == "__main__":
    main()
