#include "ops/scaled_dot/k_major_copy.h"

#include <limits>

#include <fmt/format.h>

#include "ops/common/op_kernels.h"

namespace tilejit::ops::scaled_dot_detail {
namespace {

using namespace tilejit::dsl;

// Each program moves a (BLOCK, BLOCK) tile: read along N, 16 bytes a thread, and written along
// K after a trip through shared memory (trans), 16 bytes a thread again.
constexpr int64_t kBlock = 64;

// Break-even, estimated from the SASS of the fp8 MX loop (sm_90a, 128 x 128 tiles, a block of
// 32 along K a step): transposing B in the loop costs about 30 instructions on each of 8 warps
// and a barrier more per step than reading it along K (206 against 176), some 60 issue clocks of
// an SM per (128 rows, 32 K, 128 columns); moving that much of the rhs through memory ahead
// (4 KiB each way at about 13 bytes a clock per SM of an H100's 3.3 TB/s) costs about 630, so
// the copy pays from about 1300 rows. About three times that leaves room for the estimate's
// error, and a large rhs keeps the copy's launch a small part of it.
constexpr int64_t kRowsForTransposingAhead = 4096;
constexpr int64_t kRhsElementsForTransposingAhead = int64_t{1} << 24;

Kernel k_major_copy_kernel(DType dtype) {
  return define_op_kernel(
      fmt::format("scaled_dot_k_major_copy_{}", dtype_name(dtype)),
      {pointer_param("src", dtype), pointer_param("dst", dtype), scalar_param("K", DType::i64),
       scalar_param("N", DType::i64), scalar_param("src_sb", DType::i64), scalar_param("src_sk", DType::i64),
       scalar_param("tiles_n", DType::i32), scalar_param("tiles_per_batch", DType::i32)},
      {{"BLOCK", kBlock}}, [](const Constants& c, std::span<const Tile> p) {
        const Tile &src = p[0], &dst = p[1], &K = p[2], &N = p[3], &sb = p[4], &sk = p[5];
        const Tile &tiles_n = p[6], &tiles_per_batch = p[7];
        const int64_t block = c["BLOCK"];
        Tile pid = program_id(0);
        Tile batch = cast(pid / tiles_per_batch, i64), tile = pid % tiles_per_batch;
        Tile ks = cast(tile / tiles_n, i64) * block + cast(arange(0, block), i64);  // (BLOCK)
        Tile ns = cast(tile % tiles_n, i64) * block + cast(arange(0, block), i64);  // (BLOCK)
        Tile tile_kn = load(src + batch * sb + expand_dims(ks, 1) * sk + expand_dims(ns, 0),
                            expand_dims(ks < K, 1) && expand_dims(ns < N, 0));  // (BLOCK k, BLOCK n)
        // The store's mask is formed in its own orientation: a transposed mask would take a trip
        // through shared memory as well.
        store(dst + batch * (K * N) + expand_dims(ns, 1) * K + expand_dims(ks, 0), trans(tile_kn),
              expand_dims(ns < N, 1) && expand_dims(ks < K, 0));
      });
}

int64_t tiles(int64_t n) { return (n + kBlock - 1) / kBlock; }

}  // namespace

bool transposes_rhs_ahead(const ScaledDotPlan& plan, const GroupedView& rhs, int64_t m, int cc) {
  const int64_t batch = rhs.size[0], k = rhs.size[1], n = rhs.size[2];
  const bool along_n = rhs.stride[2] == 1 && rhs.stride[1] != 1;
  const bool fp8_products = !plan.compute && plan.mode != ScaleMode::operand_tiles;
  return cc == 90 && fp8_products && along_n && m >= kRowsForTransposingAhead &&
         k * n >= kRhsElementsForTransposingAhead &&
         batch * tiles(k) * tiles(n) <= std::numeric_limits<int32_t>::max();
}

GroupedView k_major_copy(const GroupedView& rhs, Stream& stream) {
  const int64_t batch = rhs.size[0], k = rhs.size[1], n = rhs.size[2];
  TJ_CHECK(rhs.stride[2] == 1);
  const DType dtype = rhs.storage.dtype();
  Tensor copy = Tensor::scratch(stream, dtype, {batch, n, k});
  const int64_t programs = batch * tiles(k) * tiles(n);
  TJ_CHECK(programs <= std::numeric_limits<int32_t>::max());
  if (programs > 0) {
    const JitKernel& kernel = op_kernel(fmt::format("scaled_dot/k_major_copy/{}", dtype_name(dtype)),
                                        [&] { return k_major_copy_kernel(dtype); });
    kernel.with().launch(stream, {static_cast<uint32_t>(programs)}, rhs.storage, copy, k, n, rhs.stride[0],
                         rhs.stride[1], static_cast<int32_t>(tiles(n)), static_cast<int32_t>(tiles(k) * tiles(n)));
  }
  return GroupedView{copy, {batch, k, n}, {n * k, 1, k}, true};
}

}  // namespace tilejit::ops::scaled_dot_detail
