"""The disassembly stage: a build's cubin -> the SASS the view shows, each line keyed by its source lines.

It runs when a build's SASS is first asked for (running a kernel never
needs it): nvdisasm twice side by side, the SASS with its inlined source
lines and the live registers at each instruction (about 0.27 s a run,
however small the cubin). Both outputs are kept, unparsed, in the entry
beside the build's, for the analysis (:mod:`.analysis.model`) to read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import cache
from ..progress import Progress
from . import disasm, linemap


@dataclass(frozen=True)
class Disassembly:
    """The SASS to show, the keys of its lines, each line's instruction offset, nvdisasm's two outputs (the
    SASS with its line annotations and the live registers) and how long making them took."""

    text: str
    keys: dict[int, tuple[str, ...]]
    offsets: dict[int, int]
    raw: tuple[str, str]
    seconds: float


def disassemble(key: str, cubin: bytes, sources: linemap.Sources, label: str) -> Disassembly:
    """The disassembly of the build ``key`` (its ``cubin``, whose line info names ``sources``): from the cache,
    else nvdisasm, under a progress bar that names ``label``."""
    return cache.default_cache().get_or_build(f"{key}-sass", lambda: _disassemble(cubin, sources, label),
                                              encode=_encode, decode=_decode)


def _disassemble(cubin: bytes, sources: linemap.Sources, label: str) -> Disassembly:
    start = time.perf_counter()
    with Progress(f"disassemble {label}", 1, "stages", ticking=True) as progress:
        raw = disasm.disassemble_with_live_registers(cubin)
        text, keys, offsets = linemap.map_sass(raw[0], sources)
        progress.update(1)
    return Disassembly(text, keys, offsets, raw, time.perf_counter() - start)


def _encode(found: Disassembly) -> tuple[dict, dict[str, bytes]]:
    table, pairs = linemap.key_table(found.keys)
    blobs = {"sass": found.text.encode(), "keys": pairs, "offsets": linemap.pairs_blob(list(found.offsets.items())),
             "raw_sass": found.raw[0].encode(), "raw_live": found.raw[1].encode()}
    return {"key_table": table, "seconds": found.seconds}, blobs


def _decode(meta: dict, blobs: dict[str, bytes]) -> Disassembly:
    lines, offsets = linemap.pairs(blobs["offsets"])
    return Disassembly(blobs["sass"].decode(), linemap.key_map(meta["key_table"], blobs["keys"]),
                       dict(zip(lines.tolist(), offsets.tolist())),
                       (blobs["raw_sass"].decode(), blobs["raw_live"].decode()), meta["seconds"])
