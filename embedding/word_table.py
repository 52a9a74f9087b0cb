"""The word-embedding table both models read, in memory only for the tokens they have seen.

Why: MiniLM's table is 30,522 tokens x 384 floats (47 MB) and a text reads a few dozen of its
rows. Mapped from its file, each row read made the 64 KiB around it resident (the kernel's
fault-around, which madvise does not turn off): after bench.cost's 10,000 notes and 1,000
searches ~30 MiB of the table was resident, against ~5 MiB of rows here (peak RSS 292 -> 269
MiB, docs/performance.md). Here the table is a private anonymous mapping of its size, whose pages
cost nothing until written; before a run, the rows of its `input_ids` not yet present are read
from the .npy file into it, once each, so a token costs at most the two 4 KiB pages its row
spans. onnxruntime reads the buffer in place (an initializer over caller memory), so the vectors
are the same bits as with the table read whole.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy


class WordTable:
    """The initializer `name` of the .npy table at `path`, filled row by row (`fill`)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        fd = os.open(path, os.O_RDONLY)  # held: the rows stay readable if the file is replaced
        weakref.finalize(self, os.close, fd)
        self._fd = fd
        with open(fd, "rb", closefd=False) as fh:
            version = npy.read_magic(fh)
            read_header = (npy.read_array_header_1_0 if version == (1, 0)
                           else npy.read_array_header_2_0)
            shape, fortran_order, dtype = read_header(fh)
            self._offset = fh.tell()
        if fortran_order or len(shape) != 2:
            raise ValueError(f"{path.name}: not a C-ordered 2-D table")
        self._row_bytes = shape[1] * dtype.itemsize
        size = max(1, shape[0] * self._row_bytes)
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            # A transparent huge page would make one row's write resident as 2 MiB.
            buffer.madvise(mmap.MADV_NOHUGEPAGE)
        self.array = np.frombuffer(buffer, dtype=dtype, count=shape[0] * shape[1]).reshape(shape)
        self._present = np.zeros(shape[0], dtype=bool)
        self._lock = threading.Lock()
        self.ortvalue: Any = None  # the OrtValue over `array`, made by `for_sessions`

    def for_sessions(self) -> Any:
        """The OrtValue to hand to onnxruntime as the initializer (one per table)."""
        if self.ortvalue is None:
            import onnxruntime as ort

            self.ortvalue = ort.OrtValue.ortvalue_from_numpy(self.array)
        return self.ortvalue

    @property
    def rows_present(self) -> int:
        return int(self._present.sum())

    def fill(self, ids: Any) -> None:
        """Read into the table the rows of `ids` (token ids, any shape) not yet present.
        Ids outside the table are left to the model to refuse."""
        wanted = np.unique(np.asarray(ids))
        wanted = wanted[(wanted >= 0) & (wanted < len(self._present))]
        missing = wanted[~self._present[wanted]]
        if not missing.size:
            return
        with self._lock:  # the two models' sessions run on different threads
            missing = missing[~self._present[missing]]
            if not missing.size:
                return
            # Consecutive ids in one read each.
            for run in np.split(missing, np.flatnonzero(np.diff(missing) != 1) + 1):
                first, count = int(run[0]), len(run)
                size = count * self._row_bytes
                data = os.pread(self._fd, size, self._offset + first * self._row_bytes)
                if len(data) != size:
                    raise OSError(f"word table: short read at row {first}")
                self.array[first:first + count] = np.frombuffer(
                    data, dtype=self.array.dtype).reshape(count, -1)
            # Marked only once written: a reader that sees the flag sees the row.
            self._present[missing] = True


class FillingSession:
    """An onnxruntime session whose runs first fill `table`'s rows for their `input_ids` (when
    it has one) and run with `run_options` unless given others; everything else is the
    session's own."""

    def __init__(self, session: Any, table: WordTable | None, run_options: Any = None) -> None:
        self._session = session
        self._table = table
        self._run_options = run_options

    def run(self, output_names: Any, input_feed: dict[str, Any], run_options: Any = None):
        ids = input_feed.get("input_ids")
        if ids is not None and self._table is not None:
            self._table.fill(ids)
        return self._session.run(output_names, input_feed, run_options or self._run_options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)
