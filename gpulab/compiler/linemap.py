"""The line map: Python lines <-> CUDA lines <-> PTX lines <-> SASS instructions.

Line info survives link-time optimisation (see FACTS.md): PTX ``.loc``
directives and ``nvdisasm -gi`` annotations name, for each instruction,
the source line it came from and the lines it was inlined at. Each is
turned into *keys*: ``py:N`` (line N of the Python pane) and ``cu:N``
(line N of ``kernel.cu``). Lines that share a key are one source line seen
at two stages.

A key names a row of its pane; everything else (tables, messages, the
analysis) names a Python line as its file or cell numbers it, the number
the Python pane prints beside it. :func:`python_row`, :func:`python_key` and
:func:`python_line` are the one conversion between the two.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from . import listing
from .nvrtc import KERNEL_FILENAME

_SASS_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:,.*inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
_PTX_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug")
PAIR = np.dtype("<i8")
"""How a cache entry stores a line map's integer pairs (a blob of little-endian int64 pairs)."""


def python_row(line: int, first_line: int) -> int:
    """The 0-based row of Python line ``line`` (as its file or cell numbers it) in a Python pane whose first
    line is ``first_line``."""
    return line - first_line


def python_key(line: int, first_line: int) -> str:
    """The key of Python line ``line`` (as its file or cell numbers it): ``py:N``, N its 1-based pane row."""
    return f"py:{python_row(line, first_line) + 1}"


def python_line(key: str, first_line: int) -> int:
    """The Python line (as its file or cell numbers it) of key ``py:N``: the inverse of :func:`python_key`."""
    return first_line + int(key[3:]) - 1


@dataclass
class Sources:
    """How to turn a file and line into a key.

    Attributes
    ----------
    python_file : str
        The user's file (as the code object names it).
    python_first_line : int
        The file line shown as line 1 of the Python pane.
    python_lines : int
        How many lines the Python pane has.
    """

    python_file: str
    python_first_line: int
    python_lines: int
    _keys: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def key(self, filename: str, line: int) -> str | None:
        """Return ``py:N``/``cu:N`` for a file line, or ``None`` for other files."""
        where = (filename, line)  # a listing names few distinct lines, each many times (inlined call chains)
        if where not in self._keys:
            self._keys[where] = self._key(filename, line)
        return self._keys[where]

    def python_line(self, key: str) -> int:
        """The Python line (as its file or cell numbers it) of this build's key ``py:N``."""
        return python_line(key, self.python_first_line)

    def _key(self, filename: str, line: int) -> str | None:
        if filename == self.python_file or filename.endswith("/" + self.python_file):  # numba may prefix a folder
            inside = 0 <= python_row(line, self.python_first_line) < self.python_lines
            return python_key(line, self.python_first_line) if inside else None
        if os.path.basename(filename) == KERNEL_FILENAME:
            return f"cu:{line}"
        return None


@dataclass
class LineMap:
    """Keys of each shown line of the PTX and SASS panes, and SASS offsets.

    Attributes
    ----------
    ptx : dict of int to tuple of str
        0-based line of the shown PTX -> keys.
    sass : dict of int to tuple of str
        0-based line of the shown SASS -> keys.
    sass_offsets : dict of int to int
        0-based line of the shown SASS -> instruction offset in its function.
    python_first_line : int
        File line of the Python pane's first line.
    """

    ptx: dict[int, tuple[str, ...]] = field(default_factory=dict)
    sass: dict[int, tuple[str, ...]] = field(default_factory=dict)
    sass_offsets: dict[int, int] = field(default_factory=dict)
    python_first_line: int = 1

    def python_to_sass(self, python_line: int) -> list[int]:
        """SASS instruction offsets that came from file line ``python_line`` of the function."""
        key = python_key(python_line, self.python_first_line)
        return sorted({self.sass_offsets[i] for i, keys in self.sass.items() if key in keys})

    def python_to_ptx(self, python_line: int) -> list[int]:
        """0-based lines of the shown PTX that came from file line ``python_line``."""
        key = python_key(python_line, self.python_first_line)
        return sorted(i for i, keys in self.ptx.items() if key in keys)

    def python_to_cuda(self, python_line: int) -> list[int]:
        """Lines of ``kernel.cu`` where file line ``python_line`` was inlined."""
        key = python_key(python_line, self.python_first_line)
        found = set()
        for keys in (*self.ptx.values(), *self.sass.values()):
            if key in keys:
                found.update(int(k[3:]) for k in keys if k.startswith("cu:"))
        return sorted(found)

    def python_lines(self) -> list[int]:
        """File lines of the function that reached the SASS."""
        keys = {k for keys in self.sass.values() for k in keys if k.startswith("py:")}
        return sorted(python_line(k, self.python_first_line) for k in keys)

    def links(self, python_text: str, cuda_text: str) -> dict[str, dict[str, list[str]]]:
        """Return the bundle's ``links``: keys of every line of each pane (see docs/bundle.md)."""
        inlined_at: dict[str, set] = {}  # py:N -> the cu:M keys it was inlined at
        for keys in (*self.ptx.values(), *self.sass.values()):
            for key in keys:
                if key.startswith("py:"):
                    inlined_at.setdefault(key, set()).update(k for k in keys if k.startswith("cu:"))
        return {
            "python": {str(i): [f"py:{i + 1}", *sorted(inlined_at.get(f"py:{i + 1}", ()))]
                       for i in range(len(python_text.splitlines()))},
            "cuda": {str(i): [f"cu:{i + 1}"] for i in range(len(cuda_text.splitlines()))},
            "ptx": {str(i): list(keys) for i, keys in self.ptx.items()},
            "sass": {str(i): list(keys) for i, keys in self.sass.items()},
        }


def _keys(sources: Sources, locations) -> tuple[str, ...]:
    keys = (sources.key(filename, int(line)) for filename, line in locations)
    return tuple(dict.fromkeys(k for k in keys if k))


def map_sass(raw: str, sources: Sources) -> tuple[str, dict, dict]:
    """Strip ``//##`` annotations from ``nvdisasm -gi`` output and key each instruction: the SASS to show, the
    keys of its lines and each line's instruction offset."""
    shown, keys_of, offsets = [], {}, {}
    for index, line, chain in listing.shown_lines(raw):
        instruction = _SASS_INSTRUCTION.match(line)
        if instruction:
            offsets[index] = int(instruction.group(1), 16)
            keys = _keys(sources, ((location.file, location.line) for location in chain))
            if keys:
                keys_of[index] = keys
        shown.append(line)
    return "\n".join(shown) + "\n", keys_of, offsets


def map_ptx(raw: str, sources: Sources) -> tuple[str, dict]:
    """Strip ``.loc`` lines and debug sections from PTX and key each instruction."""
    files = {number: name for number, name in (m.groups() for m in map(_PTX_FILE.match, raw.splitlines()) if m)}
    shown, keys_of = [], {}
    current: tuple[str, ...] = ()
    in_debug = False
    for line in raw.splitlines():
        if _PTX_DEBUG_SECTION.match(line):
            in_debug = True
        if in_debug:
            if line.strip() == "}":
                in_debug = False
            continue
        loc = _PTX_LOC.match(line)
        if loc:
            file_number, line_number, at_file, at_line = loc.groups()
            locations = [(files.get(file_number, ""), line_number)]
            if at_file:
                locations.append((files.get(at_file, ""), at_line))
            current = _keys(sources, locations)
            continue
        if _PTX_FILE.match(line):
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith(("//", ".", "{", "}", "$")) and current:
            keys_of[len(shown)] = current
        shown.append(line)
    return "\n".join(shown).rstrip() + "\n", keys_of


def key_table(keys: dict[int, tuple[str, ...]]) -> tuple[list[list[str]], bytes]:
    """A line map as its distinct key tuples (JSON) and its ``(line, row of the table)`` pairs (a blob).

    A map has one entry per PTX or SASS line but few distinct tuples, and a
    blob is not parsed, nested or walked when the entry is read: as JSON
    objects, the maps made three quarters of a disk hit's time.
    """
    rows: dict[tuple[str, ...], int] = {}
    pairs = [(line, rows.setdefault(found, len(rows))) for line, found in keys.items()]
    return [list(found) for found in rows], pairs_blob(pairs)


def key_map(table: list, blob: bytes) -> dict[int, tuple[str, ...]]:
    """Inverse of :func:`key_table`."""
    if not all(isinstance(found, list) for found in table):
        raise ValueError("a key table row is not a list")
    rows = [tuple(found) for found in table]
    lines, at = pairs(blob)
    if at.size and (at.min() < 0 or at.max() >= len(rows)):
        raise ValueError(f"a line map names a row outside its table of {len(rows)}")
    return dict(zip(lines.tolist(), map(rows.__getitem__, at.tolist())))


def pairs_blob(pairs) -> bytes:
    return np.array(pairs, dtype=PAIR).reshape(-1, 2).tobytes()


def pairs(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The two columns of a blob of integer pairs."""
    if len(blob) % (2 * PAIR.itemsize):
        raise ValueError(f"a blob of integer pairs has {len(blob)} bytes")
    pairs = np.frombuffer(blob, dtype=PAIR).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]
