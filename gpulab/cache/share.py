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
from .folder import TAG_NAME, EntryFolder
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
    changed : list of str
        What :func:`publish` changed to make it so (modes widened, entries removed), in words.
    """

    folder: Path
    refused: str = ""
    good: list[str] = field(default_factory=list)
    bad: dict[str, str] = field(default_factory=dict)
    private: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the folder is trusted and every entry in it verifies."""
        return not self.refused and not self.bad

    def __str__(self) -> str:
        done = [f"published: {change}" for change in self.changed]
        if self.refused:
            return "\n".join([*done, f"{self.folder}: refused as a shared cache folder: {self.refused}"])
        lines = done + [f"{self.folder}: trusted as a shared cache folder; {len(self.good)} good entries, "
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

    Only a folder gpulab's cache made (it holds gpulab's ``CACHEDIR.TAG``)
    and that holds nothing but entries is published: opening a folder to all
    would expose any other file in it. Entries that do not verify are
    removed; the folder becomes mode 0o755 and its entries 0o644 (only the
    owner may write them), and the report says what changed; then the
    folder is inspected as a learner would see it.

    Parameters
    ----------
    path : str or os.PathLike
        A folder the current user owns and filled through a
        :class:`~gpulab.cache.BuildCache` (``python -m gpulab.cache warm`` does).

    Returns
    -------
    Inspection
        How learners will see it (``refused`` says why when the path to it is
        not safe, e.g. under a folder others may write); ``changed`` says what
        publishing changed.

    Raises
    ------
    Untrusted
        If the folder is not the current user's private kind of folder (owned
        by them, writable by no one else), was not made by gpulab's cache, or
        holds other files than entries (nothing is changed then).
    OSError
        If it is not there, or cannot be opened or changed.
    """
    if not Path(path).is_dir():
        raise FileNotFoundError(f"no folder {path} to publish")
    folder = EntryFolder(Path(path), shared=False, adopt=False)
    if not folder.tagged():
        raise Untrusted(f"{path} is not a folder gpulab's build cache made (it has no {TAG_NAME}), so publish leaves "
                        "it as it is: opening it to all would expose what it holds. Fill a folder with `python -m "
                        "gpulab.cache warm NOTEBOOKS --out DIR` (or BuildCache(DIR, shared=())) and publish that")
    others = folder.listing().others
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise Untrusted(f"{path} holds {len(others)} file(s) that are not build cache entries ({shown}); publishing "
                        "would make them readable by all, so nothing was changed: move them out first")
    removed = 0
    for key in folder.listing().entries:
        try:
            _verify(folder, key)
        except (Untrusted, BadEntry, OSError):
            folder.remove(key)
            removed += 1
    folder.clean_temps()
    changed = folder.open_to_all() + ([f"removed {removed} entries that failed checks"] if removed else [])
    found = inspect_shared(path)
    found.changed = changed
    return found
