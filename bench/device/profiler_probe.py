"""What the profilers can read on this GPU machine: a gpulab map run under ncu (per-instruction source
counters) and CUPTI through cupti-python (PC sampling). Prints what worked and what failed; run on the
device machine from the project root."""

import os
import subprocess
import sys
import tempfile

OUT = os.environ.get("OUT", "/tmp/out")

MAP = """
import numpy as np, gpulab, math
from gpulab import f64
def heavy(x: f64) -> f64:
    y = x * 2.0
    z = math.exp(y)
    return z + 1.0
xs = gpulab.to_device(np.linspace(0, 1, 1 << 22))
for _ in range(3):
    gpulab.map(heavy, xs)
import cupy; cupy.cuda.runtime.deviceSynchronize()
print("map ran")
"""


def run_ncu():
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "job.py")
        open(script, "w").write(MAP)
        report = os.path.join(OUT, "probe-map")
        command = ["ncu", "--target-processes", "all", "-k", "regex:gpulab_map", "-c", "1",
                   "--section", "SourceCounters", "--section", "WarpStateStats", "--section", "MemoryWorkloadAnalysis",
                   "--section", "Occupancy", "--import-source", "no", "-f", "-o", report, sys.executable, script]
        done = subprocess.run(command, capture_output=True, text=True, timeout=240)
        print("ncu rc", done.returncode)
        print(done.stdout[-3000:], done.stderr[-3000:])
        listing = subprocess.run(["ncu", "-i", report + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
                                 capture_output=True, text=True, timeout=120)
        print("source page rc", listing.returncode)
        print(listing.stdout[:4000], listing.stderr[-2000:])
        details = subprocess.run(["ncu", "-i", report + ".ncu-rep", "--page", "details", "--csv"],
                                 capture_output=True, text=True, timeout=120)
        print(details.stdout[:6000])


def run_cupti():
    try:
        from cupti import cupti
        print("cupti-python imported", [n for n in dir(cupti) if "pc" in n.lower() or "sampling" in n.lower()][:40])
    except Exception as error:  # a probe: say what failed and go on
        print("cupti-python:", type(error).__name__, error)


if __name__ == "__main__":
    run_ncu()
    run_cupti()
