#!/usr/bin/env python3
"""The eval corpus asked 48 questions written apart from the set (docs/eval/probe-questions.json).

    .venv/bin/python -m bench.eval_probe [--mode hybrid]

21 paraphrases of memories no eval query targets and 27 unanswerable questions on neighbouring
topics, not graded in CI: they check the eval set's abstain figure, which the gate was chosen on
(docs/retrieval.md, What a lexical hit proves). Prints, for the mode, how many paraphrases
have their memory in the top 10 (and their MRR@10) and how many unanswerable questions get
nothing. Needs MEMHUB_EMBED_MODEL_PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path

from bench import eval_set as ev

ROOT = Path(__file__).resolve().parents[1]

QUESTIONS = ROOT / "docs" / "eval" / "probe-questions.json"


async def probe(mode: str) -> dict[str, float]:
    questions = json.loads(QUESTIONS.read_text())
    async with ev.embedded_eval_env(prefix="memhub-probe-") as (env, _):
        async def refs(text: str) -> list[str]:
            found = await env.backend.search(ev.EVAL_PRINCIPAL, env.namespace, text,
                                             limit=10, mode=mode)
            return [env.ref_of.get(r["memory"]["id"], "?") for r in found["results"]]

        reciprocal = []
        for text, wanted in questions["paraphrase"]:
            got = await refs(text)
            reciprocal.append(next((1 / (i + 1) for i, ref in enumerate(got)
                                    if ref in wanted), 0.0))
        empty = [not await refs(text) for text in questions["unanswerable"]]
    return {"paraphrases_found": sum(1 for r in reciprocal if r > 0),
            "paraphrases": len(reciprocal),
            "paraphrase_mrr@10": round(statistics.mean(reciprocal), 3),
            "abstained": sum(empty), "unanswerable": len(empty)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "lexical", "semantic"])
    print(json.dumps(asyncio.run(probe(parser.parse_args().mode))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
