#include "autotune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace tilejit::autotune {
namespace {

// Public peak figures of one GPU per architecture: FP32 FLOP per clock per SM, dense 16-bit
// tensor-core FLOP per clock per SM, clock, DRAM bandwidth and SM count (to get bandwidth per
// SM, which scales to the device's SM count).
struct ArchPeaks {
  std::string_view arch;
  double flops_per_clock_per_sm, tensor_flops_per_clock_per_sm, clock_ghz, dram_gb_per_s;
  int sm_count;
};
constexpr ArchPeaks kPeaks[] = {
    {"sm_80", 128, 2048, 1.41, 2039, 108},    // A100 SXM
    {"sm_89", 256, 1024, 2.52, 864, 142},     // L40S
    {"sm_90a", 256, 4096, 1.98, 3350, 132},   // H100 SXM
    {"sm_100a", 256, 8192, 1.90, 8000, 148},  // B200
};

const ArchPeaks& peaks_for(std::string_view arch) {
  for (const ArchPeaks& p : kPeaks)
    if (p.arch == arch) return p;
  return kPeaks[2];
}

constexpr int kMaxWarpsPerSm = 64;
constexpr int kMaxCtasPerSm = 32;
constexpr double kWarpsToHideLatency = 16;    // resident warps per SM below which memory latency shows
constexpr double kWaveOverheadMs = 0.002;     // CTA launch and prologue, per wave
constexpr double kLaunchOverheadMs = 0.003;
constexpr double kWaitClocks = 300;            // a wait's synchronisation and the bookkeeping around it

}  // namespace

double estimate_ms(const LaunchWork& work, const DeviceInfo& device) {
  const ArchPeaks& peaks = peaks_for(device.arch);
  int sms = std::max(1, device.sm_count);
  int warps = std::max(1, work.num_warps);
  int64_t programs = std::max<int64_t>(1, work.programs);

  int ctas_per_sm = std::clamp(kMaxWarpsPerSm / warps, 1, kMaxCtasPerSm);
  int64_t concurrent = int64_t(sms) * ctas_per_sm;
  int64_t waves = (programs + concurrent - 1) / concurrent;
  double busy_sms = std::min<double>(sms, double(programs));  // a grid smaller than the device leaves SMs idle
  double quantization = double(waves * concurrent) / double(std::max(programs, concurrent));

  double clocks_per_ms = peaks.clock_ghz * 1e6 * busy_sms;
  double tensor_flops = std::clamp(work.tensor_flops, 0.0, work.flops);
  double compute_ms = (work.flops - tensor_flops) / (peaks.flops_per_clock_per_sm * clocks_per_ms) +
                      tensor_flops / (peaks.tensor_flops_per_clock_per_sm * clocks_per_ms);
  double bytes_per_ms = peaks.dram_gb_per_s * 1e6 / peaks.sm_count * busy_sms;
  double roofline_ms = std::max(compute_ms, work.bytes / bytes_per_ms);

  double resident_warps = double(std::min<int64_t>(programs / sms + 1, ctas_per_sm)) * warps;
  double latency = std::max(1.0, kWarpsToHideLatency / resident_warps);
  double spills = std::pow(std::max(1.0, work.values_per_thread / std::max(1.0, work.register_values)), 2);
  double waits_ms = double(waves * work.waits_per_program) * kWaitClocks / (peaks.clock_ghz * 1e6);

  return roofline_ms * std::max(1.0, quantization) * latency * spills + waits_ms + double(waves) * kWaveOverheadMs +
         kLaunchOverheadMs;
}

}  // namespace tilejit::autotune
