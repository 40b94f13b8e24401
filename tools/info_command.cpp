// `tilejit info`: devices (or that there is no GPU), driver, tilejit and LLVM versions, and
// the kernel cache's location and size. Exits 0 without a GPU.
#include <fmt/format.h>

#include "codegen/compiler.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "runtime/version.h"
#include "tools/commands.h"

namespace tilejit::tools {
namespace {

void print_device(const DeviceInfo& d) {
  fmt::print("  {}:{} {}\n", device_kind_name(d.kind), d.ordinal, d.name);
  fmt::print("      target {}, compute capability {}.{}, {} {}, {} KiB shared memory per block (opt-in)", d.arch, d.cc_major,
             d.cc_minor, d.sm_count, d.kind == DeviceKind::cuda ? "SMs" : "host threads", d.shared_per_block_optin / 1024);
  if (d.l2_bytes) fmt::print(", {} MiB L2", d.l2_bytes >> 20);
  fmt::print(", {:.1f} GiB memory\n", d.memory_bytes / double(1 << 30));
}

int run_info() {
  fmt::print("tilejit {} (LLVM {})\n", tilejit_version(), codegen::llvm_version());
  int driver = cuda_driver_version();
  if (driver) fmt::print("CUDA driver: {}.{}\n", driver / 1000, driver % 1000 / 10);
  else fmt::print("CUDA driver: none ({})\n", cuda_driver_status());
  int gpus = Device::cuda_device_count();
  fmt::print("devices:\n");
  if (gpus == 0) fmt::print("  no GPU: kernels run in the emulator\n");
  for (int i = 0; i < gpus; ++i) print_device(Device::cuda(i).info());
  print_device(Device::emu().info());
  KernelCache& cache = KernelCache::global();
  if (!cache.enabled()) {
    fmt::print("kernel cache: disabled (TILEJIT_CACHE_DISABLE)\n");
  } else if (!cache.on_disk()) {
    fmt::print("kernel cache: in memory only ({} is not usable)\n", cache.directory());
  } else {
    CacheStats s = cache.stats();
    fmt::print("kernel cache: {} ({} entries, {:.1f} MiB)\n", cache.directory(), s.entries, s.bytes / double(1 << 20));
  }
  return 0;
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print devices, driver, versions and the kernel cache");
  return [cmd]() { return cmd->parsed() ? run_info() : -1; };
}

}  // namespace tilejit::tools
