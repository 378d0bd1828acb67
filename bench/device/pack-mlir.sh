#!/usr/bin/env bash
# On the CPU machine, from the project root: numba-cuda-mlir 0.6.0 for the GPU machine's Python 3.12. Its wheel
# (71 MB) is more than a device call carries beside .whl, so it is unpacked, its bytecode caches and C++
# headers dropped, and packed again with xz into .mlir/numba-cuda-mlir.tar.xz (about 48 MB; kept out of git
# through .git/info/exclude). Carry .mlir alone in one device call that runs
# `bench/device/issue40-frontends.sh unpack` (it unpacks into .site-mlir, which later calls keep while the
# machine stays warm), then .whl in the next, which runs bench/device/issue40-frontends.sh.
set -euo pipefail
dest=.mlir
mkdir -p "$dest"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.mlir/' "$exclude" 2>/dev/null || echo '/.mlir/' >> "$exclude"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$work" numba-cuda-mlir==0.6.0
python3 -m zipfile -e "$work"/numba_cuda_mlir-*.whl "$work/unpacked"
find "$work/unpacked" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$work/unpacked/numba_cuda_mlir/_mlir/_mlir_libs/include"
tar -C "$work/unpacked" -cf - . | xz -T0 -9 > "$dest/numba-cuda-mlir.tar.xz"
du -h "$dest/numba-cuda-mlir.tar.xz"
