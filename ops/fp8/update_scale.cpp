// fp8_update_scale: the end of a delayed-scaling step, as one single-program DSL kernel on
// the stream. It reads the history once: each block of entries feeds the amax and is stored,
// rolled, into the state's second history buffer, which then becomes the history. Writing
// into another buffer keeps the roll free of races between the threads that read an entry
// and the threads that overwrite it.
#include <cmath>
#include <limits>
#include <utility>

#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/fp8.h"
#include "ops/fp8/fp8_tiles.h"

namespace tilejit::ops {
namespace {

using namespace tilejit::dsl;

dsl::Kernel update_scale_kernel() {
  return define_kernel("fp8_update_scale", {"history", "rolled", "scale", "len", "fmax", "margin_factor"},
                       {{"BLOCK", 1024}, {"MOST_RECENT", 0}},
                       [](const Constants& c, Ptr<f32> history, Ptr<f32> rolled, Ptr<f32> scale, Scalar<i32> len,
                          Scalar<f32> fmax, Scalar<f32> margin_factor) {
                         Tile newest = load(history);  // history[0]: this step's amax
                         Tile bits = for_range(0, len, c["BLOCK"], scalar(0, i32), [&](Tile start, Tile bits) {
                           Tile idx = start + arange(0, c["BLOCK"]);  // (BLOCK)
                           Tile mask = idx < len;
                           Tile v =
                               load(history + where(idx + 1 < len, idx + 1, 0), mask, 0.0);  // history[(idx + 1) % len]
                           store(rolled + idx, where(idx == 0, 0.0, v), mask);
                           return maximum(bits, amax_bits(v, mask));
                         });
                         Tile amax = c.flag("MOST_RECENT") ? newest : bitcast(bits, f32);
                         const double largest = std::numeric_limits<float>::max();
                         Tile valid = (amax > 0.0) && (amax <= largest);  // false for NaN
                         // An amax so small that the scale leaves f32 gives f32's largest, as
                         // Transformer Engine's update does (inf would quantize 0 to NaN).
                         Tile updated = minimum(fmax / amax * margin_factor, largest);
                         store(scale, where(valid, updated, load(scale)));
                       });
}

}  // namespace

void fp8_update_scale(Fp8ScalingState& state, Stream* stream) {
  const JitKernel& kernel = op_kernel("fp8_update_scale", update_scale_kernel);
  const bool most_recent = state.recipe_.amax_compute_algo == AmaxComputeAlgo::most_recent;
  const auto len = static_cast<int32_t>(state.recipe_.amax_history_len);
  const auto margin_factor = static_cast<float>(std::ldexp(1.0, -state.recipe_.margin));
  Stream& s = OpArguments("fp8_update_scale").stream_for("the scaling state", state.scale_, stream);
  kernel.with({{"MOST_RECENT", most_recent ? 1 : 0}})
      .launch(s, {1}, state.amax_history_, state.rolled_history_, state.scale_, len, fp8_max(state.dtype_),
              margin_factor);
  std::swap(state.amax_history_, state.rolled_history_);
}

}  // namespace tilejit::ops
