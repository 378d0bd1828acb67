"""The golden build bundle shared by the Python and TypeScript tests of the header model.

A real build (reduce of float32 add for sm_90, compared with its PTX link),
its Python and CUDA panes. Regenerate it after changing the bundle or the
header model::

    .venv/bin/python tests/golden/golden_bundle.py
"""

import json
import os
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "extension" / "test" / "golden-bundle.json"
PANES = ("python", "cuda")


def add(a, b):
    return a + b


def make() -> dict:
    """The bundle, freshly built."""
    import gpulab
    from gpulab.compiler.bundle import bundle_of

    lto = gpulab.compile("reduce", add, types="f32,f32", target="sm_90")
    ptx = gpulab.compile("reduce", add, types="f32,f32", target="sm_90", lto=False)
    return bundle_of(lto, panes=PANES, compare=ptx)


def write(path: Path, make) -> None:
    """Write the bundle ``make()`` returns to ``path``, built with this checkout's gpulab in an empty cache."""
    sys.path.insert(0, str(path.parents[2]))
    # An empty private cache and no shared one: a hit would put "from the disk cache" in the header
    # where the tests' fresh builds have none.
    os.environ["GPULAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpulab-golden-")
    os.environ.pop("GPULAB_SHARED_CACHE_DIR", None)
    path.write_text(json.dumps(make(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    write(GOLDEN, make)
