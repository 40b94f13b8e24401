#include "ops/gemm/gemm_launch.h"

#include <algorithm>
#include <optional>

#include "ops/common/op_kernels.h"
#include "ops/gemm/gemm_kernels.h"

namespace tilejit::ops::gemm_detail {
namespace {

uint32_t grid_dim(int64_t n) { return static_cast<uint32_t>(n); }

GemmConfig clamped(GemmConfig config, const GemmProblem& p) {
  config.split_k = std::clamp<int64_t>(config.split_k, 1, std::max<int64_t>(1, (p.k + config.block_k - 1) / config.block_k));
  // A cluster's CTAs take tiles of one GROUP_M group.
  config.group_m = (config.group_m + config.cluster_m - 1) / config.cluster_m * config.cluster_m;
  return config;
}

// The main kernel of `p` tiled by `config` (writing the slices into `workspace` when given)
// with its arguments, which refer to `operands`' descriptors: built in place, never moved.
struct MainKernel {
  MainKernel(const GemmProblem& p, const GemmConfig& config, const DeviceInfo& device, const Tensor* workspace)
      : operands(gemm_operands(p, config, device)), args(main_arguments(p, operands, workspace)) {
    std::string key = p.features.key() + "/" + operands.key() + (workspace ? "/partial" : "");
    bool partial = workspace != nullptr;
    // Without both operands through TMA there is nothing for a producer warpgroup to do: the
    // kernel is the one without it. Only a producer multicasts: on sm_90 (wgmma), in a pipeline.
    built = config;
    built.warp_specialize = config.warp_specialize && operands.a && operands.b;
    if (!built.warp_specialize || device.cc_major != 9 || built.num_stages < 2) built.cluster_m = 1;
    kernel = op_kernel(key, args, [&](std::vector<ir::Param> params) {
               return main_kernel(p.features, partial, std::move(params));
             }).with(built.constants());
  }
  MainKernel(const MainKernel&) = delete;
  MainKernel& operator=(const MainKernel&) = delete;

  // The launch: grid dims of the config the kernel is built with.
  Dim3 grid(const GemmProblem& p, const DeviceInfo& device) const {
    return {grid_dim(built.programs(p, device)), grid_dim(p.batch), grid_dim(built.split_k)};
  }

  GemmConfig built;
  GemmOperands operands;
  NamedArguments args;
  std::optional<BoundKernel> kernel;
};

// Split-K's second kernel: the slices summed, in tiles of (kSumBlockM, kSumBlockN).
constexpr int64_t kSumBlockM = 32, kSumBlockN = 64;
BoundKernel sum_kernel(const GemmProblem& p, const GemmConfig& config, const NamedArguments& sum) {
  const JitKernel& reduce = op_kernel(p.features.key() + "/sum", sum, [&](std::vector<ir::Param> params) {
    return reduction_kernel(p.features, std::move(params));
  });
  return reduce.with({{"BLOCK_M", kSumBlockM}, {"BLOCK_N", kSumBlockN}, {"SPLIT_K", config.split_k}});
}

}  // namespace

void launch_gemm_with(const GemmProblem& p, GemmConfig config, Stream& s) {
  config = clamped(config, p);
  const GemmFeatures& f = p.features;
  const DeviceInfo& device = s.device().info();
  if (config.split_k == 1) {
    MainKernel main(p, config, device, nullptr);
    main.kernel->launch_args(s, LaunchDims{main.grid(p, device), {}}, main.args.values());
    return;
  }
  Tensor workspace = Tensor::scratch(s, f.accumulator(), {config.split_k, p.batch, p.m, p.n});
  MainKernel main(p, config, device, &workspace);
  main.kernel->launch_args(s, LaunchDims{main.grid(p, device), {}}, main.args.values());

  NamedArguments sum = reduction_arguments(p, workspace);
  Dim3 sum_grid{grid_dim(((p.m + kSumBlockM - 1) / kSumBlockM) * ((p.n + kSumBlockN - 1) / kSumBlockN)),
                grid_dim(p.batch), 1};
  sum_kernel(p, config, sum).launch_args(s, LaunchDims{sum_grid, {}}, sum.values());
}

KernelReport prepare_gemm_with(const GemmProblem& p, GemmConfig config, Device& device, const Tensor& workspace_like) {
  config = clamped(config, p);
  MainKernel main(p, config, device.info(), config.split_k > 1 ? &workspace_like : nullptr);
  KernelReport report = main.kernel->prepare(device, main.args.values())->report();
  if (config.split_k > 1) {
    // The call runs the sum too: its kernel belongs with the config's (a pack of tuned kernels).
    NamedArguments sum = reduction_arguments(p, workspace_like);
    const KernelReport summed = sum_kernel(p, config, sum).prepare(device, sum.values())->report();
    report.cache_entries.insert(report.cache_entries.end(), summed.cache_entries.begin(), summed.cache_entries.end());
  }
  return report;
}

}  // namespace tilejit::ops::gemm_detail
