#!/usr/bin/env bash
# Bundles a build for the GPU machine (see GPU.md beside the project): the test, bench and
# tool binaries, stripped, into .device/bin.tar.xz, and the Debian packages of every shared
# library they need beyond glibc and libstdc++ into .device/debs (the GPU machine has none of
# them). With libLLVM's package the bundle must stay under what one device command carries
# (64 MiB): xz packs the binaries, which share most of their code, about three times smaller
# than gzip.
# Run after ./scripts/setup.sh; then scripts/device/run_gpu.sh runs on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
# What run_gpu.sh runs; the other tests pass in CI without a GPU.
binaries=(build/tests/gpu/test_gpu build/tests/gpu/test_gpu_collectives build/bench/gemm_bench
          build/bench/runtime_bench build/bench/autotune_bench build/bench/collectives_bench build/bench/proxy_fence_bench
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
rm -f .device/bin.tar.gz  # an earlier gzip bundle would travel too
tar -C .device -cJf .device/bin.tar.xz bin && rm -rf .device/bin
du -sh .device/bin.tar.xz .device/debs
