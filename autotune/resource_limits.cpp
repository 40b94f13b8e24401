#include "autotune/resource_limits.h"

#include <fmt/format.h>

namespace tilejit::autotune {

std::optional<std::string> exceeds_device_limits(const KernelReport& report, const DeviceInfo& device) {
  if (report.shared_bytes > device.shared_per_block_optin)
    return fmt::format("needs {} bytes of shared memory per CTA; {} allows {}", report.shared_bytes, device.name,
                       device.shared_per_block_optin);
  if (report.num_threads > kMaxThreadsPerCta)
    return fmt::format("needs {} threads per CTA; at most {}", report.num_threads, kMaxThreadsPerCta);
  if (report.registers > kMaxRegistersPerThread)
    return fmt::format("needs {} registers per thread; at most {}", report.registers, kMaxRegistersPerThread);
  if (report.registers > 0 && int64_t(report.registers) * report.num_threads > kRegistersPerCta)
    return fmt::format("needs {} registers per CTA ({} threads x {}); at most {}",
                       int64_t(report.registers) * report.num_threads, report.num_threads, report.registers,
                       kRegistersPerCta);
  return std::nullopt;
}

}  // namespace tilejit::autotune
