# Sourced on the GPU machine by the scripts beside it, from the project root with .device/
# carried over: unpacks the bundled binaries and libraries into scratch folders (once per
# machine), points the loader, the kernel cache and NCCL at what this machine has, and defines
#   $b     the bundled binaries
#   $out   what comes back from the machine: $OUT (or .device/out). At most 8 files come back,
#          so only results that ship (packs) and the archive of the logs go there
#   $logs  every log, packed into $out/logs.tar.gz by pack_logs
out="${OUT:-.device/out}"
logs=/tmp/tilejit-logs
b=/tmp/tilejit-bundle/bin
mkdir -p "$out" "$logs" /tmp/sys /tmp/tilejit-bundle
if [ ! -e /tmp/tilejit-bundle/unpacked ]; then
  # Python unpacks xz wherever the xz tool is missing.
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bin.tar.xz /tmp/tilejit-bundle
  for f in .device/debs/*.deb; do dpkg -x "$f" /tmp/sys; done
  touch /tmp/tilejit-bundle/unpacked
fi
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/usr/lib/llvm-22/lib:${LD_LIBRARY_PATH:-}
export TILEJIT_CACHE_DIR=${TILEJIT_CACHE_DIR:-/tmp/tilejit-cache} CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# NCCL is too large to bundle: use the machine's, or the one PyTorch's wheels bring.
if [ -z "${TILEJIT_NCCL_LIBRARY:-}" ] && ! ldconfig -p | grep -q libnccl.so.2 &&
   [ ! -e "$CUDA_HOME/lib64/libnccl.so.2" ] && [ ! -e "$CUDA_HOME/lib/libnccl.so.2" ]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$nccl_dir" ] && export TILEJIT_NCCL_LIBRARY="$nccl_dir/libnccl.so.2"
fi

pack_logs() {  # replaces $out/logs.tar.gz atomically, so that a run cut off mid-pack still returns the last one
  tar -C "$logs" -czf "$out/.logs.tar.gz" . && mv -f "$out/.logs.tar.gz" "$out/logs.tar.gz"
}
