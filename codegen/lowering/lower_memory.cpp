// Global loads and stores. Consecutive registers that hold consecutive addresses become
// one vector access of up to 16 bytes when contiguity, alignment and mask constancy
// (codegen/axis_info.h) allow; masked-off accesses are branched around, so they touch no
// memory. A thread's registers that hold the same address under the same mask (runs of equal
// values: a scale repeated over its block of K) load it once. A load a loop pipeline has
// staged reads its iteration's tile in shared memory instead (codegen/lowering/
// loop_pipeline.h). Stores are made only by the thread that owns each element.
#include <algorithm>
#include <numeric>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"

namespace tilejit::codegen::lowering {

using K = ir::OpKind;

namespace {

int64_t floor_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// How many registers of the layout hold consecutive elements of the last dim.
int64_t layout_vector(const LinearLayout& layout) {
  int last = layout.rank() - 1;
  int64_t n = 1;
  for (const Coord& basis : layout.reg) {
    Coord expect(layout.rank(), 0);
    expect[last] = n;
    if (basis != expect) break;
    n *= 2;
  }
  return n;
}

// For each register of a load in `layout`, the lowest register that loads the same element
// under the same mask: the pointer and mask are constant over aligned runs of `constancy[d]`
// elements along each dim d, and a register bit whose basis moves less than a run along one
// dim (or not at all) leaves the run, and so the loaded value, unchanged. (A scale repeated
// over its block of K: a thread holding 16 elements of one block loads its scale once.)
std::vector<int> first_register_loading_the_same(const LinearLayout& layout, const std::vector<int64_t>& constancy) {
  int same_bits = 0;
  for (size_t i = 0; i < layout.reg.size(); ++i) {
    const Coord& basis = layout.reg[i];
    int moved = -1, dims = 0;
    for (int d = 0; d < layout.rank(); ++d)
      if (basis[static_cast<size_t>(d)]) moved = d, ++dims;
    // Coordinates combine by XOR: a basis below the run's power of two keeps the bits above.
    if (dims == 0 || (dims == 1 && basis[static_cast<size_t>(moved)] < floor_pow2(constancy[static_cast<size_t>(moved)])))
      same_bits |= 1 << i;
  }
  std::vector<int> first(static_cast<size_t>(layout.num_regs()));
  for (int r = 0; r < layout.num_regs(); ++r) first[static_cast<size_t>(r)] = r & ~same_bits;
  return first;
}

}  // namespace

int64_t Lowering::access_width(const ir::Op& op, const LinearLayout& layout, const ir::Value* mask) {
  const ir::Value* ptr = op.operands[0];
  int last = layout.rank() - 1;
  int64_t bytes = dtype_storage_bytes(ptr->type.dtype);
  const AxisInfo& info = axis().info(ptr);
  int64_t v = std::min<int64_t>(layout_vector(layout), 16 / bytes);
  v = std::min(v, info.contiguity[last]);
  v = std::min(v, std::max<int64_t>(1, info.divisibility[last] / bytes));
  if (mask) v = std::min(v, axis().info(mask).constancy[last]);
  return floor_pow2(std::max<int64_t>(v, 1));
}

void Lowering::lower_memory(const ir::Op& op) {
  bool is_load = op.kind == K::load;
  if (is_load && staged_operands.count(op.result())) return;  // its loop pipeline copies it
  const ir::Value* ptr = op.operands[0];
  const ir::Value* value = is_load ? nullptr : op.operands[1];
  const ir::Value* mask = op.operands.size() > (is_load ? 1u : 2u) ? op.operands[is_load ? 1 : 2] : nullptr;
  const ir::Value* other = is_load && op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType dtype = ptr->type.dtype;
  llvm::Type* mem = memory_type(dtype);
  int64_t bytes = dtype_storage_bytes(dtype);
  auto to_register = [&](llvm::Value* v) { return dtype == DType::i1 ? b.CreateICmpNE(v, b.getInt8(0)) : v; };
  auto to_memory = [&](llvm::Value* v) { return dtype == DType::i1 ? b.CreateZExt(v, mem) : v; };

  bool is_scalar = ptr->type.is_scalar();
  LinearLayout layout = is_scalar ? LinearLayout{} : default_layout(ptr->type.shape);
  if (is_load && !is_scalar)
    layout = load_layout(op, [&](const ir::Value* v) { return predicted_layout(v, 0); });
  if (auto staged = is_load ? read_back_tiles.find(op.result()) : read_back_tiles.end(); staged != read_back_tiles.end()) {
    // Its loop pipeline copied it into this iteration's slot (zeros where masked off).
    std::vector<llvm::Value*> values = SharedOperand(*this, op.result()->type, staged->second).load(layout, mem);
    for (llvm::Value*& v : values) v = to_register(v);
    define(op.result(), Regs{layout, values});
    return;
  }
  auto regs_of = [&](const ir::Value* v) {
    return is_scalar ? std::vector<llvm::Value*>{scalar(v)} : in_layout(v, layout);
  };
  std::vector<llvm::Value*> ptrs = regs_of(ptr);
  std::vector<llvm::Value*> masks = mask ? regs_of(mask) : std::vector<llvm::Value*>{};
  std::vector<llvm::Value*> others = other ? regs_of(other) : std::vector<llvm::Value*>{};
  std::vector<llvm::Value*> values = value ? regs_of(value) : std::vector<llvm::Value*>{};
  int64_t width = is_scalar ? 1 : access_width(op, layout, mask);
  int count = static_cast<int>(ptrs.size());
  std::vector<bool> dup = is_scalar ? std::vector<bool>{false} : layout.duplicate_registers();
  llvm::Value* owner = is_load ? nullptr : owns_data(layout);

  std::vector<llvm::Value*> result(count);
  llvm::Type* access_type = width > 1 ? llvm::FixedVectorType::get(mem, static_cast<unsigned>(width)) : mem;
  llvm::Align align(static_cast<uint64_t>(width * bytes));
  std::vector<int> first_same(static_cast<size_t>(count));
  std::iota(first_same.begin(), first_same.end(), 0);
  if (is_load && !is_scalar && width == 1) {
    std::vector<int64_t> constancy = axis().info(ptr).constancy;
    for (const ir::Value* v : {mask, other})
      if (v && !v->type.is_scalar())
        for (size_t d = 0; d < constancy.size(); ++d) constancy[d] = std::min(constancy[d], axis().info(v).constancy[d]);
    first_same = first_register_loading_the_same(layout, constancy);
  }
  for (int r = 0; r < count; r += static_cast<int>(width)) {
    llvm::Value* pred = mask ? masks[r] : nullptr;
    if (first_same[static_cast<size_t>(r)] != r) {
      result[r] = result[first_same[static_cast<size_t>(r)]];
      continue;
    }
    if (is_load) {
      llvm::Value* fallback = llvm::PoisonValue::get(access_type);
      for (int i = 0; i < width; ++i) {
        llvm::Value* o = other ? to_memory(others[r + i]) : llvm::Constant::getNullValue(mem);
        fallback = width > 1 ? b.CreateInsertElement(fallback, o, static_cast<uint64_t>(i)) : o;
      }
      // Several bytes load as one integer, whose bytes shifts take apart: LLVM's vectors of
      // i8 live in 16-bit registers, one extraction, widening and masking per element.
      const bool packed_bytes = width > 1 && mem->isIntegerTy(8) && width * 8 <= 64;
      llvm::Type* load_type = packed_bytes ? b.getIntNTy(static_cast<unsigned>(width * 8)) : access_type;
      if (packed_bytes) fallback = b.CreateBitCast(fallback, load_type);
      llvm::Value* loaded = nullptr;
      if (pred) {
        llvm::BasicBlock* before = b.GetInsertBlock();
        llvm::Value* in_branch = nullptr;
        auto [last, merge] = emit_if(pred, "load", [&] { in_branch = b.CreateAlignedLoad(load_type, ptrs[r], align); });
        llvm::PHINode* phi = b.CreatePHI(load_type, 2);
        phi->addIncoming(in_branch, last);
        phi->addIncoming(fallback, before);
        loaded = phi;
      } else {
        loaded = b.CreateAlignedLoad(load_type, ptrs[r], align);
      }
      for (int i = 0; i < width; ++i) {
        llvm::Value* e = width == 1     ? loaded
                         : packed_bytes ? b.CreateTrunc(b.CreateLShr(loaded, static_cast<uint64_t>(8 * i)), mem)
                                        : b.CreateExtractElement(loaded, static_cast<uint64_t>(i));
        result[r + i] = to_register(e);
      }
      continue;
    }
    if (dup[r]) continue;
    llvm::Value* data = llvm::PoisonValue::get(access_type);
    for (int i = 0; i < width; ++i) {
      llvm::Value* e = to_memory(values[r + i]);
      data = width > 1 ? b.CreateInsertElement(data, e, static_cast<uint64_t>(i)) : e;
    }
    llvm::Value* cond = pred ? b.CreateAnd(owner, pred) : owner;
    emit_if(cond, "store", [&] { b.CreateAlignedStore(data, ptrs[r], align); });
  }
  if (!is_load) return;
  if (is_scalar) define_scalar(op.result(), result[0]);
  else define(op.result(), Regs{layout, result});
}

namespace {

// Whether every element of `layout` has one owner: no thread or register holds another's copy.
bool owned_once(const LinearLayout& layout) {
  const std::vector<bool> dup = layout.duplicate_registers();
  return !layout.replicated_lane_mask() && !layout.replicated_warp_mask() &&
         std::none_of(dup.begin(), dup.end(), [](bool d) { return d; });
}

}  // namespace

void Lowering::lower_atomic(const ir::Op& op) {
  const ir::Value* ptr = op.operands[0];
  bool is_cas = op.kind == K::atomic_cas;
  const ir::Value* mask = !is_cas && op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType dtype = ptr->type.dtype;
  bool is_scalar = ptr->type.is_scalar();
  // A computed value is added where it lies (a dot's accumulator: no trip through shared
  // memory), when each of its elements has one owner; the addresses are computed to match.
  const ir::Value* value = op.operands[1];
  LinearLayout layout = is_scalar ? LinearLayout{} : default_layout(ptr->type.shape);
  if (!is_scalar && !is_cas && !value->type.is_scalar() && value->def && !rematerializable(value) &&
      owned_once(home(value).layout))
    layout = home(value).layout;
  auto regs_of = [&](const ir::Value* v) {
    return is_scalar ? std::vector<llvm::Value*>{scalar(v)} : in_layout(v, layout);
  };
  std::vector<llvm::Value*> ptrs = regs_of(ptr);
  std::vector<llvm::Value*> a = regs_of(op.operands[1]);
  std::vector<llvm::Value*> c = is_cas ? regs_of(op.operands[2]) : std::vector<llvm::Value*>{};
  std::vector<llvm::Value*> masks = mask ? regs_of(mask) : std::vector<llvm::Value*>{};
  std::vector<bool> dup = is_scalar ? std::vector<bool>{false} : layout.duplicate_registers();
  llvm::Value* owner = owns_data(layout);
  llvm::SyncScope::ID scope = ctx.getOrInsertSyncScopeID("device");
  llvm::Type* type = llvm_type(ir::Type::scalar(dtype));
  llvm::Align align(static_cast<uint64_t>(dtype_storage_bytes(dtype)));

  std::vector<llvm::Value*> result(ptrs.size());
  for (size_t r = 0; r < ptrs.size(); ++r) {
    if (dup[r]) {
      result[r] = llvm::Constant::getNullValue(type);  // replaced by the owner's value below
      continue;
    }
    llvm::Value* cond = mask ? b.CreateAnd(owner, masks[r]) : owner;
    llvm::BasicBlock* before = b.GetInsertBlock();
    llvm::Value* old = nullptr;
    auto [last, merge] = emit_if(cond, "atomic", [&] {
      if (is_cas) {
        auto* x = b.CreateAtomicCmpXchg(ptrs[r], a[r], c[r], align, llvm::AtomicOrdering::Monotonic,
                                        llvm::AtomicOrdering::Monotonic, scope);
        old = b.CreateExtractValue(x, 0);
        return;
      }
      llvm::AtomicRMWInst::BinOp bin;
      if (op.kind == K::atomic_add) bin = is_float(dtype) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
      else bin = is_float(dtype) ? llvm::AtomicRMWInst::FMax : llvm::AtomicRMWInst::Max;
      old = b.CreateAtomicRMW(bin, ptrs[r], a[r], align, llvm::AtomicOrdering::Monotonic, scope);
    });
    llvm::PHINode* phi = b.CreatePHI(type, 2);
    phi->addIncoming(old, last);
    phi->addIncoming(llvm::Constant::getNullValue(type), before);
    result[r] = phi;
  }
  if (is_scalar) {
    // Thread 0 performed the atomic; every thread gets its result.
    LinearLayout single = LinearLayout::blocked({1}, fn.num_warps, 1);
    std::vector<llvm::Value*> shared =
        convert_through_shared(ir::Type{dtype, false, {1}}, Regs{single, result}, single);
    define_scalar(op.result(), shared[0]);
    return;
  }
  Regs owned{layout, result};
  bool replicated = layout.replicated_lane_mask() || layout.replicated_warp_mask();
  for (bool d : dup) replicated |= d;
  if (replicated) result = convert_through_shared(op.result()->type, owned, layout);
  define(op.result(), Regs{layout, result});
}

}  // namespace tilejit::codegen::lowering
