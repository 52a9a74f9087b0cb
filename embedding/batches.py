"""How the memories' model is called on a batch of texts: in calls bounded by texts and by
padded tokens (DOC_BATCH and DOC_BATCH_TOKENS, below), so a backlog of long
memories never runs one call whose activations outgrow the bound."""

from __future__ import annotations

from typing import Any

# Texts per model call within a document batch (see Embedder.embed_documents): 4 costs no
# more CPU per text than 16 on short notes, where padding already makes larger batches no
# cheaper (docs/performance.md).
DOC_BATCH = 4
# ... and at most this many tokens per call, counted as the model pads them (texts x the
# longest): a run's activations grow with its tokens (4 texts of 256 tokens took +139 MiB of
# arena, 1 of 256 +62), and the memories' runs give them back when they end
# (embedding/sessions.py, ARENA_SHRINK), so this bounds the peak a backlog of long memories
# can reach, whatever its count (docs/performance.md, "Memory in every load pattern"). A text
# longer than this (up to MEMHUB_EMBED_MAX_TOKENS) runs alone.
DOC_BATCH_TOKENS = 256


def token_counts(model: Any, texts: list[str]) -> list[int]:
    """Each text's tokens as the model will read them (truncated at MEMHUB_EMBED_MAX_TOKENS),
    from fastembed's tokenizer; without one, a bound from the characters (a WordPiece token
    holds at least one character, plus the two markers)."""
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    if tokenizer is None or not texts:
        return [len(text) + 2 for text in texts]
    return [int(sum(encoding.attention_mask)) for encoding in tokenizer.encode_batch(texts)]


def token_batches(lengths: list[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """The indexes of texts of `lengths` tokens, shortest first, cut into calls of at most
    `max_texts` texts whose padded size (texts x the longest) is at most `max_tokens`; a text
    longer than `max_tokens` alone."""
    calls: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        # Shortest first, so the text being added is the call's longest.
        if current and (len(current) >= max_texts
                        or (len(current) + 1) * lengths[i] > max_tokens):
            calls.append(current)
            current = []
        current.append(i)
    if current:
        calls.append(current)
    return calls
