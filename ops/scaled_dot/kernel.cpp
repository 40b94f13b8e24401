#include "ops/scaled_dot/kernel.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "ops/common/f32_dot.h"
#include "ops/common/named_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/scaled_dot/k_major_copy.h"

namespace tilejit::ops::scaled_dot_detail {
namespace {

using namespace tilejit::dsl;

// Every value of both dtypes is a value of `wide`.
bool both_within(DType a, DType b, DType wide) { return (is_fp8(a) || a == wide) && (is_fp8(b) || b == wide); }

struct Compute {
  std::optional<DType> dtype;
  Precision precision = Precision::tf32;
  int64_t mma_k;      // the tensor cores' K for these operands: BLOCK_K must reach it
  int64_t max_block_k;
};

// The operand types dot sees when the scales stay out of the operands: the stored ones where
// the tensor cores take them, else the narrowest type that holds both exactly.
Compute stored_compute(DType lhs, DType rhs, int cc) {
  if (is_fp8(lhs) && is_fp8(rhs) && cc >= 89) return {std::nullopt, Precision::tf32, 32, 64};
  if (both_within(lhs, rhs, DType::bf16)) return {DType::bf16, Precision::tf32, 16, 64};
  if (both_within(lhs, rhs, DType::f16)) return {DType::f16, Precision::tf32, 16, 64};
  if (lhs != DType::f32 && rhs != DType::f32) return {DType::f32, Precision::tf32, 8, 32};  // tf32 holds f16 and bf16
  return {DType::f32, Precision::tf32x3, 8, 32};
}

// The operand types dot sees when the scales are multiplied into the operand tiles.
Compute scaled_compute(DType lhs, DType rhs) {
  if (both_within(lhs, rhs, DType::bf16)) return {DType::bf16, Precision::tf32, 16, 32};
  return {DType::f32, Precision::tf32x3, 8, 32};
}

// Whether the scales may multiply sums of raw products instead of the operands. The products of
// fp8 and f16 values stay well inside f32's normal range (2^-48 to 2^32), so either order
// gives the same sum; with a bf16 or f32 operand a product may leave the range where a scale
// (its own, 2^-80 scaled by 2^80, or the other's) brings the result back.
bool products_stay_in_range(DType lhs, DType rhs) {
  auto narrow = [](DType d) { return is_fp8(d) || d == DType::f16; };
  return narrow(lhs) && narrow(rhs);
}

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// log2(v) for a power of two, else -1.
int power_of_two_log2(int64_t v) { return v > 0 && (v & (v - 1)) == 0 ? __builtin_ctzll(static_cast<uint64_t>(v)) : -1; }

// Blocks of K per step of the loop that bounds a program's scales (partial_products).
constexpr int64_t kScaleChunk = 32;
// K of the dot that forms a block's factors: a bf16 tensor-core instruction's.
constexpr int64_t kFactorK = 16;

// partial x lhs_scale x rhs_scale, (BLOCK_M, BLOCK_N), with ls (BLOCK_M, 1) and rs (1, BLOCK_N)
// in f32. One factor, lhs_scale x rhs_scale: a sum scaled by a huge lhs scale and then by a
// tiny rhs one would pass f32's range on the way to a result inside it. Where the factor itself
// leaves f32's normal range (2^100 x 2^30), the sum takes the scales one at a time instead, the
// one that moves it towards that range first. A scale of 0 makes its side's products 0: the
// factor 0 stands (one at a time, a huge other scale would take the sum to inf first, and inf x
// 0 is NaN).
Tile checked_scaled_sum(const Tile& partial, const Tile& ls, const Tile& rs) {
  Tile factor = ls * rs;
  Tile magnitude = abs(factor);
  Tile normal = (magnitude >= std::numeric_limits<float>::min() && magnitude <= std::numeric_limits<float>::max()) ||
                ls == 0.0 || rs == 0.0;
  Tile l_smaller = abs(ls) <= abs(rs);
  Tile first = where(magnitude > 1.0, where(l_smaller, ls, rs), where(l_smaller, rs, ls));
  Tile second = where(magnitude > 1.0, where(l_smaller, rs, ls), where(l_smaller, ls, rs));
  return where(normal, partial * factor, partial * first * second);
}

// A step's scales (the scale's dtype) and where they are: a masked e8m0 load reads byte 0,
// 2^-127, which must not count.
using ScaleSlab = std::pair<Tile, Tile>;

// The largest and the smallest nonzero magnitude (NaN as inf) of a program's scales along one
// side: `blocks` blocks of K, kScaleChunk a step, `slab(j)` the scales of blocks j (kScaleChunk,
// `index` dtype) in a tile of `shape` whose loads are contiguous along the blocks or the columns.
std::pair<Tile, Tile> magnitude_bounds(const Tile& blocks, const Shape& shape, DType index,
                                       const std::function<ScaleSlab(const Tile&)>& slab) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Tile> b = for_range(0, blocks, kScaleChunk, {zeros(shape, DType::f32), full(shape, inf, DType::f32)},
                                  [&](Tile i, std::vector<Tile> b) -> std::vector<Tile> {
                                    auto [scales, present] = slab(cast(arange(0, kScaleChunk), index) + i);
                                    Tile m = abs(cast(scales, DType::f32));
                                    m = where(present, where(m != m, inf, m), 0.0);
                                    return {maximum(b[0], m), minimum(b[1], where(m == 0.0, inf, m))};
                                  });
  return {max(max(b[0], 1), 0), min(min(b[1], 1), 0)};
}

// A scale's f32 value where it is a normal number: an e8m0 byte read as an f32 exponent (bytes 0
// and 255, 2^-127 and NaN, need cast's care; the bounds keep them out of the loop that uses this).
Tile normal_scale_value(const Tile& stored) {
  if (stored.dtype() != DType::e8m0) return cast(stored, DType::f32);
  return bitcast((cast(bitcast(stored, DType::i8), DType::i32) & 255) << 23, DType::f32);
}

// Everything the kernel's code depends on; the key of its memoized JitKernel.
struct KernelSpec {
  DType lhs, rhs, out;
  std::optional<DType> lhs_scale, rhs_scale;
  ScaleMode mode;
  std::optional<DType> compute;
  Precision precision;
  DType index;  // i32, or i64 when an offset within one batch may pass 2^31
  // partial_products with groups of several K tiles, whose products are added one by one
  // (f32_dot); a group of one tile is one dot, its product added to the accumulator anyway,
  // which saves holding a third accumulator tile.
  bool group_of_tiles = false;
  // log2 of a scale block that is a power of two (MX's 32), or -1: the K index of a scale is
  // then a shift instead of a division in every step (for every column of K when the scales
  // multiply the operand tiles).
  int lhs_block_shift = -1, rhs_block_shift = -1;
  bool factors_on_tensor_cores = false;  // ScaledDotPlan's
  // rhs with a unit stride along K (stored (N, K), the order 8-bit tensor-core operands are read
  // in): its tiles load along K, (BLOCK_N, BLOCK_K), and reach the dot transposed.
  bool rhs_k_major = false;

  std::string key() const {
    auto name = [](std::optional<DType> d) { return d ? std::string(dtype_name(*d)) : std::string("none"); };
    return fmt::format("scaled_dot/{}x{}/scales_{}x{}/{}/{}/{}_{}/{}/g{}/shifts{}_{}/f{}/k{}", dtype_name(lhs),
                       dtype_name(rhs), name(lhs_scale), name(rhs_scale), dtype_name(out), scale_mode_name(mode),
                       name(compute), static_cast<int>(precision), dtype_name(index), group_of_tiles,
                       lhs_block_shift, rhs_block_shift, factors_on_tensor_cores, rhs_k_major);
  }
};

Kernel scaled_dot_kernel(const KernelSpec& spec, const std::vector<ir::Param>& params) {
  return define_op_kernel(
      "scaled_dot", params, {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}},
      [spec, params](const Constants& c, std::span<const Tile> tiles) {
        NamedTiles arg(params, tiles);
        const int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"];
        auto index = [&](const Tile& t) { return cast(t, spec.index); };
        const Tile &M = arg["M"], &N = arg["N"], &K = arg["K"];

        Tile pid = program_id(0);
        Tile batch = cast(pid / arg["tiles_per_batch"], i64);
        Tile tile = pid % arg["tiles_per_batch"];
        Tile rows = index(tile / arg["tiles_n"]) * bm + index(arange(0, bm));  // (BLOCK_M)
        Tile cols = index(tile % arg["tiles_n"]) * bn + index(arange(0, bn));  // (BLOCK_N)
        Tile ks = index(arange(0, bk));                                        // (BLOCK_K)
        Tile row_ok = expand_dims(rows < M, 1);                                // (BLOCK_M, 1)
        Tile col_ok = expand_dims(cols < N, 0);                                // (1, BLOCK_N)

        // Unit strides arrive as arguments equal to 1, which the specialization folds: the
        // loads along them are contiguous.
        Tile a_ptrs = arg["lhs"] + batch * arg["lhs_sb"] + expand_dims(rows, 1) * arg["lhs_sm"] +
                      expand_dims(ks, 0) * arg["lhs_sk"];  // (BLOCK_M, BLOCK_K)
        // (BLOCK_N, BLOCK_K) for a K-major rhs, else (BLOCK_K, BLOCK_N).
        Tile rhs = arg["rhs"] + batch * arg["rhs_sb"];
        Tile b_ptrs = spec.rhs_k_major
                          ? rhs + expand_dims(cols, 1) * arg["rhs_sn"] + expand_dims(ks, 0) * arg["rhs_sk"]
                          : rhs + expand_dims(ks, 1) * arg["rhs_sk"] + expand_dims(cols, 0) * arg["rhs_sn"];
        // The operand tiles at K offset k.
        auto a_tile = [&](const Tile& k, const Tile& mask) {
          return load(a_ptrs + k * arg["lhs_sk"], mask);  // (BLOCK_M, BLOCK_K)
        };
        // K past the end masked by `k_in` (BLOCK_K) where given; the mask is formed in the loaded
        // tile's own orientation.
        auto b_tile = [&](const Tile& k, const std::optional<Tile>& k_in) {  // (BLOCK_K, BLOCK_N)
          if (spec.rhs_k_major) {
            Tile mask = expand_dims(cols < N, 1);
            if (k_in) mask = mask && expand_dims(*k_in, 0);
            return trans(load(b_ptrs + k * arg["rhs_sk"], mask));
          }
          return load(b_ptrs + k * arg["rhs_sk"], k_in ? expand_dims(*k_in, 1) && col_ok : col_ok);
        };
        auto for_dot = [&](const Tile& t) { return spec.compute ? cast(t, *spec.compute) : t; };
        Tile ls_base = spec.lhs_scale ? arg["lhs_scale"] + batch * arg["ls_sb"] : Tile();
        Tile rs_base = spec.rhs_scale ? arg["rhs_scale"] + batch * arg["rs_sb"] : Tile();
        Tile zero = zeros({bm, bn}, f32);

        // The scale block of K index k.
        auto scale_step = [&](const Tile& k, const char* block, int shift) {
          return shift >= 0 ? k >> shift : k / arg[block];
        };
        // The scales of the rows (columns) at K index k: where they are, and as stored.
        auto row_scale_ptrs = [&](const Tile& k) {  // (BLOCK_M)
          return ls_base + rows * arg["ls_sm"] + scale_step(k, "lhs_block", spec.lhs_block_shift) * arg["ls_sk"];
        };
        auto col_scale_ptrs = [&](const Tile& k) {  // (BLOCK_N)
          return rs_base + scale_step(k, "rhs_block", spec.rhs_block_shift) * arg["rs_sk"] + cols * arg["rs_sn"];
        };
        auto row_scale_stored = [&](const Tile& k) { return load(row_scale_ptrs(k), rows < M); };
        auto col_scale_stored = [&](const Tile& k) { return load(col_scale_ptrs(k), cols < N); };
        Tile acc;
        if (spec.mode == ScaleMode::partial_products) {
          // K % group == 0 and group % BLOCK_K == 0: no K masks.
          const Tile& group = arg["group"];
          // A group of one K tile steps by the literal BLOCK_K, which the loop pipeline stages.
          const Tile step = spec.group_of_tiles ? group : scalar(static_cast<double>(bk), spec.index);
          auto partial_at = [&](const Tile& kg) {  // (BLOCK_M, BLOCK_N)
            auto a_at = [&](const Tile& k) { return for_dot(a_tile(k, row_ok)); };
            auto b_at = [&](const Tile& k) { return for_dot(b_tile(k, std::nullopt)); };
            return spec.group_of_tiles ? for_range(kg, kg + group, bk, zero,
                                                   [&](Tile k, Tile sum) {
                                                     return f32_dot(a_at(k), b_at(k), sum, spec.precision);
                                                   })
                                       : dot(a_at(kg), b_at(kg), zero, spec.precision);
          };
          auto row_scale = [&](const Tile& kg) { return cast(row_scale_stored(kg), f32); };
          auto col_scale = [&](const Tile& kg) { return cast(col_scale_stored(kg), f32); };
          if (!spec.lhs_scale || !spec.rhs_scale) {
            acc = for_range(0, K, step, zero, [&](Tile kg, Tile acc) {
              Tile scale = spec.lhs_scale ? expand_dims(row_scale(kg), 1) : expand_dims(col_scale(kg), 0);
              return fma(partial_at(kg), scale, acc);
            });
          } else {
            // Checking each factor costs a dozen instructions per element beside its one
            // multiply-add (checked_scaled_sum). So the program first bounds its scales'
            // magnitudes: when each side's lie within f32's normal range, the largest factor is
            // finite and the smallest normal (rounding is monotonic, so every factor between them
            // is too), the loop adds partial x factor alone, as the check would choose.
            Tile lhs_blocks = K / arg["lhs_block"], rhs_blocks = K / arg["rhs_block"];
            auto [l_max, l_min] = magnitude_bounds(lhs_blocks, {bm, kScaleChunk}, spec.index, [&](const Tile& j) {  // (BLOCK_M, chunk)
              Tile present = expand_dims(rows < M, 1) && expand_dims(j < lhs_blocks, 0);
              return ScaleSlab{load(ls_base + expand_dims(rows * arg["ls_sm"], 1) + expand_dims(j * arg["ls_sk"], 0), present),
                               present};
            });
            auto [r_max, r_min] = magnitude_bounds(rhs_blocks, {kScaleChunk, bn}, spec.index, [&](const Tile& j) {  // (chunk, BLOCK_N)
              Tile present = expand_dims(j < rhs_blocks, 1) && expand_dims(cols < N, 0);
              return ScaleSlab{load(rs_base + expand_dims(j * arg["rs_sk"], 1) + expand_dims(cols * arg["rs_sn"], 0), present),
                               present};
            });
            // The operands of a block's factors lhs_scale x rhs_scale on the tensor cores: the
            // rows' scales in column 0 of a (BLOCK_M, 16) tile, the columns' in row 0 of a (16,
            // BLOCK_N) one, zeros elsewhere (masked-off loads read byte 0, which decodes to 0),
            // as bf16. Their product comes out in the partial product's layout, without the
            // multiply per element that doubled the instructions applying the factors. Exact:
            // each scale (an e8m0 power of two, or a bf16 value) is a normal bf16 value, the
            // product of two 8-bit significands fits f32's 24 bits, and the bounds keep it
            // normal. Each iteration loads the next block's (none past K, `present`) and
            // decodes them last, so that the loads' latency passes under its work.
            auto factor_scales = [&](const Tile& kg, const Tile& present) -> std::vector<Tile> {
              Tile first = arange(0, kFactorK) == 0 && present;
              return {load(broadcast_to(expand_dims(row_scale_ptrs(kg), 1), {bm, kFactorK}),
                           row_ok && expand_dims(first, 0)),  // (BLOCK_M, 16)
                      load(broadcast_to(expand_dims(col_scale_ptrs(kg), 0), {kFactorK, bn}),
                           expand_dims(first, 1) && col_ok)};  // (16, BLOCK_N)
            };
            auto factor_operand = [](const Tile& loaded) { return cast(normal_scale_value(loaded), bf16); };
            auto normal_scales_loop = [&]() -> Tile {
              if (!spec.factors_on_tensor_cores)
                return for_range(0, K, step, zero, [&](Tile kg, Tile acc) {
                  // Each thread of the accumulator holds 32 columns: the column scales are
                  // decoded once each and moved there.
                  Tile factor = expand_dims(normal_scale_value(row_scale_stored(kg)), 1) *
                                expand_dims(once_per_element(normal_scale_value(col_scale_stored(kg))), 0);
                  return fma(partial_at(kg), factor, acc);
                });
              std::vector<Tile> first = factor_scales(scalar(0, spec.index), K > 0);
              return for_range(0, K, step, {zero, factor_operand(first[0]), factor_operand(first[1])},
                               [&](Tile kg, std::vector<Tile> carried) -> std::vector<Tile> {
                                 std::vector<Tile> next = factor_scales(kg + step, kg + step < K);
                                 Tile factor = dot(carried[1], carried[2], zero);  // (BLOCK_M, BLOCK_N)
                                 Tile acc = fma(partial_at(kg), factor, carried[0]);
                                 return {acc, factor_operand(next[0]), factor_operand(next[1])};
                               })[0];
            };
            const float smallest = std::numeric_limits<float>::min(), largest = std::numeric_limits<float>::max();
            Tile factors_normal = l_max <= largest && r_max <= largest && l_min >= smallest && r_min >= smallest &&
                                  l_max * r_max <= largest && l_min * r_min >= smallest;
            acc = if_else(
                factors_normal,
                [&]() -> std::vector<Tile> { return {normal_scales_loop()}; },
                [&]() -> std::vector<Tile> {
                  return {for_range(0, K, step, zero, [&](Tile kg, Tile acc) {
                    return acc + checked_scaled_sum(partial_at(kg), expand_dims(row_scale(kg), 1),
                                                    expand_dims(col_scale(kg), 0));
                  })};
                })[0];
          }
        } else {
          acc = for_range(0, K, bk, zero, [&](Tile k, Tile acc) {
            Tile kk = ks + k;  // (BLOCK_K)
            Tile a_mask = row_ok && expand_dims(kk < K, 0);
            Tile b_mask = expand_dims(kk < K, 1) && col_ok;
            Tile a = a_tile(k, a_mask), b = b_tile(k, kk < K);
            // A power-of-two block that BLOCK_K divides gives the whole K tile one scale per row
            // (column): loaded once and broadcast, not once per element.
            auto tile_wide = [&](int shift) { return shift >= 0 && (int64_t{1} << shift) % bk == 0; };
            if (spec.lhs_scale) {
              Tile s = tile_wide(spec.lhs_block_shift)
                           ? expand_dims(row_scale_stored(k), 1)  // (BLOCK_M, 1)
                           : load(ls_base + expand_dims(rows, 1) * arg["ls_sm"] +
                                      expand_dims(scale_step(kk, "lhs_block", spec.lhs_block_shift), 0) * arg["ls_sk"],
                                  a_mask);  // (BLOCK_M, BLOCK_K)
              a = cast(a, f32) * cast(s, f32);
            }
            if (spec.rhs_scale) {
              Tile s = tile_wide(spec.rhs_block_shift)
                           ? expand_dims(col_scale_stored(k), 0)  // (1, BLOCK_N)
                           : load(rs_base + expand_dims(scale_step(kk, "rhs_block", spec.rhs_block_shift), 1) * arg["rs_sk"] +
                                      expand_dims(cols, 0) * arg["rs_sn"],
                                  b_mask);  // (BLOCK_K, BLOCK_N)
              b = cast(b, f32) * cast(s, f32);
            }
            return f32_dot(for_dot(a), for_dot(b), acc, spec.precision);
          });
        }
        Tile out_ptrs = arg["out"] + batch * (cast(M, i64) * cast(N, i64)) + expand_dims(rows, 1) * N +
                        expand_dims(cols, 0);  // (BLOCK_M, BLOCK_N)
        store(out_ptrs, cast(acc, spec.out), row_ok && col_ok);
      });
}

// The largest offset the kernel forms within one batch of a view (masked lanes included).
int64_t offset_bound(const GroupedView& v) {
  return (v.size[1] + 256) * v.stride[1] + (v.size[2] + 256) * v.stride[2];
}

}  // namespace

std::string scale_mode_name(ScaleMode mode) {
  switch (mode) {
    case ScaleMode::none: return "none";
    case ScaleMode::partial_products: return "partial_products";
    case ScaleMode::operand_tiles: return "operand_tiles";
  }
  return "?";
}

ScaledDotPlan plan_scaled_dot(DType lhs, DType rhs, int64_t lhs_block, int64_t rhs_block, int64_t m, int64_t n,
                              int64_t k, int cc) {
  ScaledDotPlan plan;
  plan.block_m = std::clamp<int64_t>(pow2_ceil(m), 16, 128);
  plan.block_n = std::clamp<int64_t>(pow2_ceil(n), 16, 128);
  if (plan.block_m * plan.block_n > 64 * 128) plan.num_warps = 8;

  Compute stored = stored_compute(lhs, rhs, cc);
  auto use = [&](const Compute& c, ScaleMode mode, int64_t block_k) {
    plan.compute = c.dtype;
    plan.precision = c.precision;
    plan.mode = mode;
    plan.block_k = block_k;
    return plan;
  };
  if (lhs_block == 0 && rhs_block == 0)
    return use(stored, ScaleMode::none, std::clamp(pow2_ceil(k), stored.mma_k, stored.max_block_k));
  plan.group = std::gcd(lhs_block, rhs_block);  // gcd(b, 0) == b
  int64_t block_k = plan.group & -plan.group;   // the largest power of two dividing it
  if (block_k >= stored.mma_k && products_stay_in_range(lhs, rhs)) {
    // A group of one K tile is one dot per step, whose operands a loop pipeline stages (three
    // stages let the dot read an 8-bit B transposed into its ring slot's own tile).
    if (cc >= 80 && std::min(block_k, stored.max_block_k) == plan.group) plan.num_stages = 3;
    plan.factors_on_tensor_cores = cc == 90;
    return use(stored, ScaleMode::partial_products, std::min(block_k, stored.max_block_k));
  }
  plan.group = 0;
  Compute scaled = scaled_compute(lhs, rhs);
  // A loop pipeline stages the operand tiles (and scale tiles, 2 bytes an element at most),
  // each step reading its own back to scale them: up to 3 stages in 72 KiB, which leaves room
  // for the B tile the dot stores on every target (sm_89 allows 99 KiB a CTA; the epilogue
  // reuses the ring's).
  const int64_t bk = scaled.max_block_k;
  const int64_t stage_bytes = plan.block_m * bk * (dtype_storage_bytes(lhs) + 2) +
                              bk * plan.block_n * (dtype_storage_bytes(rhs) + 2);
  if (cc >= 80) plan.num_stages = static_cast<int>(std::clamp<int64_t>(72 * 1024 / stage_bytes, 1, 3));
  return use(scaled, ScaleMode::operand_tiles, bk);
}

void run_scaled_dot_kernel(const ScaledOperandView& lhs, const ScaledOperandView& rhs, const Tensor& out,
                           Stream& stream) {
  const GroupedView& a = lhs.data;
  const int64_t batch = a.size[0], m = a.size[1], k = a.size[2], n = rhs.data.size[2];
  const DeviceInfo& device = out.device().info();
  const int cc = device.cc_major * 10 + device.cc_minor;
  ScaledDotPlan plan = plan_scaled_dot(a.storage.dtype(), rhs.data.storage.dtype(), lhs.scale ? lhs.block : 0,
                                       rhs.scale ? rhs.block : 0, m, n, k, cc);
  const int64_t tiles_m = (m + plan.block_m - 1) / plan.block_m, tiles_n = (n + plan.block_n - 1) / plan.block_n;
  const int64_t programs = batch * tiles_m * tiles_n;
  if (programs > std::numeric_limits<int32_t>::max())
    fail("scaled_dot: {} output tiles of {}x{} (batch {}, M {}, N {}) are more than one launch holds", programs,
         plan.block_m, plan.block_n, batch, m, n);
  const GroupedView b = transposes_rhs_ahead(plan, rhs.data, m, cc) ? k_major_copy(rhs.data, stream) : rhs.data;

  int64_t bound = std::max({offset_bound(a), offset_bound(b), (m + 256) * (n + 256), k + 256});
  if (lhs.scale) bound = std::max(bound, offset_bound(*lhs.scale));
  if (rhs.scale) bound = std::max(bound, offset_bound(*rhs.scale));
  KernelSpec spec{a.storage.dtype(),
                  b.storage.dtype(),
                  out.dtype(),
                  lhs.scale ? std::optional(lhs.scale->storage.dtype()) : std::nullopt,
                  rhs.scale ? std::optional(rhs.scale->storage.dtype()) : std::nullopt,
                  plan.mode,
                  plan.compute,
                  plan.precision,
                  bound < std::numeric_limits<int32_t>::max() ? DType::i32 : DType::i64,
                  plan.mode == ScaleMode::partial_products && plan.group > plan.block_k};
  if (lhs.scale) spec.lhs_block_shift = power_of_two_log2(lhs.block);
  if (rhs.scale) spec.rhs_block_shift = power_of_two_log2(rhs.block);
  spec.factors_on_tensor_cores = plan.factors_on_tensor_cores;
  spec.rhs_k_major = b.stride[1] == 1 && b.stride[2] != 1;

  NamedArguments args;
  auto offset = [&](const char* name, int64_t v) {  // a size or stride within one batch
    args.add(name, spec.index == DType::i64 ? KernelArg(v) : KernelArg(static_cast<int32_t>(v)));
  };
  // A view's pointer and strides; the batch stride is always i64 (batches are 64-bit apart).
  auto view = [&](const char* pointer, const GroupedView& v, std::array<const char*, 3> strides) {
    args.add(pointer, v.storage);
    args.add(strides[0], v.stride[0]);
    offset(strides[1], v.stride[1]);
    offset(strides[2], v.stride[2]);
  };
  view("lhs", a, {"lhs_sb", "lhs_sm", "lhs_sk"});
  view("rhs", b, {"rhs_sb", "rhs_sk", "rhs_sn"});
  args.add("out", out);
  offset("M", m);
  offset("N", n);
  offset("K", k);
  args.add("tiles_n", static_cast<int32_t>(tiles_n));
  args.add("tiles_per_batch", static_cast<int32_t>(tiles_m * tiles_n));
  if (lhs.scale) {
    view("lhs_scale", *lhs.scale, {"ls_sb", "ls_sm", "ls_sk"});
    offset("lhs_block", lhs.block);
  }
  if (rhs.scale) {
    view("rhs_scale", *rhs.scale, {"rs_sb", "rs_sk", "rs_sn"});
    offset("rhs_block", rhs.block);
  }
  if (plan.mode == ScaleMode::partial_products) offset("group", plan.group);

  const JitKernel& kernel = op_kernel(spec.key(), args, [&](std::vector<ir::Param> params) {
    return scaled_dot_kernel(spec, params);
  });
  kernel
      .with({{"BLOCK_M", plan.block_m},
             {"BLOCK_N", plan.block_n},
             {"BLOCK_K", plan.block_k},
             {"num_warps", plan.num_warps},
             {"num_stages", plan.num_stages}})
      .launch_args(stream, LaunchDims{{static_cast<uint32_t>(programs), 1, 1}, {}}, args.values());
}

}  // namespace tilejit::ops::scaled_dot_detail
