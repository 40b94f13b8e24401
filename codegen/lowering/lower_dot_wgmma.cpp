// dot on sm_90a's warpgroup tensor cores (codegen/wgmma_layout.h). B, and an A that a load
// brought in, are read from shared memory through matrix descriptors: tiles a loop pipeline
// staged there, or the operand values stored now into the swizzled scratch tiles (made
// visible to the async proxy first). An A computed in registers (attention's probabilities,
// a dequantized operand) is read from registers in the instruction's A fragment, as
// wgmma.mma_async's register form takes it. wgmma reads 8-bit operands K-major only: an 8-bit
// B given (K, N) is stored transposed into an (N, K) tile at each step (the scratch space, or
// the ring slot's own tile when a loop pipeline staged it), read in (4, 4) blocks per thread
// (from its load, transposed_b_load_layout, or from the tile a loop pipeline staged it in) so
// the store writes 4 bytes at a time. The accumulator stays in registers in the instruction's
// layout.
//
// Each warpgroup issues, after a wgmma.fence, one wgmma.mma_async per (M, N) repeat and K
// step and commits them as one group. In a loop whose pipeline lets the dot run on across
// iterations (Lowering::dots_in_flight), it then waits only for the previous iteration's
// group. Otherwise nothing waits for it until an op uses its result: the ops in between
// (attention's softmax of one block while the product with the previous block's
// probabilities runs) overlap it. Before that op comes wgmma.wait_group N, N the groups
// committed since, which completes the older groups too. ptxas moves such a wait up to where
// it expects the group done; a wait_after op keeps it behind the ops its `ready` value needs
// (lower_wait_after). A group that read tiles stored for
// it into the scratch space also completes before the scratch space is handed out again
// (Lowering::shared_base); the other tiles it may read stay put until the block ends (a loop
// pipeline's ring slots, a loop's invariant tiles). A dot accumulating into a running group's
// result (attention's head-dim chunks) does not wait for it, unless that group reads the
// scratch space: wgmma may accumulate into the registers of a running group of its shape,
// and that group completes with the new one. LLVM has no intrinsic for
// wgmma.mma_async, so it is inline PTX; the wait is inline PTX too and takes every
// accumulator register it completes as an in/out operand, so no use of the results can move
// above it.
#include <algorithm>

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"
#include "codegen/wgmma_layout.h"

namespace tilejit::codegen::lowering {

namespace {

std::string register_list(int first, int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += fmt::format("{}${}", i ? ", " : "", first + i);
  return s;
}

// Outputs of `kinds` ('f' or 'r' each), each tied to the input of the same position when `tied`.
std::string output_constraints(const std::string& kinds, bool tied) {
  std::string s;
  for (size_t i = 0; i < kinds.size(); ++i) s += fmt::format("{}={}", i ? "," : "", kinds[i]);
  for (size_t i = 0; tied && i < kinds.size(); ++i) s += fmt::format(",{}", i);
  return s;
}

// Calls inline PTX `text` whose outputs are `regs` (tied to their values on entry unless
// `fresh`: then only their types count) and whose other inputs are `extra`; returns the outputs.
std::vector<llvm::Value*> call_tied_asm(llvm::IRBuilder<>& b, const std::string& text, const std::string& constraints,
                                        const std::vector<llvm::Value*>& regs, const std::vector<llvm::Value*>& extra,
                                        bool fresh = false) {
  std::vector<llvm::Type*> out_types, in_types;
  std::vector<llvm::Value*> args = fresh ? std::vector<llvm::Value*>{} : regs;
  args.insert(args.end(), extra.begin(), extra.end());
  for (llvm::Value* r : regs) out_types.push_back(r->getType());
  for (llvm::Value* a : args) in_types.push_back(a->getType());
  auto* result_type = llvm::StructType::get(b.getContext(), out_types);
  auto* asm_type = llvm::FunctionType::get(result_type, in_types, false);
  llvm::Value* result = b.CreateCall(llvm::InlineAsm::get(asm_type, text, constraints, /*hasSideEffects=*/true), args);
  std::vector<llvm::Value*> out;
  for (unsigned i = 0; i < regs.size(); ++i) out.push_back(b.CreateExtractValue(result, i));
  return out;
}

}  // namespace

std::optional<WgmmaTiling> Lowering::wgmma_dot_tiling(const ir::Op& op) const {
  const ir::Value* a = op.operands[0];
  const ir::Value* bv = op.operands[1];
  // A loaded from memory goes to shared memory (a loop pipeline copies it there); one
  // computed in registers is read from them.
  const ir::Op* a_def = a->def && a->def->kind == ir::OpKind::trans ? a->def->operands[0]->def : a->def;
  bool loaded = a_def && (a_def->kind == ir::OpKind::load || a_def->kind == ir::OpKind::desc_load);
  int bits = dtype_storage_bytes(a->type.dtype) * 8;
  WgmmaA a_source = !loaded ? WgmmaA::registers : held_a(a, bits).mn_major ? WgmmaA::mn_major : WgmmaA::k_major;
  return wgmma_tiling(a->type.dtype, bv->type.dtype, a->type.shape[0], bv->type.shape[1], a->type.shape[1],
                      fn.num_warps, a_source, wgmma_held_b(bv, bits).mn_major, target);
}

std::optional<LinearLayout> Lowering::transposed_b_load_layout(const ir::Value* v) const {
  auto users = users_.find(v);
  if (users == users_.end() || users->second.empty() || v->type.rank() != 2) return std::nullopt;
  for (const ir::Op* user : users->second) {
    if (user->kind != ir::OpKind::dot || user->operands[0] == v || user->operands[1] != v) return std::nullopt;
    std::optional<WgmmaTiling> tiling = wgmma_dot_tiling(*user);
    if (!tiling || !wgmma_held_b(v, tiling->instr.element_bits).transposed) return std::nullopt;
  }
  return transposed_b_layout(v->type.shape, fn.num_warps);
}

namespace {

// The inline PTX of one wgmma.mma_async of `instr` whose D has `regs` registers: operands
// $0.. are D, then D's tied inputs (unless `fresh`), then A (its descriptor, or four fragment
// words), B's descriptor and scale-d (an i32, nonzero to accumulate; 0 when fresh).
struct WgmmaAsm {
  std::string text, constraints;
};
WgmmaAsm wgmma_asm(const WgmmaInstr& instr, int regs, bool fresh) {
  bool integer = instr.a_kind == MmaKind::s8;
  bool a_registers = instr.a_in_registers();
  int next = fresh ? regs : 2 * regs;
  std::string a = a_registers ? fmt::format("{{{}}}", register_list(next, 4)) : fmt::format("${}", next);
  next += a_registers ? 4 : 1;
  int b = next++, scale_d = next;
  // imm-scale-a, imm-scale-b and, for 16-bit types, imm-trans-a (not in the register form)
  // and imm-trans-b.
  std::string immediates;
  if (!integer) immediates = ", 1, 1";
  if (instr.element_bits == 16) {
    if (!a_registers) immediates += fmt::format(", {}", int{instr.a_mn_major()});
    immediates += fmt::format(", {}", int{instr.b_mn_major});
  }
  return {fmt::format("{{\n.reg .pred p;\nsetp.ne.b32 p, ${}, 0;\n{} {{{}}}, {}, ${}, p{};\n}}", scale_d,
                      instr.ptx_name(), register_list(0, regs), a, b, immediates),
          output_constraints(std::string(static_cast<size_t>(regs), integer ? 'r' : 'f'), !fresh) +
              (a_registers ? ",r,r,r,r" : ",l") + ",l,r"};
}

}  // namespace

void Lowering::lower_dot_wgmma(const ir::Op& op, const WgmmaTiling& t) {
  const WgmmaInstr& instr = t.instr;
  // Accumulating into a running group's result: that group completes with this one's wait.
  if (chains_running_accumulator(op))
    running_wgmma_.erase(std::find(running_wgmma_.begin(), running_wgmma_.end(), op.operands[2]));
  const bool a_registers = instr.a_in_registers();
  std::vector<llvm::Value*> acc = in_layout(op.operands[2], t.acc);  // (M, N)
  // Before the operand tiles are placed: a conversion may pass through the same scratch space.
  std::vector<llvm::Value*> a_elements = a_registers ? in_layout(op.operands[0], t.a) : std::vector<llvm::Value*>{};
  HeldOperand a = a_registers ? HeldOperand{op.operands[0], false} : held_a(op.operands[0], instr.element_bits);
  HeldOperand bh = wgmma_held_b(op.operands[1], instr.element_bits);
  OperandTiles tiles = place_operand_tiles(*this, a.value, !a_registers, bh, true, /*async_proxy=*/true);

  int element_bytes = instr.element_bits / 8;
  auto tile_of = [&](const ir::Type& type) { return SwizzledTile{type.shape[0], type.shape[1] * element_bytes}; };
  SwizzledTile a_tile = tile_of(a.value->type);
  SwizzledTile b_tile = tile_of(bh.transposed ? transposed_type(bh.value->type) : bh.value->type);
  MatrixDescriptor a_desc = matrix_descriptor(a_tile, a.mn_major), b_desc = matrix_descriptor(b_tile, bh.mn_major);
  // A descriptor's start address is (address & 0x3ffff) >> 4 in bits 0-13. Shared memory stays
  // below 256 KiB, so the tile's start plus offset >> 4 never carries out of those bits: each
  // instruction's descriptor is one 32-bit add on the tile's low word, beside a constant high
  // word (64-bit arithmetic on the whole descriptor costs five instructions per wgmma).
  auto descriptor = [&](llvm::Value* tile_base, const MatrixDescriptor& d, int64_t offset) {
    TJ_CHECK(offset % 16 == 0);
    const uint64_t fields = d.encode(0);
    llvm::Value* start = b.CreateLShr(b.CreateAnd(b.CreatePtrToInt(tile_base, b.getInt32Ty()), const_i32(0x3ffff)),
                                      const_i32(4));
    llvm::Value* low = b.CreateAdd(b.CreateOr(start, b.getInt32(static_cast<uint32_t>(fields))), const_i32(offset >> 4));
    return pack_fragment_word(b, {low, b.getInt32(static_cast<uint32_t>(fields >> 32))}, b.getInt64Ty());
  };
  llvm::Value* warpgroup = warpgroup_id();
  llvm::Value* group_m = b.CreateAnd(warpgroup, const_i32(t.groups_m - 1));
  llvm::Value* group_n = b.CreateLShr(warpgroup, const_i32(__builtin_ctz(static_cast<unsigned>(t.groups_m))));
  int64_t n_per_group = static_cast<int64_t>(instr.n) * t.reps_n;
  // The warpgroup's first M row and N column go into the tile offsets at run time: the
  // offset is linear in them because slices start on whole 8-row groups and swizzle spans.
  auto a_offset = [&](int rep_m, int step) {
    int64_t row = 64 * t.groups_m * rep_m;
    int64_t base = matrix_offset(a_tile, a.mn_major, row, step, instr.k, element_bytes);
    int64_t per_group = matrix_offset(a_tile, a.mn_major, row + 64, step, instr.k, element_bytes) - base;
    return std::pair{base, per_group};
  };
  auto b_offset = [&](int rep_n, int step) {
    int64_t col = static_cast<int64_t>(instr.n) * rep_n;
    int64_t base = matrix_offset(b_tile, bh.mn_major, col, step, instr.k, element_bytes);
    int64_t per_group = t.groups_n > 1
                            ? matrix_offset(b_tile, bh.mn_major, col + n_per_group, step, instr.k, element_bytes) - base
                            : 0;
    return std::pair{base, per_group};
  };
  auto slice_base = [&](llvm::Value* tile_base, llvm::Value* group, int64_t per_group) {
    return b.CreateGEP(b.getInt8Ty(), tile_base, b.CreateMul(group, const_i32(per_group)));
  };
  // A's operands per instruction: its descriptor, or its four fragment words.
  auto a_operands = [&](int rep_m, int step) -> std::vector<llvm::Value*> {
    if (!a_registers) {
      auto [a_base, a_per_group] = a_offset(rep_m, step);
      return {descriptor(slice_base(tiles.a, group_m, a_per_group), a_desc, a_base)};
    }
    int per_word = 32 / instr.element_bits;
    std::vector<llvm::Value*> words;
    for (int f = 0; f < instr.k / 2; f += per_word) {
      std::vector<llvm::Value*> parts;
      for (int e = 0; e < per_word; ++e) parts.push_back(a_elements[static_cast<size_t>(t.a_register(rep_m, step, f + e))]);
      words.push_back(pack_fragment_word(b, parts, b.getInt32Ty()));
    }
    return words;
  };

  int regs = instr.n / 2;
  // A zero accumulator is not read: the first K step writes D without taking it as input,
  // so no copies of zeros into D's registers come between the fence and the wgmma (a
  // register write there would make ptxas wait for the groups still running).
  const bool zero_acc = is_zero_constant(op.operands[2]);
  WgmmaAsm accumulating = wgmma_asm(instr, regs, false), fresh = wgmma_asm(instr, regs, true);
  // A's words are packed before the fence, which orders the register writes before the reads.
  std::vector<std::vector<llvm::Value*>> a_words;
  for (int step = 0; step < t.reps_k; ++step)
    for (int m = 0; m < t.reps_m; ++m) a_words.push_back(a_operands(m, step));
  call_intrinsic(llvm::Intrinsic::nvvm_wgmma_fence_sync_aligned, {}, {});
  for (int step = 0; step < t.reps_k; ++step)
    for (int m = 0; m < t.reps_m; ++m)
      for (int n = 0; n < t.reps_n; ++n) {
        auto [b_base, b_per_group] = b_offset(n, step);
        std::vector<llvm::Value*> extra = a_words[static_cast<size_t>(step * t.reps_m + m)];
        extra.push_back(descriptor(slice_base(tiles.b, group_n, b_per_group), b_desc, b_base));
        const bool first_write = zero_acc && step == 0;
        extra.push_back(const_i32(first_write ? 0 : 1));
        std::vector<llvm::Value*> d;
        for (int i = 0; i < regs; ++i) d.push_back(acc[static_cast<size_t>(t.acc_register(m, n, i))]);
        const WgmmaAsm& wgmma = first_write ? fresh : accumulating;
        d = call_tied_asm(b, wgmma.text, wgmma.constraints, d, extra, first_write);
        for (int i = 0; i < regs; ++i) acc[static_cast<size_t>(t.acc_register(m, n, i))] = d[static_cast<size_t>(i)];
      }
  call_intrinsic(llvm::Intrinsic::nvvm_wgmma_commit_group_sync_aligned, {}, {});
  // A group reading a tile this dot stored into the scratch space runs on too: the next
  // lowering that takes the scratch space waits for it first (shared_base).
  const bool reads_scratch = !tiles.b_staged || (!a_registers && !tiles.a_staged);
  if (dots_in_flight.count(&op)) {
    acc = wait_for_wgmma(1, acc);
  } else {
    running_wgmma_.push_back(op.result());
    if (reads_scratch) scratch_readers_.insert(op.result());
  }
  define(op.result(), Regs{t.acc, acc});
}

std::vector<llvm::Value*> Lowering::wait_for_wgmma(int pending, const std::vector<llvm::Value*>& acc) {
  std::string kinds;
  for (llvm::Value* r : acc) kinds += r->getType()->isIntegerTy() ? 'r' : 'f';
  return call_tied_asm(b, fmt::format("wgmma.wait_group.sync.aligned {};", pending), output_constraints(kinds, true), acc, {});
}

// ptxas places a wgmma.wait_group where its latency model expects the group done, ahead of
// ops that do not depend on it. It does not move the wait above a shared-memory store, nor
// that store above the ops its value depends on: so before the wait, each thread stores a
// word that depends on every register of `ready` into its own anchor word, which nothing reads.
void Lowering::lower_wait_after(const ir::Op& op) {
  const ir::Value* product = op.operands[0];
  const bool running = std::find(running_wgmma_.begin(), running_wgmma_.end(), product) != running_wgmma_.end();
  const std::pair<const ir::Value*, llvm::BasicBlock*> anchor{op.operands[1], b.GetInsertBlock()};
  if (running && last_anchor != anchor) {
    last_anchor = anchor;
    llvm::Value* word = nullptr;
    for (llvm::Value* v : home(op.operands[1]).values) {  // numbers (the verifier takes no pointers)
      llvm::Type* type = v->getType();
      llvm::Value* bits = type->isIntegerTy() ? v : b.CreateBitCast(v, b.getIntNTy(type->getPrimitiveSizeInBits()));
      bits = b.CreateZExtOrTrunc(bits, b.getInt32Ty());
      word = word ? b.CreateOr(word, bits) : bits;
    }
    llvm::Value* anchors = b.CreateConstGEP1_64(b.getInt8Ty(), shared_block(), static_cast<uint64_t>(anchor_offset));
    b.CreateStore(word, b.CreateGEP(b.getInt32Ty(), anchors, thread_id()));
  }
  if (running) complete_wgmma_read_by(op);
  define(op.result(), home(product));
}

bool Lowering::chains_running_accumulator(const ir::Op& op) const {
  if (op.kind != ir::OpKind::dot) return false;
  const ir::Value* acc = op.operands[2];
  if (std::find(running_wgmma_.begin(), running_wgmma_.end(), acc) == running_wgmma_.end()) return false;
  // A group reading the scratch space completes first: this dot may store its operands there.
  if (scratch_readers_.count(acc)) return false;
  if (users_.at(acc).size() != 1) return false;
  std::optional<WgmmaTiling> tiling = wgmma_dot_tiling(op), running = wgmma_dot_tiling(*acc->def);
  return tiling && running && tiling->instr.ptx_name() == running->instr.ptx_name() && tiling->acc == running->acc;
}

void Lowering::complete_wgmma_read_by(const ir::Op& op) {
  const bool chained = chains_running_accumulator(op);
  std::optional<size_t> youngest;
  for (const ir::Value* v : op.operands) {
    if (chained && v == op.operands[2]) continue;
    auto it = std::find(running_wgmma_.begin(), running_wgmma_.end(), v);
    if (it != running_wgmma_.end()) youngest = std::max(youngest.value_or(0), size_t(it - running_wgmma_.begin()));
  }
  if (youngest) complete_wgmma(*youngest);
}

void Lowering::complete_wgmma(size_t index) {
  const size_t completing = index + 1;
  std::vector<llvm::Value*> regs;
  for (size_t i = 0; i < completing; ++i) {
    const auto& values = home_.at(running_wgmma_[i]).values;
    regs.insert(regs.end(), values.begin(), values.end());
  }
  regs = wait_for_wgmma(static_cast<int>(running_wgmma_.size() - completing), regs);
  auto landed = regs.begin();
  for (size_t i = 0; i < completing; ++i) {
    auto& values = home_.at(running_wgmma_[i]).values;
    std::copy(landed, landed + static_cast<std::ptrdiff_t>(values.size()), values.begin());
    landed += static_cast<std::ptrdiff_t>(values.size());
  }
  for (size_t i = 0; i < completing; ++i) scratch_readers_.erase(running_wgmma_[i]);
  running_wgmma_.erase(running_wgmma_.begin(), running_wgmma_.begin() + static_cast<std::ptrdiff_t>(completing));
}

void Lowering::complete_scratch_readers() {
  std::optional<size_t> youngest;
  for (size_t i = 0; i < running_wgmma_.size(); ++i)
    if (scratch_readers_.count(running_wgmma_[i])) youngest = i;
  if (youngest) complete_wgmma(*youngest);
}

void Lowering::complete_all_wgmma() {
  if (!running_wgmma_.empty()) complete_wgmma(running_wgmma_.size() - 1);
}

}  // namespace tilejit::codegen::lowering
