// Internal to codegen/lowering: a dot operand tile in shared memory as a swizzled row-major
// tile (codegen/shared_layout.h), written by the threads that hold it (with stmatrix where
// they hold its fragments) or by asynchronous copies (codegen/lowering/loop_pipeline.cpp),
// and read with ldmatrix in the fragments of the mma.sync instruction. The same layout is a
// TMA box's (codegen/tma_box.h): desc_load reads blocks from it, desc_store stages blocks in
// it. A is held as (M, K) or, 16-bit, transposed as (K, M); B as (K, N) or transposed as (N, K),
// which is also how wgmma takes an 8-bit B given (K, N) (stored transposed).
#pragma once

#include <vector>

#include "codegen/lowering/lowering.h"
#include "codegen/shared_layout.h"

namespace tilejit::codegen::lowering {

class SharedOperand {
 public:
  // Where operand tiles start: wgmma's 128-byte swizzle repeats every 1024 bytes of the
  // shared window, and a descriptor names a tile by its unswizzled start.
  static constexpr int64_t kAlignment = 1024;
  // `bytes` rounded up to kAlignment.
  static int64_t aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

  // The tile of `type` (rank 2) at `base` in shared memory.
  SharedOperand(Lowering& L, const ir::Type& type, llvm::Value* base);

  int64_t bytes() const { return tile_.bytes(); }
  static int64_t bytes_of(const ir::Type& type);

  // Every thread writes the elements of `v` it holds: with stmatrix where they are its
  // fragments, else runs of registers that are consecutive along the row (a thread's vector)
  // as one store of up to 16 bytes, elements replicated over threads by their first holder
  // only. Called by every thread (every consumer warp), converged: stmatrix is a warp's
  // instruction.
  void store(const ir::Value* v);
  // Every thread writes the elements of a (K, N) tile it holds in `regs` into this (N, K)
  // tile, 4 bytes at a time where it holds (4, 4) blocks of 8-bit elements (see
  // transposed_b_layout), else one element per store; replicated elements by their first
  // holder only.
  void store_transposed(const Regs& regs);
  // The elements every thread holds in `layout` (of the tile's shape), as `elem` registers.
  std::vector<llvm::Value*> load(const LinearLayout& layout, llvm::Type* elem);

  // The A words of instruction (rep_m, rep_k) (ldmatrix.x4).
  std::vector<llvm::Value*> a_words(const MmaTiling& t, int rep_m, int rep_k);
  // The same A words from a tile that holds A transposed, (K, M) row-major, 16-bit elements:
  // ldmatrix.x4.trans.
  std::vector<llvm::Value*> a_words_transposed(const MmaTiling& t, int rep_m, int rep_k);
  // The B words of instructions (rep_k, rep_n) and, when `pair`, (rep_k, rep_n + 1)
  // (ldmatrix.x4.trans, x2 without the pair).
  std::vector<llvm::Value*> b_words(const MmaTiling& t, int rep_k, int rep_n, bool pair);

  // The same B words from a tile that holds B transposed, (N, K) row-major: ldmatrix without
  // .trans, whose lane l receives row l/4 (an N index), bytes 4(l%4)..+3 (consecutive K),
  // which is the B fragment of 16-bit and of 8-bit elements alike.
  std::vector<llvm::Value*> b_words_transposed(const MmaTiling& t, int rep_k, int rep_n, bool pair);

  // The shared address of byte `col_byte` of `row` (i32 values), swizzled.
  llvm::Value* address(llvm::Value* row, llvm::Value* col_byte);

 private:
  // How many consecutive registers of `layout` hold consecutive elements of a row, up to 16 bytes.
  int row_vector(const LinearLayout& layout) const;
  bool holds_stmatrix_fragments(const LinearLayout& layout) const;
  void store_by_stmatrix(const Regs& regs);
  // Stores `regs`, `vec` consecutive registers at a time, each element at its coordinates in
  // the tile, or (transposed) at the swapped ones.
  void store_registers(const Regs& regs, int vec, bool transposed);
  // The first M row of the calling warp's 16-row block of instruction row rep_m.
  llvm::Value* m_block_row(const MmaTiling& t, int rep_m);
  // The 8-column N block whose rows or columns the calling lane addresses for instruction
  // column rep_n (lanes 16-31: rep_n + 1, for the paired x4 load).
  llvm::Value* n_block(const MmaTiling& t, int rep_n);
  std::vector<llvm::Value*> ldmatrix(int matrices, bool transpose, llvm::Value* row_address);

  Lowering& L_;
  llvm::Value* base_;
  int element_bytes_;
  SwizzledTile tile_;
};

// The tile a dot's A or B is held in shared memory as: the value itself (A (M, K), K-major;
// B (K, N), MN-major) or, for an operand given as trans(x), x (A (K, M), MN-major, 16-bit
// elements only; B (N, K), K-major).
struct HeldOperand {
  const ir::Value* value;
  bool mn_major;
  bool transposed = false;  // the tile holds value's transpose (wgmma's 8-bit B, below)
};
HeldOperand held_a(const ir::Value* a, int element_bits);
HeldOperand held_b(const ir::Value* b);
// B as wgmma reads it: as held_b, but an 8-bit B given (K, N), which wgmma takes K-major only,
// is stored transposed into an (N, K) tile at each step (a loop pipeline may stage it as given
// and keep such a tile per ring slot, codegen/lowering/loop_pipeline.h).
HeldOperand wgmma_held_b(const ir::Value* b, int element_bits);
// The (N, K) tile type of `b`'s transpose.
ir::Type transposed_type(const ir::Type& b);
// The layout a transposed B of `shape` is best held in: a (4, 4) block per thread.
LinearLayout transposed_b_layout(const ir::Shape& shape, int num_warps);

// Where a dot's operand tiles are in shared memory: a loop pipeline's staged tile, or the
// scratch space the value is stored into now (A first, then B). Only operands whose `wanted`
// flag is set are placed; the others come back null. `async_proxy`: the tiles are read by
// wgmma, so stores are made visible to the async proxy (fence.proxy.async) before the barrier.
struct OperandTiles {
  llvm::Value* a = nullptr;
  llvm::Value* b = nullptr;
  bool a_staged = false, b_staged = false;
};
// `b.transposed`: b is stored transposed, from registers or from the tile a loop pipeline
// staged it in as given, into the scratch space or the ring slot's own (N, K) tile
// (Lowering::transposed_tiles; then b_staged: no later lowering overwrites it).
OperandTiles place_operand_tiles(Lowering& L, const ir::Value* a, bool a_wanted, const HeldOperand& b, bool b_wanted,
                                 bool async_proxy);

}  // namespace tilejit::codegen::lowering
