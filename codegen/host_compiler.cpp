#include "codegen/host_compiler.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/ReplaceConstant.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>

#include "codegen/host_gpu_numerics.h"
#include "codegen/llvm_pipeline.h"
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen {
namespace {

constexpr const char* kEntryName = "tilejit_emu_entry";

void initialize_host_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

template <typename T>
T take(llvm::Expected<T> value, const std::string& what) {
  if (!value) fail("tilejit internal error: {}: {}", what, llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string& what) {
  if (error) fail("tilejit internal error: {}: {}", what, llvm::toString(std::move(error)));
}

// Lays every shared-memory variable out in one per-CTA block: variables with a size first,
// the extern (dynamically sized) array last, and replaces each with base + offset, where base
// comes from the runtime once per function. Returns the block's size.
int64_t place_shared_variables(llvm::Module& m, int64_t dynamic_bytes) {
  const llvm::DataLayout& dl = m.getDataLayout();
  std::vector<llvm::GlobalVariable*> variables;
  for (llvm::GlobalVariable& gv : m.globals())
    if (gv.getAddressSpace() == kSharedSpace) variables.push_back(&gv);
  if (variables.empty()) return 0;

  std::map<llvm::GlobalVariable*, int64_t> offsets;
  int64_t end = 0;
  auto align_to = [](int64_t v, int64_t a) { return (v + a - 1) / a * a; };
  std::vector<llvm::GlobalVariable*> dynamic;
  for (auto* gv : variables) {
    int64_t size = static_cast<int64_t>(dl.getTypeAllocSize(gv->getValueType()));
    if (size == 0) {
      dynamic.push_back(gv);
      continue;
    }
    end = align_to(end, static_cast<int64_t>(gv->getAlign().valueOrOne().value()));
    offsets[gv] = end;
    end += size;
  }
  int64_t dynamic_align = 16;
  for (auto* gv : dynamic) dynamic_align = std::max(dynamic_align, static_cast<int64_t>(gv->getAlign().valueOrOne().value()));
  end = align_to(end, dynamic_align);
  for (auto* gv : dynamic) offsets[gv] = end;  // every extern array aliases the dynamic part
  if (!dynamic.empty()) end += dynamic_bytes;

  std::vector<llvm::Constant*> constants(variables.begin(), variables.end());
  llvm::convertUsersOfConstantsToInstructions(constants);

  auto* shared_ptr = llvm::PointerType::get(m.getContext(), kSharedSpace);
  llvm::FunctionCallee base_fn = m.getOrInsertFunction(kHostSharedBase, llvm::FunctionType::get(shared_ptr, false));
  std::map<llvm::Function*, llvm::Value*> base_of;
  for (auto* gv : variables) {
    std::vector<llvm::Use*> uses;
    for (llvm::Use& u : gv->uses()) uses.push_back(&u);
    for (llvm::Use* u : uses) {
      auto* inst = llvm::dyn_cast<llvm::Instruction>(u->getUser());
      if (!inst) fail("tilejit internal error: shared variable {} used outside a function", gv->getName().str());
      llvm::Function* f = inst->getFunction();
      llvm::Value*& base = base_of[f];
      if (!base) {
        llvm::IRBuilder<> eb(&*f->getEntryBlock().getFirstInsertionPt());
        base = eb.CreateCall(base_fn, {}, "shared.base");
      }
      llvm::IRBuilder<> b(inst);
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(inst))
        b.SetInsertPoint(phi->getIncomingBlock(*u)->getTerminator());
      u->set(b.CreateConstGEP1_64(b.getInt8Ty(), base, offsets[gv]));
    }
    gv->eraseFromParent();
  }
  return end;
}

std::string symbol_list(const std::set<std::string>& provided) {
  std::string out;
  for (auto& s : provided) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The function a call to an NVVM intrinsic of type `type` becomes: the runtime's `host`
// itself, or, where the types do not map onto C's calling convention, a small wrapper: a
// struct result is written through a pointer passed first, and a vector parameter or result
// (the <2 x half> words of mma.sync and of the fp8 pair conversions) travels as an integer of
// the same bits.
llvm::Function* bind_intrinsic(llvm::Module& m, llvm::FunctionType* type, const std::string& host) {
  llvm::Type* result = type->getReturnType();
  bool struct_result = result->isStructTy(), vector_result = result->isVectorTy();
  bool vector_params = std::any_of(type->param_begin(), type->param_end(), [](llvm::Type* t) { return t->isVectorTy(); });
  if (!struct_result && !vector_result && !vector_params)
    return llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, host, m);
  llvm::LLVMContext& ctx = m.getContext();
  const llvm::DataLayout& layout = m.getDataLayout();
  auto as_integer = [&](llvm::Type* t) -> llvm::Type* {
    return t->isVectorTy() ? llvm::IntegerType::get(ctx, static_cast<unsigned>(layout.getTypeSizeInBits(t))) : t;
  };
  std::vector<llvm::Type*> params;
  if (struct_result) params.push_back(llvm::PointerType::get(ctx, 0));
  for (llvm::Type* t : type->params()) params.push_back(as_integer(t));
  llvm::Type* runtime_result = struct_result ? llvm::Type::getVoidTy(ctx) : as_integer(result);
  llvm::FunctionCallee runtime = m.getOrInsertFunction(host, llvm::FunctionType::get(runtime_result, params, false));
  auto* wrapper = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, host + ".wrapper", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value* slot = struct_result ? b.CreateAlloca(result) : nullptr;
  std::vector<llvm::Value*> args;
  if (slot) args.push_back(slot);
  for (llvm::Argument& a : wrapper->args())
    args.push_back(a.getType()->isVectorTy() ? b.CreateBitCast(&a, params[args.size()]) : &a);
  llvm::Value* call = b.CreateCall(runtime, args);
  b.CreateRet(slot ? b.CreateLoad(result, slot) : vector_result ? b.CreateBitCast(call, result) : call);
  return wrapper;
}

// NVVM intrinsics become calls into the runtime; every other external function must be one
// the runtime provides (libdevice math, vprintf), or a host-lowerable LLVM intrinsic.
void bind_gpu_operations(llvm::Module& m, const std::string& kernel, const std::set<std::string>& provided) {
  std::vector<llvm::Function*> declarations;
  for (llvm::Function& f : m.functions())
    if (f.isDeclaration()) declarations.push_back(&f);
  for (llvm::Function* f : declarations) {
    std::string name = f->getName().str();
    if (name.rfind("llvm.nvvm.", 0) == 0) {
      std::string host = host_intrinsic_name(name);
      if (!provided.count(host))
        fail("the emulator cannot run kernel {}: it has no implementation of the GPU operation {}", kernel, name);
      f->replaceAllUsesWith(bind_intrinsic(m, f->getFunctionType(), host));
      f->eraseFromParent();
    } else if (!f->isIntrinsic() && !provided.count(name) && !f->use_empty()) {
      fail("the emulator cannot run kernel {}: it calls {}, which the emulator does not provide", kernel, name);
    }
  }
}

// A scalar as the 64-bit word inline PTX operands travel in (floats as their bits), and back.
llvm::Value* to_word(llvm::IRBuilder<>& b, llvm::Value* v) {
  llvm::Type* t = v->getType();
  if (t->isPointerTy()) return b.CreatePtrToInt(v, b.getInt64Ty());
  if (t->isFloatingPointTy()) v = b.CreateBitCast(v, b.getIntNTy(t->getPrimitiveSizeInBits().getFixedValue()));
  return b.CreateZExtOrTrunc(v, b.getInt64Ty());
}

llvm::Value* from_word(llvm::IRBuilder<>& b, llvm::Value* word, llvm::Type* t) {
  if (t->isPointerTy()) return b.CreateIntToPtr(word, t);
  if (!t->isFloatingPointTy()) return b.CreateTrunc(word, t);
  return b.CreateBitCast(b.CreateTrunc(word, b.getIntNTy(t->getPrimitiveSizeInBits().getFixedValue())), t);
}

// Inline PTX (the lowering writes wgmma.mma_async this way: LLVM has no intrinsic for it)
// becomes a call to the runtime's interpreter of it, kHostInlinePtx(text, constraints,
// inputs, n_inputs, outputs, n_outputs). Operands travel as 64-bit words in the asm's
// numbering: $0.. are the outputs, the inputs follow; the constraints say which inputs are
// tied to which outputs.
void bind_inline_ptx(llvm::Module& m) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    for (llvm::Instruction& inst : llvm::instructions(f))
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst); call && call->isInlineAsm()) calls.push_back(call);
  if (calls.empty()) return;
  llvm::LLVMContext& ctx = m.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::FunctionCallee interpret = m.getOrInsertFunction(
      kHostInlinePtx, llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, i32, ptr, i32}, false));
  for (llvm::CallInst* call : calls) {
    auto* text = llvm::cast<llvm::InlineAsm>(call->getCalledOperand());
    llvm::Type* result = call->getType();
    std::vector<llvm::Type*> outputs;
    if (auto* st = llvm::dyn_cast<llvm::StructType>(result)) outputs.assign(st->element_begin(), st->element_end());
    else if (!result->isVoidTy()) outputs.push_back(result);
    auto n_in = static_cast<uint32_t>(call->arg_size()), n_out = static_cast<uint32_t>(outputs.size());
    llvm::IRBuilder<> eb(&*call->getFunction()->getEntryBlock().getFirstInsertionPt());
    llvm::Value* in = eb.CreateAlloca(i64, eb.getInt32(std::max(n_in, 1u)));
    llvm::Value* out = eb.CreateAlloca(i64, eb.getInt32(std::max(n_out, 1u)));
    llvm::IRBuilder<> b(call);
    for (uint32_t i = 0; i < n_in; ++i) b.CreateStore(to_word(b, call->getArgOperand(i)), b.CreateConstGEP1_32(i64, in, i));
    b.CreateCall(interpret, {b.CreateGlobalString(text->getAsmString()), b.CreateGlobalString(text->getConstraintString()),
                             in, b.getInt32(n_in), out, b.getInt32(n_out)});
    llvm::Value* value = result->isVoidTy() ? nullptr : llvm::PoisonValue::get(result);
    for (uint32_t j = 0; j < n_out; ++j) {
      llvm::Value* word = from_word(b, b.CreateLoad(i64, b.CreateConstGEP1_32(i64, out, j)), outputs[j]);
      value = result->isStructTy() ? b.CreateInsertValue(value, word, j) : word;
    }
    if (value) call->replaceAllUsesWith(value);
    call->eraseFromParent();
  }
}

// void tilejit_emu_entry(ptr args): args[i] points to the value of parameter i.
void add_entry(llvm::Module& m, llvm::Function* kernel) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false),
                                       llvm::GlobalValue::ExternalLinkage, kEntryName, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (llvm::Argument& param : kernel->args()) {
    llvm::Value* slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, entry->getArg(0), param.getArgNo()));
    if (!param.hasByValAttr()) {
      args.push_back(b.CreateLoad(param.getType(), slot, param.getName()));
      continue;
    }
    // A by-value parameter (a tensor map) is read where the launch holds it: the call passes
    // its address, so the kernel must not expect a by-value copy on the host stack (with three
    // such parameters it read the arguments after them at the wrong offsets).
    param.removeAttr(llvm::Attribute::ByVal);
    args.push_back(slot);
  }
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
}

void instrument_access(llvm::Instruction* inst, llvm::Value* pointer, llvm::Value* bytes, uint32_t flags) {
  unsigned space = pointer->getType()->getPointerAddressSpace();
  const char* checker = space == kGlobalSpace          ? kHostCheckGlobal
                        : space == kSharedSpace        ? kHostCheckShared
                        : space == kClusterSharedSpace ? kHostCheckClusterShared
                                                       : nullptr;
  if (!checker) return;
  llvm::Module& m = *inst->getModule();
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(inst);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {pointer->getType(), b.getInt64Ty(), b.getInt32Ty()}, false);
  llvm::FunctionCallee check = m.getOrInsertFunction(checker, type);
  b.CreateCall(check, {pointer, b.CreateZExtOrTrunc(bytes, b.getInt64Ty()), b.getInt32(flags)});
}

// A check call before every memory access to global or shared memory.
void instrument_accesses(llvm::Module& m) {
  const llvm::DataLayout& dl = m.getDataLayout();
  auto bytes = [&](llvm::Type* t) {
    return llvm::ConstantInt::get(llvm::Type::getInt64Ty(m.getContext()), dl.getTypeStoreSize(t));
  };
  std::vector<llvm::Instruction*> accesses;
  for (llvm::Function& f : m)
    for (llvm::Instruction& inst : llvm::instructions(f))
      if (llvm::isa<llvm::LoadInst, llvm::StoreInst, llvm::AtomicRMWInst, llvm::AtomicCmpXchgInst, llvm::MemIntrinsic>(inst))
        accesses.push_back(&inst);
  for (llvm::Instruction* inst : accesses) {
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
      instrument_access(inst, load->getPointerOperand(), bytes(load->getType()), 0);
    } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(inst)) {
      instrument_access(inst, store->getPointerOperand(), bytes(store->getValueOperand()->getType()), kAccessWrite);
    } else if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(inst)) {
      instrument_access(inst, rmw->getPointerOperand(), bytes(rmw->getType()), kAccessWrite | kAccessAtomic);
    } else if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(inst)) {
      instrument_access(inst, cas->getPointerOperand(), bytes(cas->getCompareOperand()->getType()),
                        kAccessWrite | kAccessAtomic);
    } else if (auto* mem = llvm::dyn_cast<llvm::MemIntrinsic>(inst)) {
      instrument_access(inst, mem->getRawDest(), mem->getLength(), kAccessWrite);
      if (auto* transfer = llvm::dyn_cast<llvm::MemTransferInst>(mem))
        instrument_access(inst, transfer->getRawSource(), mem->getLength(), 0);
    }
  }
}

class JitHostKernel : public HostKernel {
 public:
  JitHostKernel(std::unique_ptr<llvm::orc::LLJIT> jit, std::string name, int threads, int64_t shared, std::string ir)
      : jit_(std::move(jit)) {
    auto address = take(jit_->lookup(kEntryName), "looking up the emulator entry of " + name);
    entry_ = address.toPtr<Entry>();
    name_ = std::move(name);
    num_threads_ = threads;
    shared_bytes_ = shared;
    llvm_ir_ = std::move(ir);
  }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;  // owns the code entry_ points into
};

std::unique_ptr<HostKernel> finalise_and_jit(std::unique_ptr<llvm::LLVMContext> context,
                                             std::unique_ptr<llvm::Module> m, const std::string& kernel_name,
                                             int num_threads, int64_t dynamic_shared_bytes,
                                             const HostSymbols& symbols, const HostCompileOptions& options) {
  initialize_host_target();
  auto builder = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  // The host's bf16 instructions flush subnormals and quiet NaNs, which the GPU does not;
  // without them LLVM calls __truncsfbf2, which the runtime implements as the GPU rounds.
  builder.getFeatures().AddFeature("avx512bf16", false);
  builder.getFeatures().AddFeature("avxneconvert", false);
  auto tm = take(builder.createTargetMachine(), "creating the host target machine");

  llvm::Function* kernel = m->getFunction(kernel_name);
  if (!kernel || kernel->isDeclaration()) fail("the emulator: module has no kernel function {}", kernel_name);
  kernel->setCallingConv(llvm::CallingConv::C);
  kernel->removeFnAttr("nvvm.maxntid");
  if (auto* annotations = m->getNamedMetadata("nvvm.annotations")) m->eraseNamedMetadata(annotations);
  m->setTargetTriple(tm->getTargetTriple());
  m->setDataLayout(tm->createDataLayout());

  std::set<std::string> provided;
  for (auto& [name, address] : symbols) provided.insert(name);
  for (const char* required : {kHostSharedBase, kHostCheckGlobal, kHostCheckShared, kHostIntToBf16, kHostFmaBf16,
                               kHostInlinePtx})
    if (!provided.count(required)) fail("tilejit internal error: emulator runtime lacks {} (has {})", required, symbol_list(provided));
  int64_t shared_bytes = place_shared_variables(*m, dynamic_shared_bytes);
  bind_gpu_operations(*m, kernel_name, provided);
  bind_inline_ptx(*m);
  match_gpu_numerics(*m);
  add_entry(*m, kernel);
  verify_module(*m, "emulator module of kernel " + kernel_name);
  optimize_module(*m, *tm, 2, /*vectorize=*/false);
  if (options.check_accesses) instrument_accesses(*m);
  verify_module(*m, "instrumented emulator module of kernel " + kernel_name);
  std::string ir = options.keep_llvm_ir ? module_text(*m) : std::string();

  auto jit = take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(builder)).create(),
                  "creating the emulator JIT");
  llvm::orc::SymbolMap bound;
  for (auto& [name, address] : symbols)
    bound[jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
  check(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(bound))), "binding the emulator runtime");
  check(jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(context))), "adding the kernel module");
  return std::make_unique<JitHostKernel>(std::move(jit), kernel_name, num_threads, shared_bytes, std::move(ir));
}

}  // namespace

std::string host_intrinsic_name(const std::string& nvvm_intrinsic) {
  std::string rest = nvvm_intrinsic.substr(std::string("llvm.nvvm.").size());
  for (char& c : rest)
    if (c == '.') c = '_';
  return kHostIntrinsicPrefix + rest;
}

std::unique_ptr<HostKernel> compile_for_host(const ir::Function& fn, const Target& target, const HostSymbols& symbols,
                                             const HostCompileOptions& options) {
  auto context = std::make_unique<llvm::LLVMContext>();
  LoweredKernel lowered = lower_to_llvm(fn, target, *context);
  return finalise_and_jit(std::move(context), std::move(lowered.module), fn.name, lowered.num_threads,
                          lowered.shared_bytes, symbols, options);
}

std::unique_ptr<HostKernel> compile_llvm_text_for_host(const std::string& llvm_ir, const std::string& kernel_name,
                                                       int num_threads, int64_t dynamic_shared_bytes,
                                                       const HostSymbols& symbols, const HostCompileOptions& options) {
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(llvm_ir, diagnostic, *context);
  if (!m) fail("the emulator: cannot parse the LLVM IR of {}: line {}: {}", kernel_name, diagnostic.getLineNo(),
               diagnostic.getMessage().str());
  return finalise_and_jit(std::move(context), std::move(m), kernel_name, num_threads, dynamic_shared_bytes, symbols,
                          options);
}

}  // namespace tilejit::codegen
