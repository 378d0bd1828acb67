"""deploy/jupyterhub/values.yaml says what docs/classroom.md says it does (no cluster runs it here).

The Zero to JupyterHub chart validates the file against its schema at
``helm install``; these checks keep the parts gpulab depends on: a default
CPU profile and GPU profiles, the shared cache mounted read-only where
``GPULAB_SHARED_CACHE_DIR`` points, the notebooks copied in without
overwriting a learner's, and an image the Dockerfile beside it builds.
"""

from __future__ import annotations

import re

import pytest
from learnerenv import ROOT

yaml = pytest.importorskip("yaml")

DEPLOY = ROOT / "deploy" / "jupyterhub"


@pytest.fixture(scope="module")
def singleuser() -> dict:
    return yaml.safe_load((DEPLOY / "values.yaml").read_text())["singleuser"]


def test_a_default_cpu_profile_and_gpu_profiles(singleuser):
    profiles = singleuser["profileList"]
    defaults = [p for p in profiles if p.get("default")]
    assert len(defaults) == 1 and "kubespawner_override" not in defaults[0], "the default profile asks for no GPU"
    gpus = [p["kubespawner_override"]["extra_resource_limits"] for p in profiles if "kubespawner_override" in p]
    assert {"nvidia.com/gpu": "1"} in gpus
    assert any(re.fullmatch(r"nvidia\.com/mig-\d+g\.\d+gb", name) for limits in gpus for name in limits)


def test_the_shared_cache_is_mounted_read_only_where_gpulab_looks(singleuser):
    volume, = [v for v in singleuser["storage"]["extraVolumes"] if v["name"] == "gpulab-cache"]
    assert volume["persistentVolumeClaim"]["readOnly"] is True
    mount, = [m for m in singleuser["storage"]["extraVolumeMounts"] if m["name"] == "gpulab-cache"]
    assert mount["readOnly"] is True
    assert singleuser["extraEnv"]["GPULAB_SHARED_CACHE_DIR"] == mount["mountPath"]


def test_notebooks_are_copied_in_without_overwriting_and_notebook_01_opens(singleuser):
    command = " ".join(singleuser["lifecycleHooks"]["postStart"]["exec"]["command"])
    copied = re.search(r"cp -n (\S+)/\*\.ipynb ~/(\S+?)/?$", command)
    assert copied, command
    source, target = copied.groups()
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(rf"^COPY notebooks/ {re.escape(source)}/?$", dockerfile, re.M), "the image holds the notebooks"
    assert singleuser["defaultUrl"] == f"/lab/tree/{target}/01-first-kernel.ipynb"
    assert (ROOT / "notebooks" / "01-first-kernel.ipynb").exists()


def test_the_image_installs_binders_pins_and_the_hubs():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY binder/requirements.txt" in dockerfile and "COPY deploy/jupyterhub/requirements.txt" in dockerfile
    steps = [line for line in dockerfile.splitlines() if not line.startswith("#")]
    assert not [line for line in steps if re.search(r"\b(node|nodejs|npm)\b", line)], (
        "the learners' image needs no Node.js: gpulab's wheel has the extension built in")
