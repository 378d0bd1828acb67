"""Execute a notebook top to bottom in a kernel of this interpreter and keep it with its outputs.

    python bench/device/run_notebook.py NOTEBOOK OUT.ipynb

(The notebooks are stored without outputs; what a GPU run shows is kept under bench/results.)
"""

import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient


class ThisInterpreter(KernelSpecManager):
    """Every kernel an ipykernel of ``sys.executable``."""

    def get_kernel_spec(self, kernel_name):
        return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          display_name="Python", language="python")


def main(source: str, out: str) -> None:
    path = Path(source).resolve()
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, km=KernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter()),
                            timeout=300, allow_errors=True, resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
    finally:
        nbformat.write(notebook, out)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    print(f"{path.name}: {time.perf_counter() - start:.1f} s, {len(errors)} cell error(s)")
    for error in errors:
        print(error.get("ename"), error.get("evalue"))


if __name__ == "__main__":
    main(*sys.argv[1:3])
