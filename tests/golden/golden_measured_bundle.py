"""The golden measured bundle: a build view with the measured column, from a profile recorded on an H100.

The float64 exp map (tests/golden/profiles/map-exp64: line 2 waits on the load, line 3 computes the exp) as ``Profile.bundle`` makes it, with
its Python and SASS panes: what the TypeScript tests (extension/test/measured.test.ts) and the browser test of
the measured column (tests/browser/test_measured_view.py) render, with no GPU. Regenerate it after changing the
bundle, the header model or the recording::

    .venv/bin/python tests/golden/golden_measured_bundle.py
"""

from pathlib import Path

from golden_bundle import write

GOLDEN = Path(__file__).resolve().parents[2] / "extension" / "test" / "golden-measured-bundle.json"
PROFILE = Path(__file__).resolve().parent / "profiles" / "map-exp64"
PANES = ("python", "sass")


def make() -> dict:
    """The bundle, made anew from the recorded profile."""
    from gpulab.profiler import load

    return load(PROFILE).bundle(panes=PANES)


if __name__ == "__main__":
    write(GOLDEN, make)
