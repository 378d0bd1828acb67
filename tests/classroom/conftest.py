"""Session fixtures of the classroom tests: the learners' environments (see learnerenv.py)."""

from __future__ import annotations

import shutil

import pytest
from learnerenv import HUB_REQUIREMENTS, binder_requirements_with, checkout_wheel, make_env


@pytest.fixture(scope="session")
def checkout_wheel_path(tmp_path_factory):
    """gpulab's wheel built from this checkout, as ``make wheel`` builds the one Binder's release carries."""
    return checkout_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def binder_env(checkout_wheel_path, tmp_path_factory):
    """What mybinder.org builds from ``binder/``: ``pip install -r binder/requirements.txt``.

    The release wheel that file names is replaced by the same wheel built
    from this checkout (so the test needs no release, and tests this code).
    """
    requirements = binder_requirements_with(checkout_wheel_path, tmp_path_factory.mktemp("binder"))
    env = make_env("binder", "-r", requirements)
    yield env
    shutil.rmtree(env.root, ignore_errors=True)


@pytest.fixture(scope="session")
def classroom_env(checkout_wheel_path, tmp_path_factory):
    """A class's image: binder's pins (gpulab as this checkout's wheel) and JupyterHub's pins."""
    requirements = binder_requirements_with(checkout_wheel_path, tmp_path_factory.mktemp("classroom"))
    env = make_env("classroom", "-r", requirements, "-r", HUB_REQUIREMENTS)
    yield env
    shutil.rmtree(env.root, ignore_errors=True)
