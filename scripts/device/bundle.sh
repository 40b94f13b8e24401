#!/usr/bin/env bash
# Bundles a build for the GPU machine (see GPU.md beside the project): the test, bench and
# tool binaries, stripped, into .device/bin.tar.gz, and the Debian packages of every shared
# library they need beyond glibc and libstdc++ into .device/debs (the GPU machine has none of
# them). The binaries travel compressed (gzip: every machine unpacks it): with libLLVM's package the
# bundle must stay under what one device command carries (64 MiB).
# Run after ./scripts/setup.sh; then scripts/device/run_gpu.sh runs on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
binaries=(build/tests/gpu/test_gpu build/tests/gpu/test_gpu_collectives build/tests/emu/test_emu
          build/tests/runtime/test_runtime build/tests/autotune/test_autotune build/tests/autotune/test_autotune_emu
          build/bench/runtime_bench build/bench/compile_bench build/bench/autotune_bench
          build/bench/collectives_bench build/bench/gemm_bench build/tests/ops/test_gemm
          build/tools/tilejit build/examples/demo build/examples/tp_mlp)
rm -rf .device/bin && mkdir -p .device/bin .device/debs
for b in "${binaries[@]}"; do
  cp "$b" .device/bin/ && strip .device/bin/"$(basename "$b")"
done
# The packages owning the libraries the binaries load, except what every Linux has.
libraries=$(ldd .device/bin/* | awk '/=> \// {print $3}' | sort -u |
            grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|ld-linux-x86-64|libpthread|libdl|librt)\.so')
packages=$(for l in $libraries; do dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l"; done | cut -d: -f1 | sort -u)
(cd .device/debs && rm -f ./*.deb && apt-get download $packages >/dev/null)
tar -C .device -czf .device/bin.tar.gz bin && rm -rf .device/bin
du -sh .device/bin.tar.gz .device/debs
