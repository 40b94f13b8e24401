# Sourced on the GPU machine by the scripts beside it, from the project root with .device/
# carried over: unpacks the bundled binaries and libraries into scratch folders, points the
# loader, the kernel cache and NCCL at what this machine has, and defines $out (logs and
# results: $OUT, or .device/out) and $b (the bundled binaries).
out="${OUT:-.device/out}"
b=/tmp/tilejit-bundle/bin
mkdir -p "$out" /tmp/sys /tmp/tilejit-bundle
tar -C /tmp/tilejit-bundle -xzf .device/bin.tar.gz
for f in .device/debs/*.deb; do dpkg -x "$f" /tmp/sys; done
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/usr/lib/llvm-22/lib:${LD_LIBRARY_PATH:-}
export TILEJIT_CACHE_DIR=${TILEJIT_CACHE_DIR:-/tmp/tilejit-cache} CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# NCCL is too large to bundle: use the machine's, or the one PyTorch's wheels bring.
if [ -z "${TILEJIT_NCCL_LIBRARY:-}" ] && ! ldconfig -p | grep -q libnccl.so.2 &&
   [ ! -e "$CUDA_HOME/lib64/libnccl.so.2" ] && [ ! -e "$CUDA_HOME/lib/libnccl.so.2" ]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$nccl_dir" ] && export TILEJIT_NCCL_LIBRARY="$nccl_dir/libnccl.so.2"
fi
