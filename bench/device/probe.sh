#!/usr/bin/env bash
# One GPU call: versions, the GPU suite on this tree, and what the profilers can do here.
# Run from the project root on the device machine; logs go to $OUT.
set -u
source bench/device/setup.sh
{
  which ncu nvdisasm compute-sanitizer; ncu --version | tail -1
  cat /proc/driver/nvidia/params 2>/dev/null | grep -i profil
  ls -d /usr/local/cuda*/extras/CUPTI/lib64 2>/dev/null; find / -name 'libcupti.so*' 2>/dev/null | head -5
  find / -name 'ncu_report.py' 2>/dev/null | head -3
} >> "$OUT/versions.log" 2>&1
cat "$OUT/versions.log"
timeout 300 python3 -m pytest tests/gpu tests/nocuda/test_registry.py tests/nocuda/test_bench.py tests/nocuda/test_magics.py -m gpu -q -p no:cacheprovider -rfE 2>&1 | tail -40 > "$OUT/gpu-tests.log"
tail -15 "$OUT/gpu-tests.log"
timeout 240 python3 bench/device/profiler_probe.py > "$OUT/profiler-probe.log" 2>&1
tail -60 "$OUT/profiler-probe.log"
