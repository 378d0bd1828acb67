"""Shared fixtures: an empty build cache per session, and the ``gpu`` marker."""

import pytest


def _has_gpu() -> bool:
    from gpulab.device import devices

    return any(d.is_gpu for d in devices())


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none here)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def fresh_cache(tmp_path_factory):
    """Every test session builds for real, into a cache folder of its own."""
    folder = tmp_path_factory.mktemp("gpulab-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("GPULAB_CACHE_DIR", str(folder))
    from gpulab import cache

    cache.reset_default_cache()
    yield folder
    patch.undo()
    cache.reset_default_cache()
