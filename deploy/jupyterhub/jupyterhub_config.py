"""JupyterHub for a gpulab class on one machine: one server per learner, each as their own system user.

The form a workshop or a small class uses (docs/classroom.md): learners log
in with their accounts on this machine (PAM), and each gets a JupyterLab
server running as that account, started from the environment this hub runs
in (the learners' environment: gpulab installed, with its JupyterLab
extension). On a learner's first start the teaching notebooks are copied
into ``~/gpulab``; later starts keep what they changed. Every server reads
the class's pre-built, read-only build cache, so a first run of notebook 01
compiles nothing; each learner's own builds go to their private cache
(``~/.cache/gpulab``, mode 0700: no other learner can read or write it).

Run it as root (the spawner switches to each learner's account)::

    jupyterhub -f deploy/jupyterhub/jupyterhub_config.py

Settings from the environment, with their defaults:

GPULAB_NOTEBOOKS        /srv/gpulab/notebooks   the notebooks copied into each new server
GPULAB_SHARED_CACHE_DIR /srv/gpulab/cache       the class's cache (``python -m gpulab.cache warm``)
GPULAB_LEARNERS         gpulab-learners         the group whose members may log in
GPULAB_HUB_URL          http://127.0.0.1:8000   where the hub listens (put TLS in front of it)
"""

import os
import pwd
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub provides it)

NOTEBOOKS = Path(os.environ.get("GPULAB_NOTEBOOKS", "/srv/gpulab/notebooks"))
SHARED_CACHE = os.environ.get("GPULAB_SHARED_CACHE_DIR", "/srv/gpulab/cache")
LEARNERS = os.environ.get("GPULAB_LEARNERS", "gpulab-learners")
WORK_DIR = "gpulab"  # in each learner's home
ENV_BIN = Path(sys.executable).parent  # the hub runs in the learners' environment

c.JupyterHub.bind_url = os.environ.get("GPULAB_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.allowed_groups = {LEARNERS}
c.JupyterHub.spawner_class = "localprocess"

# Each server: JupyterLab from this environment, in ~/gpulab, opening notebook 01.
c.Spawner.cmd = [str(ENV_BIN / "jupyterhub-singleuser")]
c.Spawner.notebook_dir = f"~/{WORK_DIR}"
c.Spawner.default_url = "/lab/tree/01-first-kernel.ipynb"
c.Spawner.environment = {"GPULAB_SHARED_CACHE_DIR": SHARED_CACHE}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def copy_notebooks(spawner) -> None:
    """Copy the class's notebooks into the learner's ``~/gpulab``, keeping any they already have.

    Runs in the hub (as root) before the server starts, so what it creates
    is given to the learner.
    """
    account = pwd.getpwnam(spawner.user.name)
    work = Path(account.pw_dir) / WORK_DIR
    if not work.exists():
        work.mkdir(mode=0o700)
        os.chown(work, account.pw_uid, account.pw_gid)
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        target = work / notebook.name
        if not target.exists():
            shutil.copyfile(notebook, target)
            os.chown(target, account.pw_uid, account.pw_gid)
            target.chmod(0o600)


c.Spawner.pre_spawn_hook = copy_notebooks
