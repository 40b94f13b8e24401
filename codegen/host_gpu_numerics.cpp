#include "codegen/host_gpu_numerics.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include <limits>
#include <vector>

#include "codegen/host_compiler.h"

namespace tilejit::codegen {
namespace {

template <typename Inst, typename Wanted>
std::vector<Inst*> find_all(llvm::Module& m, Wanted wanted) {
  std::vector<Inst*> found;
  for (llvm::Function& f : m)
    for (llvm::Instruction& inst : llvm::instructions(f))
      if (auto* i = llvm::dyn_cast<Inst>(&inst); i && wanted(*i)) found.push_back(i);
  return found;
}

void convert_integers_to_bf16_exactly(llvm::Module& m) {
  auto conversions = find_all<llvm::SIToFPInst>(m, [](llvm::SIToFPInst& c) {
    return c.getType()->isBFloatTy() && c.getSrcTy()->getIntegerBitWidth() > 8;
  });
  if (conversions.empty()) return;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::FunctionCallee exact = m.getOrInsertFunction(
      kHostIntToBf16, llvm::FunctionType::get(llvm::Type::getBFloatTy(ctx), {llvm::Type::getInt64Ty(ctx)}, false));
  for (llvm::SIToFPInst* c : conversions) {
    llvm::IRBuilder<> b(c);
    c->replaceAllUsesWith(b.CreateCall(exact, {b.CreateSExt(c->getOperand(0), b.getInt64Ty())}));
    c->eraseFromParent();
  }
}

// Two zeros give their bits' OR (min: -0 if either is) or AND (max: +0 if either is).
void order_zeros_in_min_max(llvm::Module& m) {
  auto calls = find_all<llvm::IntrinsicInst>(m, [](llvm::IntrinsicInst& c) {
    return c.getIntrinsicID() == llvm::Intrinsic::minnum || c.getIntrinsicID() == llvm::Intrinsic::maxnum;
  });
  for (llvm::IntrinsicInst* call : calls) {
    const bool is_min = call->getIntrinsicID() == llvm::Intrinsic::minnum;
    llvm::IRBuilder<> b(call->getNextNode());
    llvm::Type* type = call->getType();
    llvm::Type* bits_type = type->getWithNewType(b.getIntNTy(type->getScalarSizeInBits()));
    llvm::Value *x = call->getArgOperand(0), *y = call->getArgOperand(1);
    llvm::Value* zero = llvm::ConstantFP::getZero(type);
    llvm::Value* both_zero = b.CreateAnd(b.CreateFCmpOEQ(x, zero), b.CreateFCmpOEQ(y, zero));
    llvm::Value *x_bits = b.CreateBitCast(x, bits_type), *y_bits = b.CreateBitCast(y, bits_type);
    llvm::Value* zeros = b.CreateBitCast(is_min ? b.CreateOr(x_bits, y_bits) : b.CreateAnd(x_bits, y_bits), type);
    auto* ordered = llvm::cast<llvm::SelectInst>(b.CreateSelect(both_zero, zeros, call));
    call->replaceUsesWithIf(ordered, [ordered](llvm::Use& use) { return use.getUser() != ordered; });
  }
}

// x with a subnormal magnitude replaced by zero of its sign.
llvm::Value* flush_subnormal(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* tiny = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                                      llvm::ConstantFP::get(x->getType(), std::numeric_limits<float>::min()));
  return b.CreateSelect(tiny, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, llvm::ConstantFP::getZero(x->getType()), x), x);
}

// The add becomes a compare-and-swap loop over the word's bits that flushes as the GPU does. It
// starts from a guess (0) rather than a load, so every access it makes is atomic. Only in global
// memory: atom.shared.add.f32 keeps subnormals.
void flush_subnormals_in_f32_atomic_add(llvm::Module& m) {
  auto adds = find_all<llvm::AtomicRMWInst>(m, [](llvm::AtomicRMWInst& a) {
    return a.getOperation() == llvm::AtomicRMWInst::FAdd && a.getType()->isFloatTy() &&
           a.getPointerAddressSpace() == kGlobalSpace;
  });
  for (llvm::AtomicRMWInst* add : adds) {
    llvm::BasicBlock* before = add->getParent();
    llvm::BasicBlock* after = llvm::SplitBlock(before, add);
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(m.getContext(), "atomic_add_f32", before->getParent(), after);
    before->getTerminator()->setSuccessor(0, loop);
    llvm::IRBuilder<> b(loop);
    llvm::PHINode* expected = b.CreatePHI(b.getInt32Ty(), 2);
    expected->addIncoming(b.getInt32(0), before);
    llvm::Value* old = b.CreateBitCast(expected, b.getFloatTy());
    llvm::Value* sum =
        flush_subnormal(b, b.CreateFAdd(flush_subnormal(b, old), flush_subnormal(b, add->getValOperand())));
    auto* swap = b.CreateAtomicCmpXchg(add->getPointerOperand(), expected, b.CreateBitCast(sum, b.getInt32Ty()),
                                       add->getAlign(), add->getOrdering(),
                                       llvm::AtomicCmpXchgInst::getStrongestFailureOrdering(add->getOrdering()),
                                       add->getSyncScopeID());
    expected->addIncoming(b.CreateExtractValue(swap, 0), loop);
    b.CreateCondBr(b.CreateExtractValue(swap, 1), after, loop);
    add->replaceAllUsesWith(old);
    add->eraseFromParent();
  }
}

void fuse_bf16_once(llvm::Module& m) {
  auto calls = find_all<llvm::IntrinsicInst>(m, [](llvm::IntrinsicInst& c) {
    return c.getIntrinsicID() == llvm::Intrinsic::fma && c.getType()->isBFloatTy();
  });
  if (calls.empty()) return;
  llvm::Type* bf16 = llvm::Type::getBFloatTy(m.getContext());
  llvm::FunctionCallee once = m.getOrInsertFunction(kHostFmaBf16, llvm::FunctionType::get(bf16, {bf16, bf16, bf16}, false));
  for (llvm::IntrinsicInst* call : calls) {
    llvm::IRBuilder<> b(call);
    call->replaceAllUsesWith(b.CreateCall(once, {call->getArgOperand(0), call->getArgOperand(1), call->getArgOperand(2)}));
    call->eraseFromParent();
  }
}

}  // namespace

void match_gpu_numerics(llvm::Module& m) {
  convert_integers_to_bf16_exactly(m);
  order_zeros_in_min_max(m);
  fuse_bf16_once(m);
  flush_subnormals_in_f32_atomic_add(m);
}

}  // namespace tilejit::codegen
