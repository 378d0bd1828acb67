"""What a frontend loads to show a reduce's build view (KB), and the time from a cell's run to the drawn view.

    python bench/view_load.py [--frontend lab|notebook] [--runs 7] [--out FILE.json]

Sizes: the renderer's code each frontend loads once (the JupyterLab extension's static files, the
widget's ES module and CSS), and what one reduce view sends: each MIME type of its output and, for
the live view, its widget's state (anywidget sends the module and CSS in every model's state).
Time: a JupyterLab 4 or Notebook 7 server and headless Chromium (as tests/browser, whose fixtures it
reuses) run ``%%gpukernel reduce`` once to fill the build cache, then again ``--runs`` times, each
timed in the page from the run command to the frame after the SASS pane's first line exists. The
median is the figure; on a shared 2-core machine the spread is wide, so every run is kept.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

import conftest  # noqa: E402  (the browser tests' server and browser helpers)
import gpulab  # noqa: E402


def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b

CELLS = ["%load_ext gpulab",
         "%%gpukernel reduce --target sm_90\ndef add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:\n    return a + b"]
DRAWN = """async () => {
  const old = new Set(document.querySelectorAll('.gpulab-build'));
  const t0 = performance.now();
  const drawn = new Promise(resolve => {
    const look = () => {
      for (const v of document.querySelectorAll('.gpulab-build')) {
        if (!old.has(v) && v.querySelector('.gpulab-pane[data-pane="sass"] .gpulab-line')) {
          requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
          return true;
        }
      }
      return false;
    };
    const watch = new MutationObserver(() => look() && watch.disconnect());
    watch.observe(document.body, {childList: true, subtree: true});
  });
  await window.jupyterapp.commands.execute('notebook:run-cell');
  return await drawn;
}"""


def sizes() -> dict:
    """KB of the renderers' code and of one reduce view's output, per MIME type."""
    from gpulab.notebook.formatters import build_mimebundle

    out = {}
    lab = REPO / "gpulab" / "labextension" / "static"
    if lab.exists():
        out["jupyterlab extension (static/*.js)"] = sum(p.stat().st_size for p in lab.glob("*.js")) / 1024
    for asset in sorted((REPO / "gpulab" / "notebook" / "static").glob("widget.*")):
        out[f"widget {asset.name}"] = asset.stat().st_size / 1024
    build = gpulab.compile("reduce", add, target="sm_90")
    for mime, data in build_mimebundle(build).items():
        out[f"output {mime}"] = len(data if isinstance(data, str) else json.dumps(data)) / 1024
    try:
        from gpulab.notebook.live import BuildWidget
    except ImportError:  # before the live view
        return {k: round(v, 1) for k, v in out.items()}
    state = BuildWidget(build).get_state()
    for name in ("_esm", "_css", "bundle"):
        out[f"widget state {name}"] = len(state[name] if isinstance(state[name], str) else json.dumps(state[name])) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def times(frontend: str, runs: int) -> list[float]:
    """Milliseconds from the run command to the drawn view, ``runs`` times (the build cached)."""
    import nbformat
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="gpulab-view-load-"))
    runtime = Path(tempfile.mkdtemp(prefix="gpulab-k-"))
    server_gen = conftest._serve(tmp, tmp / "cache", runtime, app=frontend)
    server = next(server_gen)
    try:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(c) for c in ["import gpulab", *CELLS]]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nbformat.write(nb, server.root / "load.ipynb")
        server.start_kernel("load.ipynb")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(conftest.CHROMIUM), headless=True,
                                        args=conftest.CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            path = "lab/tree" if frontend == "lab" else "notebooks"
            page.goto(f"{server.url}/{path}/load.ipynb?reset&token={server.token}", timeout=120_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
            try:  # the lab at times asks for the kernel the notebook names, though a session is made
                page.locator(".jp-Dialog").get_by_role("button", name="Select").click(timeout=3_000)
            except Exception:
                pass
            page.wait_for_function("() => window.jupyterapp", timeout=120_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(".gpulab-build .gpulab-line", timeout=300_000)
            cell = page.locator(".jp-CodeCell").last
            found = []
            for _ in range(runs):
                cell.locator(".jp-InputPrompt").click()
                found.append(round(page.evaluate(DRAWN), 1))
                print(f"{frontend}: {found[-1]} ms", file=sys.stderr)
            browser.close()
        return found
    finally:
        try:
            next(server_gen)
        except StopIteration:
            pass


def main() -> None:
    """Measure and print (and write ``--out``) the sizes and times as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frontend", choices=("lab", "notebook"), default="lab")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    found = times(args.frontend, args.runs)
    result = {"commit": commit, "machine": f"{platform.machine()}-{__import__('os').cpu_count()}cpu",
              "frontend": args.frontend, "kb": sizes(), "ms": found, "median_ms": statistics.median(found)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
