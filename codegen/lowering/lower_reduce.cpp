// Reductions along one axis: first within each thread's registers, then across lanes with
// butterfly shuffles, then across warps through shared memory. Every thread ends with the
// result for the coordinates it holds, so the result's layout is the input's with the axis
// removed (bases along the axis become zero: replicated data).
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

struct Partial {
  llvm::Value* value;
  llvm::Value* index;  // arg reductions only
};

class Reducer {
 public:
  Reducer(Lowering& L, const std::string& kind, DType dtype) : L_(L), kind_(kind), dtype_(dtype) {
    arg_ = kind == "argmax" || kind == "argmin";
    compute_ = dtype == DType::f16 || dtype == DType::bf16 ? DType::f32 : (dtype == DType::i1 || dtype == DType::i8) ? DType::i32 : dtype;
  }

  DType compute_dtype() const { return compute_; }
  bool is_arg() const { return arg_; }

  llvm::Value* widen(llvm::Value* v) { return emit_cast(L_, v, dtype_, compute_, false); }
  llvm::Value* narrow(llvm::Value* v) { return emit_cast(L_, v, compute_, dtype_, false); }

  Partial combine(const Partial& a, const Partial& b) {
    auto& B = L_.b;
    if (!arg_) {
      ir::OpKind op = kind_ == "sum" ? ir::OpKind::add : kind_ == "max" ? ir::OpKind::maximum : ir::OpKind::minimum;
      return {emit_binary(L_, op, compute_, a.value, b.value), nullptr};
    }
    // b wins if it is strictly better, or NaN where a is not, or equal with a smaller index.
    llvm::Value* better = emit_compare(L_, kind_ == "argmax" ? "gt" : "lt", compute_, b.value, a.value);
    if (is_float(compute_)) {
      llvm::Value* b_nan = B.CreateFCmpUNO(b.value, b.value);
      llvm::Value* a_nan = B.CreateFCmpUNO(a.value, a.value);
      better = B.CreateOr(better, B.CreateAnd(b_nan, B.CreateNot(a_nan)));
      llvm::Value* same = B.CreateOr(B.CreateFCmpOEQ(a.value, b.value), B.CreateAnd(a_nan, b_nan));
      better = B.CreateOr(better, B.CreateAnd(same, B.CreateICmpSLT(b.index, a.index)));
    } else {
      better = B.CreateOr(better, B.CreateAnd(B.CreateICmpEQ(a.value, b.value), B.CreateICmpSLT(b.index, a.index)));
    }
    return {B.CreateSelect(better, b.value, a.value), B.CreateSelect(better, b.index, a.index)};
  }

  llvm::Value* shuffle_xor(llvm::Value* v, int lane_mask) {
    auto& B = L_.b;
    llvm::Type* type = v->getType();
    auto shfl = [&](llvm::Value* x) {
      return L_.call_intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                               {B.getInt32(0xffffffffu), x, B.getInt32(static_cast<uint32_t>(lane_mask)), B.getInt32(0x1f)});
    };
    if (type->isIntegerTy(64)) {
      llvm::Value* lo = shfl(B.CreateTrunc(v, B.getInt32Ty()));
      llvm::Value* hi = shfl(B.CreateTrunc(B.CreateLShr(v, 32), B.getInt32Ty()));
      return B.CreateOr(B.CreateZExt(lo, type), B.CreateShl(B.CreateZExt(hi, type), 32));
    }
    llvm::Value* bits = type->isIntegerTy(32) ? v : B.CreateBitCast(v, B.getInt32Ty());
    llvm::Value* r = shfl(bits);
    return type->isIntegerTy(32) ? r : B.CreateBitCast(r, type);
  }

  Partial shuffle(const Partial& p, int lane_mask) {
    return {shuffle_xor(p.value, lane_mask), arg_ ? shuffle_xor(p.index, lane_mask) : nullptr};
  }

 private:
  Lowering& L_;
  std::string kind_;
  DType dtype_;
  DType compute_;
  bool arg_ = false;
};

bool along(const Coord& basis, int axis) { return basis[axis] != 0; }

void check_single_dim(const std::vector<Coord>& bases) {
  for (auto& basis : bases) {
    int nonzero = 0;
    for (auto v : basis) nonzero += v != 0;
    TJ_CHECK(nonzero <= 1);
  }
}

}  // namespace

void Lowering::lower_reduce(const ir::Op& op) {
  const ir::Value* input = op.operands[0];
  const ir::Value* result = op.result();
  int axis = static_cast<int>(op.attr_int("axis"));
  Reducer red(*this, op.attr_str("kind"), input->type.dtype);
  const Regs& in = home(input);
  const LinearLayout& layout = in.layout;
  check_single_dim(layout.reg);
  check_single_dim(layout.lane);
  check_single_dim(layout.warp);

  // 1. Within the thread: registers that differ only along the axis combine.
  std::vector<bool> dup = layout.duplicate_registers();
  std::map<Coord, Partial> by_slice;
  std::vector<Coord> slice_of(layout.num_regs());
  for (int r = 0; r < layout.num_regs(); ++r) {
    Coord key = layout.reg_coord(r);
    key[axis] = 0;
    slice_of[r] = key;
    if (dup[r]) continue;
    Partial p{red.widen(in.values[r]), red.is_arg() ? coords(layout, r)[axis] : nullptr};
    auto it = by_slice.find(key);
    if (it == by_slice.end()) by_slice.emplace(key, p);
    else it->second = red.combine(it->second, p);
  }

  // 2. Across lanes.
  for (size_t i = 0; i < layout.lane.size(); ++i)
    if (along(layout.lane[i], axis))
      for (auto& [key, p] : by_slice) p = red.combine(p, red.shuffle(p, 1 << i));

  // 3. Across warps, through shared memory.
  std::vector<int> warp_bits;
  for (size_t i = 0; i < layout.warp.size(); ++i)
    if (along(layout.warp[i], axis)) warp_bits.push_back(static_cast<int>(i));
  LinearLayout out_layout = layout.remove_dim(axis);
  if (!warp_bits.empty()) {
    int groups = 1 << warp_bits.size();
    int64_t slice_elems = std::max<int64_t>(1, out_layout.rank() ? ir::Type{DType::i32, false, out_layout.shape}.numel() : 1);
    llvm::Type* vtype = llvm_type(ir::Type::scalar(red.compute_dtype()));
    int64_t vbytes = static_cast<int64_t>(module()->getDataLayout().getTypeAllocSize(vtype));
    int64_t value_bytes = groups * slice_elems * vbytes;
    reserve_shared(value_bytes + (red.is_arg() ? groups * slice_elems * 4 : 0));
    llvm::Value* base = shared_base();
    llvm::Value* index_base = b.CreateGEP(b.getInt8Ty(), base, const_i32(value_bytes));
    llvm::Value* group = const_i32(0);
    for (size_t k = 0; k < warp_bits.size(); ++k)
      group = b.CreateOr(group, b.CreateShl(b.CreateAnd(b.CreateLShr(warp_id(), warp_bits[k]), 1), static_cast<uint64_t>(k)));
    // out_layout numbers registers as the input does, with the axis dropped.
    auto slice_index = [&](int r) {
      if (!out_layout.rank()) return const_i32(0);
      Offset offset = linear_offset(out_layout, r);
      return b.CreateAdd(offset.thread, const_i32(offset.constant));
    };
    barrier();
    // One writer per slot: of the threads holding the same partial (the lanes along the axis
    // after the shuffles, replicas of the input), the first; each group along the axis has
    // its own slots.
    uint32_t warp_replicas = out_layout.replicated_warp_mask();
    for (int bit : warp_bits) warp_replicas &= ~(1u << bit);
    llvm::Value* writer = b.CreateAnd(
        b.CreateICmpEQ(b.CreateAnd(lane_id(), const_i32(out_layout.replicated_lane_mask())), const_i32(0)),
        b.CreateICmpEQ(b.CreateAnd(warp_id(), const_i32(warp_replicas)), const_i32(0)));
    emit_if(writer, "reduce.write", [&] {
      std::map<Coord, bool> written;
      for (int r = 0; r < layout.num_regs(); ++r) {
        if (dup[r] || written[slice_of[r]]) continue;
        written[slice_of[r]] = true;
        llvm::Value* slot = b.CreateAdd(b.CreateMul(group, const_i32(slice_elems)), slice_index(r));
        const Partial& p = by_slice.at(slice_of[r]);
        b.CreateStore(p.value, b.CreateGEP(vtype, base, slot));
        if (red.is_arg()) b.CreateStore(p.index, b.CreateGEP(b.getInt32Ty(), index_base, slot));
      }
    });
    barrier();
    for (auto& [key, p] : by_slice) {
      int r = 0;
      while (slice_of[r] != key || dup[r]) ++r;
      llvm::Value* idx = slice_index(r);
      Partial acc{nullptr, nullptr};
      for (int g = 0; g < groups; ++g) {
        llvm::Value* slot = b.CreateAdd(const_i32(g * slice_elems), idx);
        Partial q{b.CreateLoad(vtype, b.CreateGEP(vtype, base, slot)),
                  red.is_arg() ? b.CreateLoad(b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), index_base, slot)) : nullptr};
        acc = g == 0 ? q : red.combine(acc, q);
      }
      p = acc;
    }
  }

  auto final_value = [&](const Partial& p) { return red.is_arg() ? p.index : red.narrow(p.value); };
  if (result->type.is_scalar()) {
    define_scalar(result, final_value(by_slice.begin()->second));
    return;
  }
  ReducedLayout compact = reduced_layout(layout, axis);
  std::vector<llvm::Value*> values;
  for (int j = 0; j < compact.layout.num_regs(); ++j) {
    int r = 0;
    for (size_t k = 0; k < compact.kept_bits.size(); ++k)
      if (j >> k & 1) r |= 1 << compact.kept_bits[k];
    values.push_back(final_value(by_slice.at(slice_of[r])));
  }
  define(result, Regs{compact.layout, values});
}

ReducedLayout reduced_layout(const LinearLayout& in, int axis) {
  LinearLayout out = in.remove_dim(axis);
  ReducedLayout r{out, {}};
  r.layout.reg.clear();
  for (size_t i = 0; i < out.reg.size(); ++i) {
    bool zero = true;
    for (auto v : out.reg[i]) zero &= v == 0;
    if (!zero) {
      r.kept_bits.push_back(static_cast<int>(i));
      r.layout.reg.push_back(out.reg[i]);
    }
  }
  return r;
}

}  // namespace tilejit::codegen::lowering
