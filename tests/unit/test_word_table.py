"""The word-embedding table is in memory only for the rows of the tokens read, each read from
its file before the run that needs it (embedding/word_table.py). No model, no database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memhub.embedding.word_table import FillingSession, WordTable

PAGE_KIB = 4
ROWS, WIDTH = 4096, 384  # a 6 MiB table of 1.5 KiB rows, as MiniLM's


@pytest.fixture
def table_file(tmp_path) -> tuple[Path, np.ndarray]:
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH)).astype(np.float32)
    path = tmp_path / "word-embeddings.npy"
    np.save(path, values)
    return path, values


def _resident_kib(array: np.ndarray) -> int:
    """Resident KiB of the mapping of this process that holds `array`."""
    address, counting, total = array.ctypes.data, False, 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            counting = start <= address < end
        elif counting and head[0] == "Rss:":
            total += int(head[1])
    return total


def test_the_filled_rows_are_the_files_and_the_others_never_read(table_file):
    path, values = table_file
    table = WordTable("embeddings", path)
    ids = np.array([[5, 6, 7, 4000], [7, 12, 0, 0]])
    table.fill(ids)
    filled = np.unique(ids)
    assert np.array_equal(table.array[filled], values[filled])
    others = np.setdiff1d(np.arange(ROWS), filled)
    assert not table.array[others].any()
    assert table.rows_present == len(filled)


def test_a_row_costs_at_most_the_two_pages_it_spans(table_file):
    path, _ = table_file
    table = WordTable("embeddings", path)
    assert _resident_kib(table.array) == 0
    scattered = np.arange(0, ROWS, 64)  # 64 rows, 96 KiB apart
    table.fill(scattered)
    assert 0 < _resident_kib(table.array) <= 2 * PAGE_KIB * len(scattered)
    table.fill(scattered)  # present rows are not read again
    assert table.rows_present == len(scattered)


def test_ids_outside_the_table_are_left_to_the_model(table_file):
    path, _ = table_file
    table = WordTable("embeddings", path)
    table.fill(np.array([-1, ROWS, ROWS + 10, 3]))
    assert table.rows_present == 1


def test_a_session_run_finds_its_tokens_rows_present(table_file):
    path, values = table_file
    table = WordTable("embeddings", path)
    seen: list[np.ndarray] = []

    class Session:
        def run(self, output_names, feed, run_options=None):
            seen.append(table.array[feed["input_ids"]].copy())
            return ["out"]

        def get_inputs(self):
            return ["input_ids"]

    session = FillingSession(Session(), table)
    ids = np.array([[101, 2054, 102]])
    assert session.run(None, {"input_ids": ids}) == ["out"]
    assert np.array_equal(seen[0], values[ids])
    assert session.get_inputs() == ["input_ids"]  # the rest is the session's own
