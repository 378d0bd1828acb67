"""A snapshot of the build cache, per layer, as text and as an HTML table."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CacheInfo", "LayerInfo", "format_bytes"]


def format_bytes(count: int) -> str:
    """Return ``count`` bytes as a short human-readable string (``"1.5 MiB"``)."""
    if count < 1024:
        return f"{count} B"
    size = count / 1024
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} EiB"


@dataclass(frozen=True)
class LayerInfo:
    """One layer of the cache: where it is, what it holds and how lookups in it went.

    Attributes
    ----------
    name : str
        ``"memory"``, ``"private"`` or ``"shared"``.
    location : Path or None
        The folder of a disk layer; ``None`` for memory.
    state : str
        Empty when the layer works as usual, else what limits it
        (``"read-only"``, ``"not writable: memory only"``, ``"refused: ..."``).
    entries, bytes : int
        What it holds (``bytes`` is 0 for memory, whose values are objects).
    bound : str
        Its size bound, as text; empty for a shared folder (never evicted).
    hits, misses : int
        Lookups that reached this layer and found the key, or did not.
    rejected : int
        Entry files found but refused (corrupt, untrusted, undecodable); each
        is also a miss.
    """

    name: str
    location: Path | None
    state: str
    entries: int
    bytes: int
    bound: str
    hits: int
    misses: int
    rejected: int = 0

    def cells(self) -> tuple[str, ...]:
        """The layer's row: layer, where, what it holds, lookups, state."""
        held = f"{self.entries} entries"
        if self.location is not None:
            held += f", {format_bytes(self.bytes)}"
        if self.bound:
            held += f" of {self.bound}"
        lookups = f"{self.hits} hits, {self.misses} misses"
        if self.rejected:
            lookups += f", {self.rejected} refused"
        where = "this process" if self.location is None else str(self.location)
        return (self.name, where, held, lookups, self.state)


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of a :class:`~gpulab.cache.BuildCache`.

    Lookups go through the layers in order: memory, the private folder, then
    each shared folder; a key no layer has is built (``builds``).

    Attributes
    ----------
    memory : LayerInfo
        Built values held by this process.
    private : LayerInfo
        The current user's folder (read and written).
    shared : tuple of LayerInfo
        Read-only folders filled by someone else (``GPULAB_SHARED_CACHE_DIR``).
    builds : int
        Calls of a builder (including ones that raised).
    max_bytes : int
        The private folder's size bound.
    writable : bool
        Whether new entries are written to the private folder; ``False`` means
        memory only.
    """

    memory: LayerInfo
    private: LayerInfo
    shared: tuple[LayerInfo, ...]
    builds: int
    max_bytes: int
    writable: bool

    @property
    def layers(self) -> tuple[LayerInfo, ...]:
        """Every layer, in lookup order."""
        return (self.memory, self.private, *self.shared)

    @property
    def directory(self) -> Path:
        """The private folder."""
        return self.private.location

    @property
    def disk_hits(self) -> int:
        """Misses in memory answered from a folder, private or shared."""
        return sum(layer.hits for layer in self.layers[1:])

    @property
    def memory_entries(self) -> int:
        """Values held in memory."""
        return self.memory.entries

    @property
    def disk_entries(self) -> int:
        """Entry files in the private folder."""
        return self.private.entries

    _HEADINGS = ("layer", "where", "holds", "lookups", "state")

    def _rows(self) -> list[tuple[str, ...]]:
        return [layer.cells() for layer in self.layers] + [("builds", "", "", str(self.builds), "")]

    def __str__(self) -> str:
        """Return an aligned table, one line per layer."""
        rows = [self._HEADINGS, *self._rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self._HEADINGS) - 1)]
        return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip()
                         for row in rows)

    def _repr_html_(self) -> str:
        """Return the table as HTML for Jupyter."""
        head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in self._HEADINGS)
        body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(cell)}</td>" for cell in row)
                       + "</tr>" for row in self._rows())
        return (f"<table class='gpulab-cache-info'><caption>gpulab build cache</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
