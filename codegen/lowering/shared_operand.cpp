#include "codegen/lowering/shared_operand.h"

#include <algorithm>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tilejit::codegen::lowering {

SharedOperand::SharedOperand(Lowering& L, const ir::Type& type, llvm::Value* base)
    : L_(L), base_(base), element_bytes_(dtype_storage_bytes(type.dtype)),
      tile_{type.shape[0], type.shape[1] * element_bytes_} {}

int64_t SharedOperand::bytes_of(const ir::Type& type) {
  return SwizzledTile{type.shape[0], type.shape[1] * dtype_storage_bytes(type.dtype)}.bytes();
}

llvm::Value* SharedOperand::m_block_row(const MmaTiling& t, int rep_m) {
  auto& b = L_.b;
  llvm::Value* wm = b.CreateAnd(L_.warp_id(), L_.const_i32(t.warps_m - 1));
  return b.CreateMul(b.CreateAdd(wm, L_.const_i32(t.warps_m * rep_m)), L_.const_i32(16));
}

llvm::Value* SharedOperand::n_block(const MmaTiling& t, int rep_n) {
  auto& b = L_.b;
  int wm_bits = __builtin_ctz(static_cast<unsigned>(t.warps_m));
  llvm::Value* wn = b.CreateAnd(b.CreateLShr(L_.warp_id(), L_.const_i32(wm_bits)), L_.const_i32(t.warps_n - 1));
  return b.CreateAdd(b.CreateAdd(wn, L_.const_i32(t.warps_n * rep_n)),
                     b.CreateMul(b.CreateLShr(L_.lane_id(), L_.const_i32(4)), L_.const_i32(t.warps_n)));
}

int SharedOperand::row_vector(const LinearLayout& layout) const {
  // Register bit i steps 2^i along the row for the first log2(vec) bits.
  int vec = 1;
  for (size_t bit = 0; bit < layout.reg.size() && vec * element_bytes_ < 16 && layout.reg[bit] == Coord{0, vec}; ++bit)
    vec *= 2;
  return vec;
}

std::vector<llvm::Value*> SharedOperand::load(const LinearLayout& layout, llvm::Type* elem) {
  auto& b = L_.b;
  int vec = row_vector(layout);
  llvm::Type* access = vec > 1 ? llvm::FixedVectorType::get(elem, static_cast<unsigned>(vec)) : elem;
  std::vector<llvm::Value*> values(static_cast<size_t>(layout.num_regs()));
  for (int r = 0; r < layout.num_regs(); r += vec) {
    std::vector<llvm::Value*> c = L_.coords(layout, r);
    llvm::Value* loaded = b.CreateAlignedLoad(access, address(c[0], b.CreateMul(c[1], L_.const_i32(element_bytes_))),
                                              llvm::Align(static_cast<uint64_t>(vec * element_bytes_)));
    for (int i = 0; i < vec; ++i)
      values[static_cast<size_t>(r + i)] = vec > 1 ? b.CreateExtractElement(loaded, static_cast<uint64_t>(i)) : loaded;
  }
  return values;
}

namespace {

// A basis that moves a whole 8 x 8 block: both components multiples of 8, not both zero.
bool moves_whole_blocks(const Coord& c) { return c[0] % 8 == 0 && c[1] % 8 == 0 && (c[0] != 0 || c[1] != 0); }

}  // namespace

// The fragments stmatrix stores (sm_90; the accumulators of mma.sync and wgmma cast to 16
// bits): lane l holds the elements at row l/4, columns 2(l%4) and 2(l%4)+1 of an 8 x 8
// block in registers 2i and 2i+1; every other register and warp bit moves whole blocks, and
// no register repeats another's (stmatrix would write its rows twice).
bool SharedOperand::holds_stmatrix_fragments(const LinearLayout& l) const {
  if (L_.target.compute_capability < 90 || element_bytes_ != 2 || l.rank() != 2 || l.reg.size() < 3) return false;
  if (l.reg[0] != Coord{0, 1} || l.lane != std::vector<Coord>{{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}) return false;
  std::vector<bool> duplicate = l.duplicate_registers();
  return std::all_of(l.reg.begin() + 1, l.reg.end(), moves_whole_blocks) &&
         std::all_of(l.warp.begin(), l.warp.end(), moves_whole_blocks) &&
         std::none_of(duplicate.begin(), duplicate.end(), [](bool d) { return d; });
}

// stmatrix.x4 per 8 registers: word j of lane l holds registers 2j, 2j+1 (block j), and lanes
// 8j..8j+7 give the addresses of block j's rows. A lane's own coordinates of register 2j less
// its lane's part (row l/4 % 8, column 2(l%4)) are block j's origin for its warp.
void SharedOperand::store_by_stmatrix(const Regs& regs) {
  auto& b = L_.b;
  llvm::Value* lane = L_.lane_id();
  llvm::Value* block = b.CreateLShr(lane, L_.const_i32(3));
  llvm::Value* row_in_block = b.CreateSub(b.CreateAnd(lane, L_.const_i32(7)), b.CreateAnd(b.CreateLShr(lane, L_.const_i32(2)), L_.const_i32(7)));
  llvm::Value* col_of_lane = b.CreateMul(b.CreateAnd(lane, L_.const_i32(3)), L_.const_i32(2));
  auto* pair = llvm::FixedVectorType::get(regs.values[0]->getType(), 2);
  for (int r0 = 0; r0 < regs.layout.num_regs(); r0 += 8) {
    llvm::Value *row = nullptr, *col = nullptr;
    std::vector<llvm::Value*> args{nullptr};
    for (int j = 0; j < 4; ++j) {
      std::vector<llvm::Value*> c = L_.coords(regs.layout, r0 + 2 * j);
      llvm::Value* mine = b.CreateICmpEQ(block, L_.const_i32(j));
      row = row ? b.CreateSelect(mine, c[0], row) : c[0];
      col = col ? b.CreateSelect(mine, c[1], col) : c[1];
      llvm::Value* word = llvm::PoisonValue::get(pair);
      for (int i = 0; i < 2; ++i)
        word = b.CreateInsertElement(word, regs.values[static_cast<size_t>(r0 + 2 * j + i)], b.getInt32(static_cast<uint32_t>(i)));
      args.push_back(b.CreateBitCast(word, b.getInt32Ty()));
    }
    llvm::Value* origin_col = b.CreateSub(col, col_of_lane);
    args[0] = address(b.CreateAdd(row, row_in_block), b.CreateMul(origin_col, L_.const_i32(element_bytes_)));
    L_.call_intrinsic(llvm::Intrinsic::nvvm_stmatrix_sync_aligned_m8n8_x4_b16, {args[0]->getType()}, args);
  }
}

void SharedOperand::store(const ir::Value* v) {
  const Regs& regs = L_.home(v);
  if (holds_stmatrix_fragments(regs.layout)) return store_by_stmatrix(regs);
  store_registers(regs, row_vector(regs.layout), /*transposed=*/false);
}

void SharedOperand::store_transposed(const Regs& regs) {
  const std::vector<Coord>& bases = regs.layout.reg;
  // Register bits that step one and two rows of v (columns of the tile): with them first, runs
  // of four registers are consecutive in a row of the tile, one 4-byte store for 8-bit elements.
  auto bit_of = [&](const Coord& step) {
    return static_cast<int>(std::find(bases.begin(), bases.end(), step) - bases.begin());
  };
  int row1 = bit_of(Coord{1, 0}), row2 = bit_of(Coord{2, 0});
  int bits = static_cast<int>(bases.size());
  // Every other input bit must leave the low two rows alone, so the runs start 4-aligned.
  auto low_rows = [&](const std::vector<Coord>& b, int skip1, int skip2) {
    for (int i = 0; i < static_cast<int>(b.size()); ++i)
      if (i != skip1 && i != skip2 && b[static_cast<size_t>(i)][0] & 3) return true;
    return false;
  };
  const LinearLayout& l = regs.layout;
  if (element_bytes_ != 1 || row1 == bits || row2 == bits || low_rows(bases, row1, row2) ||
      low_rows(l.lane, -1, -1) || low_rows(l.warp, -1, -1))
    return store_registers(regs, 1, /*transposed=*/true);
  std::vector<int> order{row1, row2};  // new register bit -> old one
  for (int bit = 0; bit < bits; ++bit)
    if (bit != row1 && bit != row2) order.push_back(bit);
  Regs grouped{regs.layout, std::vector<llvm::Value*>(regs.values.size())};
  for (int bit = 0; bit < bits; ++bit)
    grouped.layout.reg[static_cast<size_t>(bit)] = bases[static_cast<size_t>(order[static_cast<size_t>(bit)])];
  for (int r = 0; r < regs.layout.num_regs(); ++r) {
    int old = 0;
    for (int bit = 0; bit < bits; ++bit) old |= (r >> bit & 1) << order[static_cast<size_t>(bit)];
    grouped.values[static_cast<size_t>(r)] = regs.values[static_cast<size_t>(old)];
  }
  store_registers(grouped, 4, /*transposed=*/true);
}

void SharedOperand::store_registers(const Regs& regs, int vec, bool transposed) {
  auto& b = L_.b;
  const LinearLayout& layout = regs.layout;
  std::vector<bool> duplicate = layout.duplicate_registers();
  llvm::Type* elem = regs.values[0]->getType();
  auto store_held = [&] {
    for (int r = 0; r < layout.num_regs(); r += vec) {
      if (duplicate[static_cast<size_t>(r)]) continue;
      std::vector<llvm::Value*> c = L_.coords(layout, r);
      if (transposed) std::swap(c[0], c[1]);
      llvm::Value* value = regs.values[static_cast<size_t>(r)];
      if (vec > 1) {
        value = llvm::PoisonValue::get(llvm::FixedVectorType::get(elem, static_cast<unsigned>(vec)));
        for (int i = 0; i < vec; ++i)
          value = b.CreateInsertElement(value, regs.values[static_cast<size_t>(r + i)], b.getInt32(static_cast<uint32_t>(i)));
      }
      b.CreateAlignedStore(value, address(c[0], b.CreateMul(c[1], L_.const_i32(element_bytes_))),
                           llvm::Align(static_cast<uint64_t>(vec * element_bytes_)));
    }
  };
  // Elements replicated over threads are stored by their first holder only.
  if (layout.replicated_lane_mask() || layout.replicated_warp_mask())
    L_.emit_if(L_.owns_data(layout), "operand.owner", store_held);
  else
    store_held();
}

// ldmatrix.x4, lanes 0-7 / 8-15 / 16-23 / 24-31 giving the rows of the (rows 0-7, bytes 0-15)
// / (8-15, 0-15) / (0-7, 16-31) / (8-15, 16-31) blocks of the 16-row, 32-byte fragment.
std::vector<llvm::Value*> SharedOperand::a_words(const MmaTiling& t, int rep_m, int rep_k) {
  auto& b = L_.b;
  llvm::Value* lane = L_.lane_id();
  llvm::Value* row = b.CreateAdd(m_block_row(t, rep_m), b.CreateAnd(lane, L_.const_i32(15)));
  llvm::Value* col = b.CreateAdd(L_.const_i32(rep_k * t.instr.k * element_bytes_),
                                 b.CreateMul(b.CreateLShr(lane, L_.const_i32(4)), L_.const_i32(16)));
  return ldmatrix(4, false, address(row, col));
}

// Lanes 8j..8j+7 give the K rows 8(j/2)..+7 of the step at M columns 8(j%2)..+7 of the block:
// matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) of the fragment.
std::vector<llvm::Value*> SharedOperand::a_words_transposed(const MmaTiling& t, int rep_m, int rep_k) {
  auto& b = L_.b;
  llvm::Value* lane = L_.lane_id();
  llvm::Value* k = b.CreateAdd(L_.const_i32(rep_k * t.instr.k),
                               b.CreateAdd(b.CreateMul(b.CreateLShr(lane, L_.const_i32(4)), L_.const_i32(8)),
                                           b.CreateAnd(lane, L_.const_i32(7))));
  llvm::Value* m = b.CreateAdd(m_block_row(t, rep_m), b.CreateMul(b.CreateAnd(b.CreateLShr(lane, L_.const_i32(3)),
                                                                              L_.const_i32(1)),
                                                                  L_.const_i32(8)));
  return ldmatrix(4, true, address(k, b.CreateMul(m, L_.const_i32(element_bytes_))));
}

// Lanes 8j..8j+7 give the K rows 8(j%2)..+7 of the N block rep_n + j/2.
std::vector<llvm::Value*> SharedOperand::b_words(const MmaTiling& t, int rep_k, int rep_n, bool pair) {
  auto& b = L_.b;
  llvm::Value* k = b.CreateAdd(L_.const_i32(rep_k * t.instr.k), b.CreateAnd(L_.lane_id(), L_.const_i32(15)));
  llvm::Value* col = b.CreateMul(n_block(t, rep_n), L_.const_i32(8 * element_bytes_));
  return ldmatrix(pair ? 4 : 2, true, address(k, col));
}

// Lanes 8j..8j+7 give the N rows of block rep_n + j/2 at the K step's bytes 16(j%2)..+15.
std::vector<llvm::Value*> SharedOperand::b_words_transposed(const MmaTiling& t, int rep_k, int rep_n, bool pair) {
  auto& b = L_.b;
  llvm::Value* lane = L_.lane_id();
  llvm::Value* row = b.CreateAdd(b.CreateMul(n_block(t, rep_n), L_.const_i32(8)), b.CreateAnd(lane, L_.const_i32(7)));
  llvm::Value* col = b.CreateAdd(L_.const_i32(rep_k * t.instr.k * element_bytes_),
                                 b.CreateMul(b.CreateAnd(b.CreateLShr(lane, L_.const_i32(3)), L_.const_i32(1)),
                                             L_.const_i32(16)));
  return ldmatrix(pair ? 4 : 2, false, address(row, col));
}

// SwizzledTile::byte_offset at run time.
llvm::Value* SharedOperand::address(llvm::Value* row, llvm::Value* col_byte) {
  auto& b = L_.b;
  llvm::Value* offset = b.CreateMul(row, L_.const_i32(tile_.line_bytes()));  // the line's start
  llvm::Value* in_line = col_byte;
  if (tile_.row_bytes > tile_.line_bytes()) {  // column blocks: only rows wider than 128 bytes have several
    in_line = b.CreateURem(col_byte, L_.const_i32(tile_.line_bytes()));
    llvm::Value* block = b.CreateUDiv(col_byte, L_.const_i32(tile_.line_bytes()));
    offset = b.CreateAdd(offset, b.CreateMul(block, L_.const_i32(tile_.block_bytes())));
  }
  llvm::Value* mask = b.CreateURem(b.CreateLShr(offset, L_.const_i32(7)), L_.const_i32(tile_.chunks_per_line()));
  llvm::Value* chunk = b.CreateXor(b.CreateLShr(in_line, L_.const_i32(4)), mask);
  offset = b.CreateAdd(offset, b.CreateOr(b.CreateShl(chunk, L_.const_i32(4)), b.CreateAnd(in_line, L_.const_i32(15))));
  return b.CreateGEP(b.getInt8Ty(), base_, offset);
}

std::vector<llvm::Value*> SharedOperand::ldmatrix(int matrices, bool transpose, llvm::Value* row_address) {
  using llvm::Intrinsic::ID;
  static constexpr ID plain[] = {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16,
                                 llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16};
  static constexpr ID trans[] = {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16,
                                 llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16};
  ID id = (transpose ? trans : plain)[matrices == 4];
  llvm::Value* result = L_.call_intrinsic(id, {row_address->getType()}, {row_address});
  std::vector<llvm::Value*> words;
  for (unsigned j = 0; j < static_cast<unsigned>(matrices); ++j) words.push_back(L_.b.CreateExtractValue(result, j));
  return words;
}

HeldOperand held_a(const ir::Value* a, int element_bits) {
  const ir::Value* x = element_bits == 16 ? transposed_dot_operand(a) : nullptr;
  return x ? HeldOperand{x, true} : HeldOperand{a, false};
}

HeldOperand held_b(const ir::Value* b) {
  const ir::Value* x = transposed_dot_operand(b);
  return x ? HeldOperand{x, false} : HeldOperand{b, true};
}

HeldOperand wgmma_held_b(const ir::Value* b, int element_bits) {
  HeldOperand held = held_b(b);
  if (held.mn_major && element_bits == 8) return HeldOperand{b, false, true};
  return held;
}

ir::Type transposed_type(const ir::Type& b) {
  ir::Type t = b;
  std::swap(t.shape[0], t.shape[1]);
  return t;
}

LinearLayout transposed_b_layout(const ir::Shape& shape, int num_warps) {
  return LinearLayout::blocked(shape, num_warps, 4, 4);
}

OperandTiles place_operand_tiles(Lowering& L, const ir::Value* a, bool a_wanted, const HeldOperand& held_b,
                                 bool b_wanted, bool async_proxy) {
  const ir::Value* b = held_b.value;
  auto staged = [&](const ir::Value* v) -> llvm::Value* {
    auto it = L.staged_operands.find(v);
    return it == L.staged_operands.end() ? nullptr : it->second;
  };
  OperandTiles t;
  t.a = a_wanted ? staged(a) : nullptr;
  t.b = b_wanted && !held_b.transposed ? staged(b) : nullptr;
  // A transposed B staged as given is read back to be stored transposed, before the barrier
  // that lets the scratch space be overwritten (the staged tile is not in it).
  std::optional<Regs> transposing;
  if (b_wanted && held_b.transposed) {
    if (llvm::Value* given = staged(b)) {
      LinearLayout layout = transposed_b_layout(b->type.shape, L.fn.num_warps);
      transposing = Regs{layout, SharedOperand(L, b->type, given).load(layout, L.memory_type(b->type.dtype))};
    } else {
      transposing = L.home(b);
    }
  }
  // A transposed B whose loop pipeline keeps a tile per ring slot for it goes there, with no
  // barrier before: no running group reads that tile, and no thread still reads it.
  auto kept = held_b.transposed ? L.transposed_tiles.find(b) : L.transposed_tiles.end();
  if (b_wanted && kept != L.transposed_tiles.end()) {
    t.b = kept->second;
    SharedOperand(L, transposed_type(b->type), t.b).store_transposed(*transposing);
  }
  t.a_staged = t.a != nullptr, t.b_staged = t.b != nullptr;
  bool a_store = a_wanted && !t.a, b_store = b_wanted && !t.b;
  if (!a_store && !b_store) {
    if (kept != L.transposed_tiles.end()) {
      if (async_proxy) L.fence_and_barrier();
      else L.barrier();
    }
    if (async_proxy) L.fence_copies();  // a ring tile read as it lies
    return t;
  }
  int64_t a_bytes = a_store ? SharedOperand::aligned(SharedOperand::bytes_of(a->type)) : 0;
  int64_t b_bytes = b_store ? SharedOperand::bytes_of(b->type) : 0;
  if (a_store) t.a = L.shared_base();
  if (b_store) t.b = L.b.CreateGEP(L.b.getInt8Ty(), L.shared_base(), L.const_i32(a_bytes));
  L.reserve_shared(a_bytes + b_bytes);
  if (!L.scratch_idle()) L.barrier();  // earlier readers of the scratch space are done
  if (a_store) SharedOperand(L, a->type, t.a).store(a);
  if (b_store && held_b.transposed) SharedOperand(L, transposed_type(b->type), t.b).store_transposed(*transposing);
  else if (b_store) SharedOperand(L, b->type, t.b).store(b);
  if (async_proxy) L.fence_and_barrier();
  else L.barrier();
  return t;
}

}  // namespace tilejit::codegen::lowering
