#include "ops/kernels/example_tuning.h"

#include <algorithm>

#include "ops/kernels/example_problems.h"
#include "ops/kernels/registry.h"

namespace tilejit::ops {
namespace {

using autotune::Config;
using autotune::LaunchWork;
using autotune::ProblemShape;
using autotune::TunableKernel;

int64_t cdiv(int64_t n, int64_t block) { return (n + block - 1) / block; }

double threads(const Config& c) { return 32.0 * double(c["num_warps"]); }

TunableKernel example(const std::string& name) {
  TunableKernel op;
  op.name = name;
  op.kernel = [name] { return find_kernel(name).kernel; };
  op.dims = example_dims(name);
  op.problem = [name](Device& device, const ProblemShape& shape,
                      uint64_t seed) -> std::unique_ptr<autotune::TuningProblem> {
    return make_example_problem(name, device, shape, seed);
  };
  return op;
}

TunableKernel vector_add() {
  TunableKernel op = example("vector_add");
  op.space.add("BLOCK", {256, 512, 1024, 2048, 4096}).add("num_warps", {1, 2, 4, 8});
  op.bucketing.power_of_two("n");
  op.work = [](const Config& c, const ProblemShape& s, const DeviceInfo&) {
    int64_t programs = cdiv(s["n"], c["BLOCK"]);
    double elements = double(programs * c["BLOCK"]);
    double values_per_thread = 3.0 * double(c["BLOCK"]) / threads(c);  // x, y and out elements
    return LaunchWork{programs, int(c["num_warps"]), elements, 12.0 * double(s["n"]), values_per_thread};
  };
  return op;
}

// softmax, layernorm, argmax: one program per row, and the whole row must fit in one block
// (the kernels have no loop over columns), so BLOCK_N >= cols.
TunableKernel row_kernel(const std::string& name, double passes_over_row) {
  TunableKernel op = example(name);
  op.space.add("BLOCK_N", {128, 256, 512, 1024, 2048, 4096, 8192, 16384}).add("num_warps", {1, 2, 4, 8, 16});
  op.space.require("BLOCK_N >= cols", [](const Config& c, const ProblemShape& s) { return c["BLOCK_N"] >= s["cols"]; });
  op.bucketing.power_of_two("rows").power_of_two("cols");
  op.work = [passes_over_row](const Config& c, const ProblemShape& s, const DeviceInfo&) {
    double padded = double(s["rows"] * c["BLOCK_N"]);
    return LaunchWork{s["rows"], int(c["num_warps"]), 4 * padded, 8.0 * double(s["rows"] * s["cols"]),
                      passes_over_row * double(c["BLOCK_N"]) / threads(c)};
  };
  // The smallest block that holds a row, about eight elements per thread.
  op.heuristic = [](const ProblemShape& s, const DeviceInfo&) {
    int64_t block = std::max<int64_t>(128, autotune::next_power_of_two(s["cols"]));
    return Config{{{"BLOCK_N", block}, {"num_warps", std::clamp<int64_t>(block / 256, 1, 16)}}};
  };
  return op;
}

// num_stages is declared so the space is complete; the code generator does not pipeline yet,
// so 1 is its only candidate (more would only time the same kernel again).
TunableKernel gemm() {
  TunableKernel op = example("gemm");
  op.space.add("BLOCK_M", {16, 32, 64, 128})
      .add("BLOCK_N", {16, 32, 64, 128})
      .add("BLOCK_K", {8, 16, 32})
      .add("num_warps", {1, 2, 4, 8})
      .add("num_stages", {1});
  op.bucketing.power_of_two("M").power_of_two("N").power_of_two("K");
  op.work = [](const Config& c, const ProblemShape& s, const DeviceInfo&) {
    int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"];
    int64_t programs = cdiv(s["M"], bm) * cdiv(s["N"], bn);
    double k = double(cdiv(s["K"], bk) * bk);
    double flops = 2.0 * double(programs * bm * bn) * k;
    double bytes = 4.0 * (double(programs * (bm + bn)) * k + double(s["M"] * s["N"]));
    return LaunchWork{programs, int(c["num_warps"]), flops, bytes, double(bm * bn + bm * bk + bk * bn) / threads(c)};
  };
  return op;
}

}  // namespace

const std::vector<TunableKernel>& tunable_examples() {
  static const std::vector<TunableKernel> ops = {vector_add(), row_kernel("softmax", 2), row_kernel("layernorm", 3),
                                                 gemm(), row_kernel("argmax", 1)};
  return ops;
}

}  // namespace tilejit::ops
