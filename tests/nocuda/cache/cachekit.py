"""Helpers of the build-cache tests: stand-in artifacts, counting builders, entry forging, other users."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import gpulab.cache as cache_mod
from gpulab.cache import BuildCache, CacheWarning

KEY = "ab" * 32
OTHER = "cd" * 32
REPO = Path(cache_mod.__file__).resolve().parents[2]

# Accounts that need not exist: root may own files by, and act as, any uid.
TEACHER, STRANGER, LEARNER = 54321, 54322, 54323

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="making files of another user, or acting as one, needs root (CI runs as root)")


@dataclass
class Artifact:
    """A stand-in for a Build: JSON metadata plus named byte strings."""

    meta: dict
    blobs: dict


def encode(artifact: Artifact) -> tuple[dict, dict]:
    return artifact.meta, artifact.blobs


def decode(meta: dict, blobs: dict) -> Artifact:
    return Artifact(meta, blobs)


def make_artifact(tag: str = "k", size: int = 1000) -> Artifact:
    return Artifact({"tag": tag, "registers": 32, "lines": [1, 2, 3], "nested": {"x": None}},
                    {"cubin": os.urandom(size), "sass": b"IADD3 R1, R2, R3 ;\n" * 4, "empty": b""})


class Builder:
    """Counts its calls; returns a fixed artifact or raises a fixed exception."""

    def __init__(self, result: Artifact | BaseException | None = None, delay: float = 0.0):
        self.result = make_artifact() if result is None else result
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self) -> Artifact:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def fail_build() -> Artifact:
    raise AssertionError("the builder must not be called")


def get(cache: BuildCache, key: str = KEY, build=fail_build) -> Artifact:
    return cache.get_or_build(key, build, encode=encode, decode=decode)


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, CacheWarning)]


def entry(folder: Path, key: str = KEY) -> Path:
    return folder / f"{key}.gpulab"


def write_raw_entry(path: Path, header: bytes, payload: bytes = b"", *, header_len: int | None = None) -> None:
    """Write an entry file around ``header`` and ``payload`` with a valid checksum, as a forger would."""
    body = header + payload
    prelude = struct.pack(">8sHI32s", b"\x89GPULAB\n", 1, len(header) if header_len is None else header_len,
                          hashlib.sha256(body).digest())
    path.write_bytes(prelude + body)


def write_entry(path: Path, key: str, meta, blobs: dict[str, bytes]) -> None:
    """Write an entry of any ``meta`` (even one gpulab would not write) with a valid checksum."""
    listing = [{"name": name, "size": len(data)} for name, data in blobs.items()]
    header = json.dumps({"key": key, "meta": meta, "blobs": listing}).encode()
    write_raw_entry(path, header, b"".join(blobs.values()))


def read_entry(path: Path) -> tuple[dict, dict[str, bytes]]:
    """Return the header and blobs of an entry file, unchecked."""
    data = path.read_bytes()
    (header_len,) = struct.unpack_from(">I", data, 10)
    header = json.loads(data[46:46 + header_len])
    blobs, offset = {}, 46 + header_len
    for blob in header["blobs"]:
        blobs[blob["name"]] = data[offset:offset + blob["size"]]
        offset += blob["size"]
    return header, blobs


def give(path: Path, uid: int) -> None:
    """Make ``uid`` the owner of ``path`` (not following a symbolic link); needs root."""
    os.chown(path, uid, uid, follow_symlinks=False)


def as_user(uid: int, work: Callable[[], object]) -> object:
    """Run ``work()`` in a forked child process that is ``uid`` (not root), and return its JSON result.

    The child drops root for good (groups, gid, uid), so the kernel's permission
    checks apply to it as to any other user. Needs root.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            message, status = json.dumps({"result": work()}), 0
        except BaseException:  # noqa: BLE001 - reported to the parent
            message = json.dumps({"error": traceback.format_exc()})
        finally:
            try:
                os.write(write_end, message.encode())
            finally:
                os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = json.loads(pipe.read() or b'{"error": "the child wrote nothing"}')
    os.waitpid(pid, 0)
    if "error" in report:
        raise AssertionError(f"the process of uid {uid} failed:\n{report['error']}")
    return report["result"]
