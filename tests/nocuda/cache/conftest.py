"""Fixtures of the build-cache tests: a private folder per test, strict warnings, a folder others can reach."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

from gpulab.cache import CacheWarning


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's private cache folder (not created), named by the environment; no shared folder."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("GPULAB_CACHE_DIR", str(directory))
    monkeypatch.delenv("GPULAB_SHARED_CACHE_DIR", raising=False)
    monkeypatch.delenv("GPULAB_CACHE_MAX_BYTES", raising=False)
    return directory


@pytest.fixture(autouse=True)
def warnings_are_errors():
    """Any unexpected CacheWarning fails the test; tests that expect one record it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        yield


@pytest.fixture
def open_base() -> Path:
    """A folder (mode 0755, owned by the test's user) that processes of other users can reach.

    pytest's own temporary folders are 0700, so another uid could not even
    look into them.
    """
    base = Path(tempfile.mkdtemp(prefix="gpulab-cache-test-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def use_cache():
    """Install a BuildCache as the process-wide one (the one gpulab.compile uses) for this test."""
    from gpulab.cache import reset_default_cache

    yield lambda cache: reset_default_cache(cache) or cache
    reset_default_cache()
