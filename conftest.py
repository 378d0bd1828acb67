"""The whole suite's: an empty build cache per session, the ``gpu`` and ``gpus(n)`` markers, the examples of
README.md and docs/*.md as tests (tests/doc_examples.py), how ``make test`` spreads files over workers, and
``--frontend`` (the suite with numba-cuda-mlir: ``pytest --frontend numba-cuda-mlir``)."""

from importlib.util import find_spec

import pytest
from doc_examples import page_examples

if find_spec("sybil") is not None:  # the test extra's; without it (the GPU machine's wheels) the pages are not run
    pytest_collect_file = page_examples().pytest()


def pytest_addoption(parser):
    from gpulab.options import FRONTENDS

    parser.addoption("--frontend", choices=FRONTENDS,
                     help="build with this frontend wherever a test names none (default: the first installed)")


def pytest_configure(config):
    if config.getoption("--frontend"):
        from gpulab.compiler import frontends

        frontends.prefer(config.getoption("--frontend"))


def _gpu_count() -> int:
    from gpulab.device import devices

    return sum(d.is_gpu for d in devices())


def pytest_collection_modifyitems(config, items):
    count = _gpu_count()
    for item in items:
        if count == 0 and item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (none here)"))
        needs = item.get_closest_marker("gpus")
        if needs is not None and count < needs.args[0]:
            item.add_marker(pytest.mark.skip(reason=f"needs {needs.args[0]} CUDA GPUs ({count} here)"))


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


SPREAD = ("tests/nocuda/test_notebooks.py", "tests/nocuda/test_frontends.py")
"""Files whose tests are independent and long (a notebook in a kernel of its own each; two frontends' builds of a
primitive each): under ``make test``'s ``--dist loadfile`` each of their tests goes to whichever worker is free,
not the whole file to one."""


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else path

    return Scheduling(config, log)
