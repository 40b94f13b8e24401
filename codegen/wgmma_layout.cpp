#include "codegen/wgmma_layout.h"

#include <fmt/format.h>

#include "dsl/dtype.h"

namespace tilejit::codegen {
std::string WgmmaInstr::ptx_name() const {
  const char* acc = a_kind == MmaKind::s8 ? "s32" : "f32";
  return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{}", n, k, acc, mma_kind_name(a_kind), mma_kind_name(b_kind));
}

std::optional<WgmmaTiling> wgmma_tiling(DType a, DType b, int64_t m, int64_t n, int64_t k, int num_warps,
                                        WgmmaA a_source, bool b_mn_major, const Target& target) {
  if (!target.has_wgmma || num_warps % 4 != 0 || m < 64) return std::nullopt;
  std::optional<MmaInstr> mma = select_mma(a, b, target);
  if (!mma || mma->a_kind == MmaKind::tf32 || k < mma->k) return std::nullopt;
  bool transposed = a_source == WgmmaA::mn_major || b_mn_major;
  if (mma->element_bits != 16 && transposed) return std::nullopt;  // wgmma transposes 16-bit only
  WgmmaTiling t;
  t.instr = WgmmaInstr{mma->a_kind, mma->b_kind, 8, mma->k, mma->element_bits, a_source, b_mn_major};
  int groups = num_warps / 4;
  while (t.groups_m * 2 <= groups && 64 * t.groups_m * 2 <= m) t.groups_m *= 2;
  t.groups_n = groups / t.groups_m;
  int64_t n_per_group = n / t.groups_n;
  if (n_per_group < 8) return std::nullopt;
  t.instr.n = static_cast<int>(std::min<int64_t>(n_per_group, 256));
  // An MN-major B slice must start on a swizzle span of its tile's rows (32 bytes at least).
  int element_bytes = mma->element_bits / 8;
  int64_t line = SwizzledTile{k, n * element_bytes}.line_bytes();
  if (b_mn_major && (line < 32 || t.instr.n * element_bytes % line != 0)) return std::nullopt;
  t.reps_m = static_cast<int>(m / (64 * t.groups_m));
  t.reps_n = static_cast<int>(n_per_group / t.instr.n);
  t.reps_k = static_cast<int>(k / mma->k);

  // Registers: the instruction's (column pairs, +8 rows, 8-column blocks), then its repeats
  // along N and M; lanes as in mma.sync; warps 16 rows apart, then warpgroups along M and N.
  t.acc.shape = {m, n};
  t.acc.reg = {Coord{0, 1}, Coord{8, 0}};
  append_steps(t.acc.reg, 1, 8, log2_ceil(t.instr.n / 8));
  append_steps(t.acc.reg, 1, t.instr.n, log2_ceil(t.reps_n));
  append_steps(t.acc.reg, 0, 64 * t.groups_m, log2_ceil(t.reps_m));
  t.acc.lane = {Coord{0, 2}, Coord{0, 4}, Coord{1, 0}, Coord{2, 0}, Coord{4, 0}};
  t.acc.warp = {Coord{16, 0}, Coord{32, 0}};
  append_steps(t.acc.warp, 0, 64, log2_ceil(t.groups_m));
  append_steps(t.acc.warp, 1, n_per_group, log2_ceil(t.groups_n));

  t.a = mma->frag_a;
  t.a.shape = {m, k};
  append_steps(t.a.reg, 1, mma->k, log2_ceil(t.reps_k));
  append_steps(t.a.reg, 0, 64 * t.groups_m, log2_ceil(t.reps_m));
  t.a.warp = {Coord{16, 0}, Coord{32, 0}};
  append_steps(t.a.warp, 0, 64, log2_ceil(t.groups_m));
  t.a.warp.insert(t.a.warp.end(), static_cast<size_t>(log2_ceil(t.groups_n)), Coord(2, 0));
  return t;
}

uint64_t MatrixDescriptor::encode(uint32_t start) const {
  auto field = [](int64_t bytes) { return static_cast<uint64_t>(bytes >> 4) & 0x3fff; };
  return field(start & 0x3ffff) | field(leading_byte_offset) << 16 | field(stride_byte_offset) << 32 |
         static_cast<uint64_t>(swizzle_mode) << 62;
}

MatrixDescriptor matrix_descriptor(const SwizzledTile& tile, bool mn_major) {
  MatrixDescriptor d;
  int64_t line = tile.line_bytes();
  d.swizzle_mode = line == 128 ? 1 : line == 64 ? 2 : 3;
  // Eight rows of a swizzle span apart: the next 8 M/N rows (K-major) or K rows (MN-major).
  d.stride_byte_offset = 8 * line;
  // MN-major: the next span of M/N columns is the next column block. K-major swizzled
  // layouts do not use the field.
  d.leading_byte_offset = mn_major ? tile.block_bytes() : 16;
  return d;
}

int64_t matrix_offset(const SwizzledTile& tile, bool mn_major, int64_t outer, int64_t k_step, int k_elements,
                      int element_bytes) {
  // The first row of a group of eight and the start of a swizzle span carry no swizzle, so
  // the tile's own offset is the unswizzled one the descriptor wants.
  if (mn_major) return tile.byte_offset(k_step * k_elements, outer * element_bytes);
  return tile.byte_offset(outer, k_step * k_elements * element_bytes);
}

}  // namespace tilejit::codegen
