"""Turn a filled cache folder into a shared one, and see a shared folder as a learner's gpulab will.

A teacher fills a folder with ``BuildCache(folder, shared=())`` (compiling
what the notebooks compile), then :func:`publish` makes it readable by
everyone; learners name it in ``GPULAB_SHARED_CACHE_DIR``. :func:`inspect_shared`
says whether a learner's gpulab will trust it, entry by entry.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .entry import BadEntry, unpack
from .folder import EntryFolder
from .trust import Untrusted

__all__ = ["Inspection", "inspect_shared", "publish"]


@dataclass
class Inspection:
    """What a folder holds, judged as a shared folder.

    Attributes
    ----------
    folder : Path
        The folder.
    refused : str
        Why the whole folder is refused (empty when it is trusted).
    good : list of str
        Keys of entries that verify.
    bad : dict of str to str
        Keys of entries that would be refused, and why.
    private : list of str
        Good entries that others cannot read (not mode o+r): users outside
        the owner's group miss them.
    """

    folder: Path
    refused: str = ""
    good: list[str] = field(default_factory=list)
    bad: dict[str, str] = field(default_factory=dict)
    private: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the folder is trusted and every entry in it verifies."""
        return not self.refused and not self.bad

    def __str__(self) -> str:
        if self.refused:
            return f"{self.folder}: refused as a shared cache folder: {self.refused}"
        lines = [f"{self.folder}: trusted as a shared cache folder; {len(self.good)} good entries, "
                 f"{len(self.bad)} refused, {len(self.private)} that others cannot read"]
        lines += [f"  refused {key}: {reason}" for key, reason in sorted(self.bad.items())]
        return "\n".join(lines)


def _verify(folder: EntryFolder, key: str) -> None:
    """Read and verify one entry as a lookup would (trust, size, format, checksum, key)."""
    data = folder.read(key)
    if data is None:
        raise BadEntry("vanished while being checked")
    unpack(data, key)


def inspect_shared(path: str | os.PathLike[str]) -> Inspection:
    """Judge ``path`` as a learner's gpulab judges a folder named in ``GPULAB_SHARED_CACHE_DIR``.

    Run it as a learner would be (not as root, which reads any file) to see
    exactly what they will see; as the owner it still reports entries that
    others cannot read.

    Returns
    -------
    Inspection
    """
    path = Path(path)
    try:
        folder = EntryFolder(path, shared=True)
    except (Untrusted, OSError) as exc:
        return Inspection(path, refused=str(exc))
    found = Inspection(path)
    for key, info in sorted(folder.listing().entries.items()):
        try:
            _verify(folder, key)
        except (Untrusted, BadEntry, OSError) as exc:
            found.bad[key] = str(exc)
            continue
        found.good.append(key)
        if not info.st_mode & stat.S_IROTH:
            found.private.append(key)
    return found


def publish(path: str | os.PathLike[str]) -> Inspection:
    """Make a cache folder of the current user readable by all, as a shared folder must be.

    Entries that do not verify are removed; the folder becomes mode 0o755 and
    its entries 0o644 (only the owner may write them); then the folder is
    inspected as a learner would see it.

    Parameters
    ----------
    path : str or os.PathLike
        A folder the current user owns and filled through a
        :class:`~gpulab.cache.BuildCache`.

    Returns
    -------
    Inspection
        How learners will see it (``refused`` says why when the path to it is
        not safe, e.g. under a folder others may write).

    Raises
    ------
    Untrusted
        If the folder is not the current user's private kind of folder (owned
        by them, writable by no one else).
    OSError
        If it is not there, or cannot be opened or changed.
    """
    if not Path(path).is_dir():
        raise FileNotFoundError(f"no folder {path} to publish")
    folder = EntryFolder(Path(path), shared=False)
    for key in folder.listing().entries:
        try:
            _verify(folder, key)
        except (Untrusted, BadEntry, OSError):
            folder.remove(key)
    folder.clean_temps()
    folder.open_to_all()
    return inspect_shared(path)
