"""The README's two commands: ``make lab`` installs what a learner needs, ``make test`` the test tools too.

``make -n`` says what each would run in a fresh virtual environment; the
extras it installs are resolved from pyproject.toml.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")

REPO = Path(__file__).resolve().parents[2]
TEST_TOOLS = {"pytest", "nbgrader", "playwright", "hypothesis", "nbconvert"}
"""What a learner's lab must not have: nbgrader alone adds menus, a sidebar and a warning to JupyterLab."""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def installed_extras(target: str, venv: Path) -> list[str]:
    """The extras of gpulab that ``make TARGET`` installs into a fresh ``venv``."""
    dry = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True)
    (extras,) = re.findall(r"pip install .*-e '\.\[([\w,]+)\]'", dry.stdout)
    return extras.split(",")


def requirements(extras: list[str]) -> set[str]:
    """The names of the packages gpulab's ``extras`` add, through the extras they name in turn."""
    optional = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names, todo = set(), list(extras)
    while todo:
        for line in optional[todo.pop()]:
            requirement = Requirement(line)
            if requirement.name == "gpulab":
                todo += requirement.extras
            else:
                names.add(requirement.name)
    return names


def test_make_lab_installs_the_lab_and_no_test_tool(tmp_path):
    lab = requirements(installed_extras("lab", tmp_path / "venv"))
    assert {"jupyterlab", "ipykernel"} <= lab
    assert not lab & TEST_TOOLS, f"make lab would give a learner's JupyterLab {sorted(lab & TEST_TOOLS)}"


def test_make_test_installs_the_test_tools_and_the_lab_they_drive(tmp_path):
    tools = requirements(installed_extras("test", tmp_path / "venv"))
    assert TEST_TOOLS | {"jupyterlab", "nbclient"} <= tools
