"""A profile in a folder, to read again where there is no GPU: the builds it ran and the report's pages.

``profile.json`` (the launches: build key, kernel, grid, block; the profile's wall time and device), one
``<key>.gpulab`` per build (its cache entry, :mod:`gpulab.cache.entry`), and the pages gpulab reads of the
report as Nsight Compute printed them, gzipped (``source.csv.gz``, ``raw.csv.gz``). Loading re-derives
everything else (the SASS listing, the line map, the per-line sums) from those, as a live profile does.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..cache.entry import BadEntry, pack, unpack
from ..compiler.serialize import decode, encode
from ..errors import ProfilerError
from .report import kernel_reports

SAVED_VERSION = 2
"""2: the builds' entries are of layout 6 (:data:`gpulab.compiler.spec.ENTRY_LAYOUT`: artifacts by stage)."""
PAGES = ("source", "raw")


@dataclass(frozen=True)
class Saved:
    """What a folder holds of a profile: each launch as ``(build, kernel, grid, block, report)``, the profile's
    wall time, the report's pages and the GPU it ran on."""

    launches: list[tuple]
    seconds: float
    pages: dict[str, str]
    device: str


def save(profile, folder) -> Path:
    """Write ``profile`` (a :class:`~gpulab.profiler.result.Profile`) into ``folder`` (made if missing); return
    the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for build in profile.builds:
        (folder / f"{build.key}.gpulab").write_bytes(pack(build.key, *encode(build)))
    for page in PAGES:
        (folder / f"{page}.csv.gz").write_bytes(gzip.compress(profile.pages[page].encode(), mtime=0))
    (folder / "profile.json").write_text(json.dumps({
        "version": SAVED_VERSION, "seconds": profile.seconds, "device": profile.device,
        "launches": [{"build": launch.build.key, "kernel": launch.kernel, "grid": launch.grid, "block": launch.block}
                     for launch in profile.launches]}, indent=1) + "\n")
    return folder


def read(folder) -> Saved:
    """What ``folder`` holds of a saved profile.

    Raises
    ------
    ProfilerError
        When the folder holds no profile, or one this gpulab cannot read.
    """
    folder = Path(folder)
    try:
        found = json.loads((folder / "profile.json").read_text())
    except (OSError, ValueError) as exc:
        raise ProfilerError(f"{folder} holds no saved profile (profile.json: {exc})") from None
    if found.get("version") != SAVED_VERSION:
        raise ProfilerError(f"{folder} holds a profile of version {found.get('version')}; this gpulab reads "
                            f"{SAVED_VERSION}")
    builds = {}
    for launch in found["launches"]:
        key = launch["build"]
        if key not in builds:
            try:
                builds[key] = replace(decode(*unpack((folder / f"{key}.gpulab").read_bytes(), key)), origin="disk")
            except (OSError, BadEntry, KeyError, TypeError, ValueError) as exc:
                raise ProfilerError(f"the build {key} of {folder} cannot be read: {exc}") from None
    pages = {page: gzip.decompress((folder / f"{page}.csv.gz").read_bytes()).decode() for page in PAGES}
    reports = kernel_reports(pages)
    if len(reports) != len(found["launches"]):
        raise ProfilerError(f"{folder}: {len(found['launches'])} launches but {len(reports)} profiled kernels")
    launches = [(builds[launch["build"]], launch["kernel"], launch["grid"], launch["block"], report)
                for launch, report in zip(found["launches"], reports)]
    return Saved(launches, found["seconds"], pages, found.get("device", ""))
