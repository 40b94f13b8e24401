// Pruning by what a compiled kernel needs: a configuration whose kernel asks for more shared
// memory than a CTA may have, more threads than a CTA may have, or (when the assembler
// reported them) more registers than a thread or a CTA may have, cannot run on the device.
// Such configs are recorded and skipped before any timing.
#pragma once

#include <optional>
#include <string>

#include "runtime/device.h"

namespace tilejit::autotune {

// Every architecture tilejit targets (sm_80 to sm_100a) has these per-CTA limits.
inline constexpr int kMaxThreadsPerCta = 1024;
inline constexpr int kMaxRegistersPerThread = 255;
inline constexpr int kRegistersPerCta = 64 * 1024;

// Why the kernel `report` describes cannot run on `device`; nullopt when it can.
std::optional<std::string> exceeds_device_limits(const KernelReport& report, const DeviceInfo& device);

}  // namespace tilejit::autotune
