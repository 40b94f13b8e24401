#include "autotune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace tilejit::autotune {
namespace {

// Public peak figures of one GPU per architecture: FP32 FLOP per clock per SM, dense 16-bit
// tensor-core FLOP per clock per SM, special-function (MUFU) results per clock per SM, clock,
// DRAM bandwidth, L2 bandwidth (rough: two and a half to three times DRAM's) and SM count (to get
// bandwidths per SM, which scale to the device's SM count).
struct ArchPeaks {
  std::string_view arch;
  double flops_per_clock_per_sm, tensor_flops_per_clock_per_sm, special_per_clock_per_sm, clock_ghz, dram_gb_per_s,
      l2_gb_per_s;
  int sm_count;
};
constexpr ArchPeaks kPeaks[] = {
    {"sm_80", 128, 2048, 16, 1.41, 2039, 5000, 108},     // A100 SXM
    {"sm_89", 256, 1024, 16, 2.52, 864, 2500, 142},      // L40S
    {"sm_90a", 256, 4096, 16, 1.98, 3350, 10000, 132},   // H100 SXM
    {"sm_100a", 256, 8192, 16, 1.90, 8000, 20000, 148},  // B200
};

const ArchPeaks& peaks_for(std::string_view arch) {
  for (const ArchPeaks& p : kPeaks)
    if (p.arch == arch) return p;
  return kPeaks[2];
}

constexpr int kMaxWarpsPerSm = 64;
constexpr int kMaxCtasPerSm = 32;
constexpr double kRegisterFile = 65536;        // 32-bit registers per SM
constexpr double kMaxThreadRegisters = 255;
constexpr double kWarpsToHideLatency = 16;    // resident warps per SM below which memory latency shows
constexpr double kCopyLatencyClocks = 1000;   // from a copy's issue to its data in shared memory
constexpr double kWaveOverheadMs = 0.002;     // CTA launch and prologue, per wave
constexpr double kLaunchOverheadMs = 0.003;
constexpr double kWaitClocks = 300;            // a wait's synchronisation and the bookkeeping around it

// CTAs an SM holds at once: as many as its warp slots allow and its register file, at about
// kMaxThreadRegisters per thread for register_values live values.
int ctas_per_sm(const LaunchWork& work) {
  const int warps = std::max(1, work.num_warps);
  const double registers =
      std::clamp(work.values_per_thread * kMaxThreadRegisters / std::max(1.0, work.register_values), 32.0,
                 kMaxThreadRegisters);
  const int by_registers = int(kRegisterFile / (32.0 * warps * registers));
  return std::clamp(std::min(kMaxWarpsPerSm / warps, by_registers), 1, kMaxCtasPerSm);
}

}  // namespace

double estimate_ms(const LaunchWork& work, const DeviceInfo& device) {
  const ArchPeaks& peaks = peaks_for(device.arch);
  int sms = std::max(1, device.sm_count);
  int warps = std::max(1, work.num_warps);
  int64_t programs = std::max<int64_t>(1, work.programs);

  int ctas = ctas_per_sm(work);
  int64_t concurrent = int64_t(sms) * ctas;
  int64_t waves = (programs + concurrent - 1) / concurrent;
  double busy_sms = std::min<double>(sms, double(programs));  // a grid smaller than the device leaves SMs idle
  double quantization = double(waves * concurrent) / double(std::max(programs, concurrent));

  // Clocks of one SM's pipes the launch's work takes.
  double tensor_flops = std::clamp(work.tensor_flops, 0.0, work.flops);
  double work_clocks = (work.flops - tensor_flops) / peaks.flops_per_clock_per_sm +
                       tensor_flops / (peaks.tensor_flops_per_clock_per_sm * std::max(1e-3, work.tensor_rate)) +
                       std::clamp(work.special_exposed, 0.0, 1.0) * work.special_ops / peaks.special_per_clock_per_sm;
  double clocks_per_ms = peaks.clock_ghz * 1e6;
  double compute_ms = work_clocks / (clocks_per_ms * busy_sms);
  double share = busy_sms / peaks.sm_count * 1e6;  // of the device's bandwidths, per ms
  double roofline_ms = std::max({compute_ms, work.bytes / (peaks.dram_gb_per_s * share),
                                 work.l2_bytes / (peaks.l2_gb_per_s * share)});

  // A pipelined loop hides a copy's latency behind the steps ahead of it (stages - 1 of this
  // program's, each shared with the SM's other CTAs) and the other CTAs' work; what is left
  // stalls each step. A kernel without such a loop relies on its resident warps.
  double latency = 1, stalls_ms = 0;
  if (work.copy_steps_per_program > 0) {
    double step_clocks = work_clocks / double(programs * work.copy_steps_per_program);
    double hidden = (double(std::max(1, work.stages)) * ctas - 1) * step_clocks;
    stalls_ms =
        double(waves * work.copy_steps_per_program) * std::max(0.0, kCopyLatencyClocks - hidden) / clocks_per_ms;
  } else {
    double resident_warps = double(std::min<int64_t>(programs / sms + 1, ctas)) * warps;
    latency = std::max(1.0, kWarpsToHideLatency / resident_warps);
  }
  double spills = std::pow(std::max(1.0, work.values_per_thread / std::max(1.0, work.register_values)), 2);
  double waits_ms = double(waves * work.waits_per_program) * kWaitClocks / clocks_per_ms;

  double follow_up_ms =
      work.follow_up_bytes > 0 ? work.follow_up_bytes / (peaks.dram_gb_per_s * 1e6) + kLaunchOverheadMs : 0;

  return roofline_ms * std::max(1.0, quantization) * latency * spills + stalls_ms + waits_ms +
         double(waves) * kWaveOverheadMs + kLaunchOverheadMs + follow_up_ms;
}

}  // namespace tilejit::autotune
