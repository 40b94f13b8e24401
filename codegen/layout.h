// Distributed layouts as linear maps over GF(2) ("linear layouts", as in Triton): a layout
// says which element of a tile each (register, lane, warp) of a CTA holds. Every input bit
// has a basis vector, a coordinate in the tile; the coordinate an input holds is the XOR of
// the bases of its set bits. Tile dims are powers of two, so blocked layouts, their
// slices, broadcasts, reshapes and transposes are all linear maps, and conversions between
// layouts are questions of linear algebra that can be answered on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ir.h"

namespace tilejit::codegen {

using Coord = std::vector<int64_t>;  // one entry per tile dim

class LinearLayout {
 public:
  ir::Shape shape;         // the tile shape (powers of two)
  std::vector<Coord> reg;  // basis of each register bit
  std::vector<Coord> lane; // basis of each of the 5 lane bits
  std::vector<Coord> warp; // basis of each warp bit (log2 num_warps)

  // The blocked layout tilejit gives a tile by default: `vec` consecutive elements of the
  // last dim per thread (one vector access), lanes then warps along the fastest dims, the
  // rest in registers. Bits beyond the tile's size get zero bases (replicated data).
  // `rows` > 1: each thread's vectors come from that many consecutive rows of the dim before
  // the last, a (rows, vec) block in its first registers.
  static LinearLayout blocked(const ir::Shape& shape, int num_warps, int vec, int rows = 1);

  int rank() const { return static_cast<int>(shape.size()); }
  int num_regs() const { return 1 << reg.size(); }
  int num_warps() const { return 1 << warp.size(); }
  Coord apply(int64_t r, int64_t l, int64_t w) const;
  Coord reg_coord(int64_t r) const { return apply(r, 0, 0); }

  // Layout transforms that keep every thread's registers where they are.
  LinearLayout squash(const std::vector<int>& dims) const;  // those dims get size 1 (broadcast source)
  LinearLayout remove_dim(int dim) const;                   // a reduction's result
  LinearLayout insert_dim(int dim) const;                   // expand_dims
  LinearLayout permute(const std::vector<int64_t>& perm) const;  // trans
  LinearLayout reshape(const ir::Shape& new_shape) const;   // row-major reinterpretation
  // The layout of the elements in `dims` only: other components of every basis become zero.
  LinearLayout project(const std::vector<int>& dims) const;

  // Input bits that hold no new data (their basis is zero): lanes / warps whose bit is set
  // there duplicate another thread, so stores and atomics skip them.
  uint32_t replicated_lane_mask() const;
  uint32_t replicated_warp_mask() const;
  // Registers that repeat an earlier register's coordinate in the same thread.
  std::vector<bool> duplicate_registers() const;

  std::string str() const;
  bool operator==(const LinearLayout&) const = default;
};

// If every thread's registers in `to` are held by the same thread in `from`, the register
// of `from` that holds each register of `to`; otherwise nullopt (data must move between
// threads). Shapes must agree.
std::optional<std::vector<int>> register_map(const LinearLayout& from, const LinearLayout& to);

// Row-major linear index of a coordinate.
int64_t linear_index(const ir::Shape& shape, const Coord& c);

}  // namespace tilejit::codegen
