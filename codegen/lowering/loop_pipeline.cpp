#include "codegen/lowering/loop_pipeline.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/shared_operand.h"
#include "codegen/lowering/tma.h"
#include "codegen/shared_operands.h"

namespace tilejit::codegen::lowering {

namespace {

using K = ir::OpKind;

}  // namespace

bool recomputable(K kind) {
  switch (kind) {
    case K::constant:
    case K::program_id:
    case K::num_programs:
    case K::arange:
    case K::splat:
    case K::broadcast:
    case K::expand_dims: return true;
    default: return is_elementwise(kind);
  }
}

namespace {

// Adds the body's ops that `v` depends on to `slice`; false when `v` depends on a loop-carried
// value or on an op that cannot be lowered again.
bool collect_slice(const ir::Block& body, const ir::Value* v, std::set<const ir::Op*>& slice) {
  if (v == body.args[0] || v->owner != &body) return true;  // the induction variable, or from outside
  const ir::Op* op = v->def;
  if (!op || !recomputable(op->kind)) return false;
  if (!slice.insert(op).second) return true;
  return std::all_of(op->operands.begin(), op->operands.end(),
                     [&](const ir::Value* o) { return collect_slice(body, o, slice); });
}

// The ops of `slice`, in the order the body computes them.
std::vector<const ir::Op*> in_body_order(const ir::Block& body, const std::set<const ir::Op*>& slice) {
  std::vector<const ir::Op*> ordered;
  for (const auto& op : body.ops)
    if (slice.count(op.get())) ordered.push_back(op.get());
  return ordered;
}

std::map<const ir::Value*, int> count_uses(const ir::Block& block) {
  std::map<const ir::Value*, int> uses;
  ir::walk(block, [&](const ir::Op& op) {
    for (const ir::Value* v : op.operands) ++uses[v];
  });
  return uses;
}

// The op of `body` that uses `v` (its only use), or null.
const ir::Op* only_user(const ir::Block& body, const ir::Value* v, std::map<const ir::Value*, int>& uses) {
  if (uses[v] != 1) return nullptr;
  for (const auto& op : body.ops)
    if (std::find(op->operands.begin(), op->operands.end(), v) != op->operands.end()) return op.get();
  return nullptr;
}

// The ops of `body` that use `v`, one entry per use; empty unless every use of `v` is there.
std::vector<const ir::Op*> users_in(const ir::Block& body, const ir::Value* v, std::map<const ir::Value*, int>& uses) {
  std::vector<const ir::Op*> users;
  for (const auto& op : body.ops)
    for (const ir::Value* o : op->operands)
      if (o == v) users.push_back(op.get());
  return static_cast<int>(users.size()) == uses[v] ? users : std::vector<const ir::Op*>{};
}

// The dot that reads `v` through shared memory at its use by `user` (v itself as A or B, or
// through trans(v)); null when that use is not such a read. `only_use`: v has no other.
const ir::Op* dot_reading_through_shared(const Lowering& L, const ir::Block& body, const ir::Value* v,
                                         const ir::Op* user, bool only_use, std::map<const ir::Value*, int>& uses) {
  const ir::Value* operand = v;
  bool transposed = user->kind == K::trans && transposed_dot_operand(user->result()) == v;
  if (transposed) {
    operand = user->result();
    user = only_user(body, operand, uses);
  }
  if (!user || user->kind != K::dot || (user->operands[0] == operand) == (user->operands[1] == operand)) return nullptr;
  int index = user->operands[0] == operand ? 0 : 1;
  if (!L.dot_tiling(*user)) return nullptr;
  bool k_major = index == 0 ? !transposed : transposed;  // A held (M, K), B held as trans of (N, K)
  if (dot_reads_from_shared(v->type.dtype, k_major)) return user;
  // An 8-bit B given (K, N) for wgmma is staged as given and stored transposed at each step.
  std::optional<WgmmaTiling> wgmma = L.wgmma_dot_tiling(*user);
  bool transposed_b = index == 1 && wgmma && wgmma_held_b(v, wgmma->instr.element_bits).transposed;
  return transposed_b && only_use ? user : nullptr;
}

// The dots of `body` that read `v` through shared memory, one per use (every dot reads the
// same tile, as its layout on each asks), when every use of v is such a read; else empty.
std::vector<const ir::Op*> dots_reading_through_shared(const Lowering& L, const ir::Block& body, const ir::Value* v,
                                                       std::map<const ir::Value*, int>& uses) {
  std::vector<const ir::Op*> users = users_in(body, v, uses), dots;
  for (const ir::Op* user : users) {
    const ir::Op* dot = dot_reading_through_shared(L, body, v, user, users.size() == 1, uses);
    if (!dot) return {};
    dots.push_back(dot);
  }
  return dots;
}

constexpr int kMaxConversionDepth = 8;  // ops followed between a load and the dot it feeds

bool is_shape_op(K kind) { return kind == K::broadcast || kind == K::expand_dims || kind == K::reshape; }

// Whether `v` is made of scalars, loads and values from outside `body` by elementwise and
// shape ops alone: no product, reduction or loop-carried value of the body.
bool made_of_loads(const ir::Block& body, const ir::Value* v, int depth = 0) {
  if (v->type.is_scalar() || v->owner != &body) return true;
  const ir::Op* op = v->def;
  if (!op || depth > kMaxConversionDepth) return false;  // a loop-carried value
  if (op->kind == K::load || op->kind == K::constant || op->kind == K::splat || op->kind == K::arange) return true;
  if (!is_elementwise(op->kind) && !is_shape_op(op->kind)) return false;
  return std::all_of(op->operands.begin(), op->operands.end(),
                     [&](const ir::Value* o) { return made_of_loads(body, o, depth + 1); });
}

// Whether every use of `v` leads, through elementwise ops (one at least) and broadcasts of
// `body` that combine it only with what made_of_loads allows, to a tensor-core dot's A or B:
// an operand converted or scaled on its way there (int8 weights widened to bf16, fp8 times
// its block scales), not a tile a product's result meets (attention's bias or mask, added to
// the logits). (A dot's own operands, and their transposes, are dots_reading_through_shared's.)
bool feeds_dots_through_elementwise(const Lowering& L, const ir::Block& body, const ir::Value* v,
                                    std::map<const ir::Value*, int>& uses, bool converted = false, int depth = 0) {
  std::vector<const ir::Op*> users = users_in(body, v, uses);
  if (users.empty() || depth > kMaxConversionDepth) return false;
  return std::all_of(users.begin(), users.end(), [&](const ir::Op* user) {
    if (user->kind == K::dot) return converted && user->operands[2] != v && L.dot_tiling(*user).has_value();
    const bool elementwise = is_elementwise(user->kind);
    if (!elementwise && !is_shape_op(user->kind)) return false;
    return std::all_of(user->operands.begin(), user->operands.end(),
                       [&](const ir::Value* o) { return o == v || made_of_loads(body, o); }) &&
           feeds_dots_through_elementwise(L, body, user->result(), uses, converted || elementwise, depth + 1);
  });
}

// Whether `dots` (those dots_reading_through_shared gave for v) are one wgmma that reads v as
// an 8-bit B stored transposed.
bool read_transposed(const Lowering& L, const std::vector<const ir::Op*>& dots, const ir::Value* v) {
  if (dots.size() != 1) return false;
  std::optional<WgmmaTiling> tiling = L.wgmma_dot_tiling(*dots[0]);
  if (!tiling) return false;
  HeldOperand b = wgmma_held_b(dots[0]->operands[1], tiling->instr.element_bits);
  return b.transposed && b.value == v;
}

}  // namespace

std::unique_ptr<LoopPipeline> LoopPipeline::plan(Lowering& L, const ir::Op& loop) {
  if (L.fn.num_stages < 2 || L.target.compute_capability < 80) return nullptr;
  std::map<const ir::Value*, int> uses = count_uses(L.fn.body);
  std::vector<Staged> staged = staged_loads(L, loop, uses);
  if (!staged.empty()) {
    bool specialized = can_specialize(L, loop, nullptr, staged);
    return std::unique_ptr<LoopPipeline>(new LoopPipeline(L, loop, nullptr, std::move(staged), uses, specialized));
  }
  // None of its own: a producer may run the copies of a loop inside it across its iterations.
  const ir::Op* inner = inner_loop_to_span(loop);
  if (!inner) return nullptr;
  staged = staged_loads(L, *inner, uses);
  if (staged.empty() || !can_specialize(L, *inner, &loop, staged)) return nullptr;
  std::optional<std::vector<const ir::Op*>> producer_slice = outer_slice(loop, *inner, staged);
  if (!producer_slice) return nullptr;
  auto pipeline = std::unique_ptr<LoopPipeline>(new LoopPipeline(L, *inner, &loop, std::move(staged), uses, true));
  pipeline->outer_slice_ = std::move(*producer_slice);
  return pipeline;
}

std::optional<std::vector<const ir::Op*>> LoopPipeline::outer_slice(const ir::Op& outer, const ir::Op& inner,
                                                                    const std::vector<Staged>& staged) {
  const ir::Block& body = outer.region(0);
  std::set<const ir::Op*> slice;
  auto needs = [&](const ir::Op& op, size_t operands) {
    return std::all_of(op.operands.begin(), op.operands.begin() + static_cast<std::ptrdiff_t>(operands),
                       [&](const ir::Value* v) { return collect_slice(body, v, slice); });
  };
  auto needs_all = [&](const ir::Op& op) { return needs(op, op.operands.size()); };
  bool computable = needs(inner, 3);  // its bounds and step, not the initial values it carries
  for (const Staged& s : staged) {
    computable = computable && needs_all(*s.load);
    for (const ir::Op* op : s.slice) computable = computable && needs_all(*op);
  }
  if (!computable) return std::nullopt;
  return in_body_order(body, slice);
}

std::vector<LoopPipeline::Staged> LoopPipeline::staged_loads(Lowering& L, const ir::Op& loop,
                                                             std::map<const ir::Value*, int>& uses) {
  const ir::Block& body = loop.region(0);
  std::vector<Staged> staged;
  for (const auto& op : body.ops) {
    auto read_by_wgmma = [&](const std::vector<const ir::Op*>& dots) {
      return std::any_of(dots.begin(), dots.end(), [&](const ir::Op* dot) { return L.wgmma_dot_tiling(*dot).has_value(); });
    };
    if (op->kind == K::desc_load && L.has_tma() && tma_column_proven(L, *op)) {
      std::vector<const ir::Op*> dots = dots_reading_through_shared(L, body, op->result(), uses);
      std::set<const ir::Op*> slice;
      if (dots.empty() || !std::all_of(op->operands.begin() + 1, op->operands.end(),
                                       [&](const ir::Value* at) { return collect_slice(body, at, slice); }))
        continue;
      staged.push_back({op.get(), in_body_order(body, slice), 0, read_by_wgmma(dots), /*tma=*/true});
      staged.back().transposed_b = read_transposed(L, dots, op->result());
      continue;
    }
    // Only loads whose masked-off elements are zero: the copies zero-fill.
    if (op->kind != K::load || op->result()->type.rank() != 2) continue;
    if (op->operands.size() > 2 && !is_zero_constant(op->operands[2])) continue;
    const ir::Type& type = op->result()->type;
    std::vector<const ir::Op*> dots = dots_reading_through_shared(L, body, op->result(), uses);
    // A staged tile's rows are swizzled in 16-byte chunks (codegen/shared_layout.h); a dot's
    // operand tiles have such rows, a tile read back may not.
    const bool read_back = dots.empty() && type.shape[1] * dtype_storage_bytes(type.dtype) >= 16 &&
                           feeds_dots_through_elementwise(L, body, op->result(), uses);
    if (dots.empty() && !read_back) continue;
    std::set<const ir::Op*> slice;
    if (!collect_slice(body, op->operands[0], slice)) continue;
    if (op->operands.size() > 1 && !collect_slice(body, op->operands[1], slice)) continue;
    const ir::Value* mask = op->operands.size() > 1 ? op->operands[1] : nullptr;
    int64_t width = L.access_width(*op, L.default_layout(type.shape), mask);
    if (width * dtype_storage_bytes(type.dtype) < 4) continue;  // cp.async copies 4, 8 or 16 bytes
    staged.push_back({op.get(), in_body_order(body, slice), width, read_by_wgmma(dots)});
    staged.back().transposed_b = read_transposed(L, dots, op->result());
    staged.back().read_back = read_back;
  }
  return staged;
}

LoopPipeline::LoopPipeline(Lowering& L, const ir::Op& loop, const ir::Op* outer, std::vector<Staged> staged,
                           const std::map<const ir::Value*, int>& uses, bool specialized)
    : L_(L),
      loop_(loop),
      outer_(outer),
      staged_(std::move(staged)),
      stages_(L.fn.num_stages),
      specialized_(specialized) {
  dot_in_flight_ = find_dot_in_flight(uses);
  for (const Staged& s : staged_) (s.tma ? uses_tma_ : uses_cp_async_) = true;
  if (specialized_)
    for (const Staged& s : staged_)
      if (int axis = multicast_axis(s); axis >= 0) multicast_axes_.insert(axis);
  multicast_ = !multicast_axes_.empty();
  product_turn_ = plan_product_turn();
}

int LoopPipeline::multicast_axis(const Staged& s) const {
  if (!s.tma || !s.load->has_attr("cluster_axis")) return -1;
  auto axis = static_cast<int>(s.load->attr_int("cluster_axis"));
  return L_.fn.cluster[static_cast<size_t>(axis)] > 1 ? axis : -1;
}

int LoopPipeline::dots_in_body() const {
  const ir::Block& body = loop_.region(0);
  return static_cast<int>(
      std::count_if(body.ops.begin(), body.ops.end(), [](const auto& op) { return op->kind == ir::OpKind::dot; }));
}

const ir::Op* LoopPipeline::find_dot_in_flight(const std::map<const ir::Value*, int>& uses) {
  if (stages_ < 3) return nullptr;
  const ir::Block& body = loop_.region(0);
  const ir::Op* dot = nullptr;
  int dots = 0;
  ir::walk(body, [&](const ir::Op& op) {
    if (op.kind == K::dot) ++dots, dot = &op;
  });
  if (dots != 1 || dot->result()->owner != &body) return nullptr;
  std::optional<WgmmaTiling> tiling = L_.wgmma_dot_tiling(*dot);
  if (!tiling) return nullptr;
  auto is_staged = [&](const ir::Value* v) {
    return std::any_of(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.load->result() == v; });
  };
  // Operands stored into scratch per iteration would be overwritten while still being read (a
  // transposed B is stored into its ring slot's own tile).
  HeldOperand b = wgmma_held_b(dot->operands[1], tiling->instr.element_bits);
  if (!is_staged(held_a(dot->operands[0], tiling->instr.element_bits).value) || !is_staged(b.value)) return nullptr;
  auto use_count = [&](const ir::Value* v) {
    auto it = uses.find(v);
    return it == uses.end() ? 0 : it->second;
  };
  const ir::Value* acc = dot->operands[2];
  const ir::Op& yield = *body.ops.back();
  for (size_t i = 0; i + 1 < body.args.size(); ++i) {
    if (body.args[1 + i] != acc || yield.operands[i] != dot->result()) continue;
    if (use_count(acc) != 1 || use_count(dot->result()) != 1) return nullptr;
    carried_index_ = i;
    return dot;
  }
  return nullptr;
}

void LoopPipeline::prologue(llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  auto& b = L_.b;
  saved_scratch_offset_ = L_.scratch_offset;
  int64_t end = SharedOperand::aligned(L_.scratch_offset);
  for (Staged& s : staged_) {
    s.offset = end;
    s.tile_bytes = SharedOperand::aligned(SharedOperand::bytes_of(s.load->result()->type));
    end += stages_ * s.tile_bytes;
    // A transposed tile per slot where the scratch space would make it wait for a group still
    // reading there (the dot in flight, or another product of the iteration). (Alone, the
    // dot is done by then: the scratch's barrier costs less than a slot's addresses.)
    if (!s.transposed_b || (!dot_in_flight_ && dots_in_body() < 2)) continue;
    s.own_transposed_tiles = true;
    s.transposed_offset = end;
    end += stages_ * s.tile_bytes;  // (N, K) tiles of the same bytes
  }
  if (uses_tma_) {
    barriers_offset_ = end;
    end += (specialized_ ? 2 : 1) * stages_ * kMbarrierBytes;
  }
  L_.scratch_offset = end;
  L_.reserve_shared(0);
  // Scratch tiles stored during the loop (an operand the ring does not hold) start aligned
  // too; the padding counts only when there are some.
  L_.scratch_offset = SharedOperand::aligned(end);
  // The rings overlay scratch space that earlier lowerings may still be reading, or have
  // written through the generic proxy (ordered before the TMA's writes by each writer's fence).
  if (uses_tma_) L_.fence_proxy_async();
  L_.barrier();
  if (uses_tma_) {
    L_.emit_if(first_thread(), "tma.init", [&] {
      for (int s = 0; s < stages_; ++s) mbarrier_init(L_, barrier(L_.const_i32(s)), 1);
      if (specialized_)
        for (int s = 0; s < stages_; ++s) mbarrier_init(L_, empty_barrier(L_.const_i32(s)), empty_arrivals());
      L_.fence_proxy_async();
      if (multicast_) L_.call_intrinsic(llvm::Intrinsic::nvvm_fence_mbarrier_init_release_cluster, {}, {});
    });
    // Nobody waits on an mbarrier, nor copies into or arrives on a peer's, before it is initialized.
    if (multicast_) cluster_barrier(L_);
    else L_.barrier();
  }
  if (dot_in_flight_) L_.dots_in_flight.insert(dot_in_flight_);
  if (specialized_) {
    split_warps(lb, ub, step);
    return;
  }
  for (int s = 0; s < stages_ - 1 - lag(); ++s) {
    llvm::Value* iv = b.CreateAdd(lb, b.CreateMul(step, llvm::ConstantInt::get(lb->getType(), s)));
    issue(iv, b.CreateICmpSLT(iv, ub), L_.const_i32(s));
    commit();
  }
}

llvm::Value* LoopPipeline::enter(llvm::Value* lb) {
  lb_ = lb;
  if (product_turn_) {
    L_.emit_if(second_warpgroup(), "turn.first", [&] { L_.pass_turn(); });
    L_.product_turn = product_turn_;
  }
  return outer_ ? L_.b.CreateLoad(L_.b.getInt32Ty(), position_variable_, "ring.position.entry") : L_.const_i32(0);
}

void LoopPipeline::begin_iteration(llvm::Value* iv, llvm::Value* ub, llvm::Value* step, llvm::Value* position) {
  auto& b = L_.b;
  llvm::Value* second_lap = b.CreateICmpSGE(position, L_.const_i32(stages_));
  llvm::Value* stage = slot_of(position, second_lap);
  if (specialized_) {
    release_slot(iv, step, stage);
    mbarrier_wait(L_, barrier(stage), b.CreateZExt(second_lap, b.getInt32Ty()));
    offer_tiles(stage);
    return;
  }
  if (uses_cp_async_)
    L_.call_intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b.getInt32(static_cast<uint32_t>(stages_ - 2 - lag()))});
  if (uses_tma_) mbarrier_wait(L_, barrier(stage), b.CreateZExt(second_lap, b.getInt32Ty()));
  L_.barrier();
  // cp.async writes through the generic proxy; wgmma reads through the async proxy: the fence
  // before that barrier is left to the first read (Lowering::copies_unfenced_before).
  if (std::any_of(staged_.begin(), staged_.end(), [](const Staged& s) { return s.read_by_wgmma && !s.tma; }))
    L_.copies_unfenced_before = &b.GetInsertBlock()->back();
  int behind = 1 + lag();
  llvm::Value* refill = slot_behind(stage, behind);
  llvm::Value* ahead = b.CreateAdd(iv, b.CreateMul(step, llvm::ConstantInt::get(iv->getType(), stages_ - behind)));
  issue(ahead, b.CreateICmpSLT(ahead, ub), refill);
  commit();
  offer_tiles(stage);
}

llvm::Value* LoopPipeline::slot_of(llvm::Value* position, llvm::Value* second_lap) {
  return L_.b.CreateSelect(second_lap, L_.b.CreateSub(position, L_.const_i32(stages_)), position);
}

// (slot - behind) mod S.
llvm::Value* LoopPipeline::slot_behind(llvm::Value* slot, int behind) {
  auto& b = L_.b;
  return b.CreateSelect(b.CreateICmpSLT(slot, L_.const_i32(behind)), b.CreateAdd(slot, L_.const_i32(stages_ - behind)),
                        b.CreateSub(slot, L_.const_i32(behind)));
}

llvm::Value* LoopPipeline::next_position(llvm::Value* position) {
  auto& b = L_.b;
  return b.CreateSelect(b.CreateICmpEQ(position, L_.const_i32(2 * stages_ - 1)), L_.const_i32(0),
                        b.CreateAdd(position, L_.const_i32(1)));
}

void LoopPipeline::leave(llvm::Value* position, llvm::Value* ub, llvm::Value* step) {
  if (product_turn_) {
    L_.product_turn.reset();
    L_.emit_if(L_.b.CreateNot(second_warpgroup()), "turn.last", [&] { L_.wait_for_turn(); });
  }
  if (dot_in_flight_) {
    const ir::Value* result = loop_.results[carried_index_];
    Regs regs = L_.home(result);
    regs.values = L_.wait_for_wgmma(0, regs.values);
    L_.define(result, std::move(regs));
  }
  if (!outer_) return;
  L_.b.CreateStore(position, position_variable_);
  release_last_slots(position, ub, step);
}

void LoopPipeline::finish() {
  if (dot_in_flight_) L_.dots_in_flight.erase(dot_in_flight_);
  if (uses_cp_async_) L_.call_intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
  // With multicast, the peers' consumers may still arrive on this CTA's empty mbarriers until
  // they are done too.
  if (multicast_) cluster_barrier(L_);
  else L_.barrier();
  // Every copy issued was for an iteration that waited for it: no TMA is in flight.
  if (uses_tma_) {
    L_.emit_if(first_thread(), "tma.inval", [&] {
      for (int s = 0; s < stages_; ++s) mbarrier_inval(L_, barrier(L_.const_i32(s)));
      if (specialized_)
        for (int s = 0; s < stages_; ++s) mbarrier_inval(L_, empty_barrier(L_.const_i32(s)));
    });
    L_.barrier();
  }
  for (const Staged& s : staged_) {
    L_.staged_operands.erase(s.load->result());
    L_.transposed_tiles.erase(s.load->result());
    L_.read_back_tiles.erase(s.load->result());
  }
  L_.scratch_offset = saved_scratch_offset_;
}

llvm::Value* LoopPipeline::tile(int64_t ring_offset, int64_t tile_bytes, llvm::Value* slot) {
  auto& b = L_.b;
  llvm::Value* offset = b.CreateAdd(L_.const_i32(ring_offset), b.CreateMul(slot, L_.const_i32(tile_bytes)));
  return b.CreateGEP(b.getInt8Ty(), L_.shared_block(), offset);
}

void LoopPipeline::offer_tiles(llvm::Value* slot) {
  for (const Staged& s : staged_) {
    if (s.read_back) {
      L_.read_back_tiles[s.load->result()] = tile(s.offset, s.tile_bytes, slot);
      continue;
    }
    L_.staged_operands[s.load->result()] = tile(s.offset, s.tile_bytes, slot);
    if (s.own_transposed_tiles) L_.transposed_tiles[s.load->result()] = tile(s.transposed_offset, s.tile_bytes, slot);
  }
}

void LoopPipeline::commit() {
  if (uses_cp_async_) L_.call_intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
}

llvm::Value* LoopPipeline::barrier(llvm::Value* slot) {
  auto& b = L_.b;
  llvm::Value* offset = b.CreateAdd(L_.const_i32(barriers_offset_), b.CreateMul(slot, L_.const_i32(kMbarrierBytes)));
  return b.CreateGEP(b.getInt8Ty(), L_.shared_block(), offset);
}

llvm::Value* LoopPipeline::first_thread() { return L_.b.CreateICmpEQ(L_.thread_id(), L_.const_i32(0)); }

void LoopPipeline::issue(llvm::Value* iv, llvm::Value* in_range, llvm::Value* slot, bool by_producer) {
  TJ_CHECK(!by_producer || !uses_cp_async_);  // a producer only issues TMA copies
  auto& b = L_.b;
  const ir::Value* iv_arg = loop_.region(0).args[0];
  // The prologue runs before the loop defines its induction variable.
  std::optional<Regs> current;
  if (L_.home_.count(iv_arg)) current = L_.home(iv_arg);
  L_.define_scalar(iv_arg, iv);
  std::vector<std::pair<const Staged*, BlockAt>> blocks;  // TMA-staged, and where
  for (const Staged& s : staged_) {
    L_.enter_region();
    for (const ir::Op* op : s.slice) L_.lower_op(*op);
    const ir::Op& load = *s.load;
    if (s.tma) {
      blocks.push_back({&s, block_at(L_, load)});
      continue;
    }
    const ir::Type& type = load.result()->type;
    LinearLayout layout = L_.default_layout(type.shape);
    std::vector<llvm::Value*> ptrs = L_.in_layout(load.operands[0], layout);
    std::vector<llvm::Value*> masks;
    if (load.operands.size() > 1) masks = L_.in_layout(load.operands[1], layout);
    SharedOperand dst(L_, type, tile(s.offset, s.tile_bytes, slot));
    int64_t element_bytes = dtype_storage_bytes(type.dtype), bytes = s.width * element_bytes;
    // .cg (L2 only) for whole 16-byte lines; smaller copies must go through L1 (.ca).
    llvm::Intrinsic::ID copy = bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                               : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                                            : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
    std::vector<bool> duplicate = layout.duplicate_registers();
    auto copy_registers = [&] {
      for (int r = 0; r < layout.num_regs(); r += static_cast<int>(s.width)) {
        if (duplicate[static_cast<size_t>(r)]) continue;
        std::vector<llvm::Value*> c = L_.coords(layout, r);
        llvm::Value* wanted = masks.empty() ? in_range : b.CreateAnd(in_range, masks[static_cast<size_t>(r)]);
        llvm::Value* size = b.CreateSelect(wanted, L_.const_i32(bytes), L_.const_i32(0));
        llvm::Value* to = dst.address(c[0], b.CreateMul(c[1], L_.const_i32(element_bytes)));
        L_.call_intrinsic(copy, {}, {to, ptrs[static_cast<size_t>(r)], size});
      }
    };
    // Threads that hold copies of another thread's elements leave the copy to it.
    if (layout.replicated_lane_mask() || layout.replicated_warp_mask()) L_.emit_if(L_.owns_data(layout), "cp.async.owner", copy_registers);
    else copy_registers();
  }
  // One thread announces the iteration's bytes on the slot's mbarrier and issues its copies.
  // A producer copies its share of a block the cluster's CTAs share into all of them, whose
  // producers copy the other shares into this CTA: every CTA still receives every byte.
  auto issue_blocks = [&] {
    int64_t bytes = 0;
    for (auto& [s, at] : blocks) bytes += SharedOperand::bytes_of(s->load->result()->type);
    mbarrier_arrive_expect_tx(L_, barrier(slot), bytes);
    for (auto& [s, at] : blocks) {
      std::optional<TmaMulticast> multicast;
      if (int axis = multicast_axis(*s); by_producer && axis >= 0) multicast = multicast_share(axis);
      issue_tma_block(L_, s->load->operands[0], tile(s->offset, s->tile_bytes, slot), barrier(slot), at,
                      multicast ? &*multicast : nullptr);
    }
  };
  if (!blocks.empty() && by_producer) issue_blocks();
  if (!blocks.empty() && !by_producer) L_.emit_if(b.CreateAnd(first_thread(), in_range), "tma.issue", issue_blocks);
  if (current) L_.define(iv_arg, *current);
  L_.enter_region();
}

}  // namespace tilejit::codegen::lowering
