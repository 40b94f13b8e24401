// The driver of the lowering: kernel signature, thread ids, dispatch over ops, and how a
// value gets into the layout an op needs.
#include "codegen/lowering/lowering.h"

#include <cmath>

#include <llvm/IR/CallingConv.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/lowering/shared_operand.h"

namespace tilejit::codegen {
namespace lowering {

Lowering::Lowering(const ir::Function& function, const Target& gpu, llvm::LLVMContext& context)
    : b(context), ctx(context), fn(function), target(gpu), axis_(function) {
  module_ = std::make_unique<llvm::Module>(fn.name, ctx);
  ir::walk(fn.body, [&](const ir::Op& op) {
    if (op.kind == ir::OpKind::load || op.kind == ir::OpKind::store)
      min_memory_bytes_ = std::min(min_memory_bytes_, dtype_storage_bytes(op.operands[0]->type.dtype));
    for (const ir::Value* v : op.operands) users_[v].push_back(&op);
  });
}

llvm::Type* Lowering::llvm_type(const ir::Type& t) {
  if (t.pointer) return llvm::PointerType::get(ctx, 1);
  switch (t.dtype) {
    case DType::i1: return b.getInt1Ty();
    case DType::i8: return b.getInt8Ty();
    case DType::i32: return b.getInt32Ty();
    case DType::i64: return b.getInt64Ty();
    case DType::f16: return b.getHalfTy();
    case DType::bf16: return b.getBFloatTy();
    case DType::f32: return b.getFloatTy();
    case DType::f8e4m3:
    case DType::f8e5m2:
    case DType::e8m0: return b.getInt8Ty();  // bit patterns; arithmetic happens after a cast
  }
  TJ_CHECK(false);
}

llvm::Type* Lowering::memory_type(DType dtype) {
  return dtype == DType::i1 ? b.getInt8Ty() : llvm_type(ir::Type::scalar(dtype));
}

LinearLayout Lowering::default_layout(const ir::Shape& shape) const {
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  int64_t threads = 32 * int64_t{fn.num_warps};
  int64_t vec = 16 / min_memory_bytes_;
  while (vec > 1 && numel < threads * vec) vec /= 2;
  return LinearLayout::blocked(shape, fn.num_warps, static_cast<int>(vec));
}

const Regs& Lowering::home(const ir::Value* v) {
  auto it = home_.find(v);
  TJ_CHECK(it != home_.end());
  return it->second;
}

llvm::Value* Lowering::scalar(const ir::Value* v) {
  TJ_CHECK(v->type.is_scalar());
  return home(v).values[0];
}

void Lowering::define(const ir::Value* v, Regs regs) {
  TJ_CHECK(static_cast<int>(regs.values.size()) == (v->type.is_scalar() ? 1 : regs.layout.num_regs()));
  home_[v] = std::move(regs);
}

void Lowering::define_scalar(const ir::Value* v, llvm::Value* value) {
  define(v, Regs{LinearLayout{}, {value}});
}

bool is_zero_constant(const ir::Value* v) {
  const ir::Op* op = v->def;
  if (!op) return false;
  if (op->kind == ir::OpKind::splat || op->kind == ir::OpKind::broadcast) return is_zero_constant(op->operands[0]);
  if (op->kind != ir::OpKind::constant) return false;
  const ir::AttrValue& value = op->attr("value");
  if (const auto* i = std::get_if<int64_t>(&value)) return *i == 0;
  const auto* d = std::get_if<double>(&value);
  return d && *d == 0 && !std::signbit(*d);
}

// Values built only from constants, index ranges and elementwise / shape ops on them are
// cheaper to recompute in the layout an op needs than to move between threads.
bool Lowering::rematerializable(const ir::Value* v) const {
  const ir::Op* op = v->def;
  if (!op || v->type.is_scalar()) return false;
  switch (op->kind) {
    case ir::OpKind::constant:
    case ir::OpKind::arange:
    case ir::OpKind::splat: return true;
    case ir::OpKind::broadcast:
    case ir::OpKind::expand_dims: return rematerializable(op->operands[0]);
    default: break;
  }
  bool elementwise = ir::is_elementwise_binary(op->kind) || ir::is_elementwise_unary(op->kind) ||
                     op->kind == ir::OpKind::cmp || op->kind == ir::OpKind::select ||
                     op->kind == ir::OpKind::addptr || op->kind == ir::OpKind::cast;
  if (!elementwise) return false;
  for (auto* operand : op->operands)
    if (!operand->type.is_scalar() && !rematerializable(operand)) return false;
  return true;
}

bool Lowering::built_from_broadcasts(const ir::Value* v, int depth) const {
  const ir::Op* op = v->def;
  if (!op || v->type.is_scalar()) return false;
  if (op->kind == ir::OpKind::broadcast) return true;
  if (!is_elementwise(op->kind) || depth >= 4) return false;
  return std::all_of(op->operands.begin(), op->operands.end(), [&](const ir::Value* operand) {
    return operand->type.is_scalar() || rematerializable(operand) || built_from_broadcasts(operand, depth + 1);
  });
}

std::vector<llvm::Value*> Lowering::rematerialize(const ir::Value* v, const LinearLayout& layout) {
  auto key = std::make_pair(v, layout.str());
  if (auto it = remat_cache_.find(key); it != remat_cache_.end()) return it->second;
  const ir::Op& op = *v->def;
  std::vector<llvm::Value*> out;
  switch (op.kind) {
    case ir::OpKind::constant:
    case ir::OpKind::arange:
    case ir::OpKind::splat: out = compute_constant_like(op, layout); break;
    case ir::OpKind::broadcast: {
      std::vector<int> dims;
      const ir::Shape& from = op.operands[0]->type.shape;
      for (int d = 0; d < layout.rank(); ++d)
        if (from[d] != layout.shape[d]) dims.push_back(d);
      out = in_layout(op.operands[0], layout.squash(dims));
      break;
    }
    case ir::OpKind::expand_dims:
      out = in_layout(op.operands[0], layout.remove_dim(static_cast<int>(op.attr_int("axis"))));
      break;
    default: {
      std::vector<std::vector<llvm::Value*>> in;
      for (auto* operand : op.operands)
        in.push_back(operand->type.is_scalar() ? std::vector<llvm::Value*>(layout.num_regs(), scalar(operand))
                                               : in_layout(operand, layout));
      out = compute_elementwise(op, in, layout.num_regs());
    }
  }
  remat_cache_[key] = out;
  return out;
}

std::vector<llvm::Value*> Lowering::in_layout(const ir::Value* v, const LinearLayout& layout) {
  TJ_CHECK(!v->type.is_scalar());
  const Regs& regs = home(v);
  if (regs.layout == layout) return regs.values;
  if (auto map = register_map(regs.layout, layout)) {
    std::vector<llvm::Value*> out;
    for (int r : *map) out.push_back(regs.values[r]);
    return out;
  }
  // A computed tile's broadcast is rebuilt from its source in the new layout, so only the
  // source moves (a row max, not the (rows, columns) tile it spans).
  if (rematerializable(v) || built_from_broadcasts(v)) return rematerialize(v, layout);
  return convert_through_shared(v->type, regs, layout);
}

namespace {

// True when, in every dim, the bits register bases set never overlap the bits lane and
// warp bases set: then XOR-combining the two parts equals adding them.
bool register_bits_disjoint(const LinearLayout& layout) {
  for (int d = 0; d < layout.rank(); ++d) {
    int64_t reg_bits = 0, thread_bits = 0;
    for (auto& basis : layout.reg) reg_bits |= basis[d];
    for (auto& basis : layout.lane) thread_bits |= basis[d];
    for (auto& basis : layout.warp) thread_bits |= basis[d];
    if (reg_bits & thread_bits) return false;
  }
  return true;
}

// Layouts that agree on their lane and warp bases give each thread the same coordinates.
std::string thread_key(const LinearLayout& layout) {
  return LinearLayout{layout.shape, {}, layout.lane, layout.warp}.str();
}

}  // namespace

const std::vector<llvm::Value*>& Lowering::thread_coords(const LinearLayout& layout) {
  std::string key = thread_key(layout);
  auto it = thread_offsets_.find(key);
  if (it != thread_offsets_.end()) return it->second;
  // The thread's part of every coordinate depends only on the thread id: compute it once,
  // in the entry block, so every region can use it.
  llvm::IRBuilder<> eb(entry_->getTerminator());
  std::vector<llvm::Value*> offsets;
  for (int d = 0; d < layout.rank(); ++d) {
    llvm::Value* acc = eb.getInt32(0);
    auto add_bits = [&](const std::vector<Coord>& bases, llvm::Value* id) {
      for (size_t i = 0; i < bases.size(); ++i) {
        if (!bases[i][d]) continue;
        llvm::Value* bit = eb.CreateAnd(eb.CreateLShr(id, static_cast<uint64_t>(i)), 1);
        acc = eb.CreateXor(acc, eb.CreateMul(bit, eb.getInt32(static_cast<uint32_t>(bases[i][d]))));
      }
    };
    add_bits(layout.lane, lane_);
    add_bits(layout.warp, warp_);
    offsets.push_back(acc);
  }
  return thread_offsets_.emplace(key, offsets).first->second;
}

std::vector<llvm::Value*> Lowering::coords(const LinearLayout& layout, int r) {
  const std::vector<llvm::Value*>& thread = thread_coords(layout);
  bool disjoint = register_bits_disjoint(layout);
  Coord rc = layout.reg_coord(r);
  std::vector<llvm::Value*> out;
  for (int d = 0; d < layout.rank(); ++d) {
    if (!rc[d]) out.push_back(thread[d]);
    else if (disjoint) out.push_back(b.CreateAdd(thread[d], const_i32(rc[d]), "", true, true));
    else out.push_back(b.CreateXor(thread[d], const_i32(rc[d])));
  }
  return out;
}

Lowering::Offset Lowering::linear_offset(const LinearLayout& layout, int r) {
  if (!register_bits_disjoint(layout)) {
    std::vector<llvm::Value*> c = coords(layout, r);
    llvm::Value* index = const_i32(0);
    for (int d = 0; d < layout.rank(); ++d) index = b.CreateAdd(b.CreateMul(index, const_i32(layout.shape[d])), c[d]);
    return {index, 0};
  }
  std::string key = thread_key(layout);
  auto it = thread_linear_.find(key);
  if (it == thread_linear_.end()) {
    const std::vector<llvm::Value*>& thread = thread_coords(layout);
    llvm::IRBuilder<> eb(entry_->getTerminator());
    llvm::Value* index = eb.getInt32(0);
    for (int d = 0; d < layout.rank(); ++d)
      index = eb.CreateAdd(eb.CreateMul(index, eb.getInt32(static_cast<uint32_t>(layout.shape[d]))), thread[d]);
    it = thread_linear_.emplace(key, index).first;
  }
  return {it->second, linear_index(layout.shape, layout.reg_coord(r))};
}

llvm::Value* Lowering::element_pointer(llvm::Type* elem, llvm::Value* base, const LinearLayout& layout, int r) {
  Offset offset = linear_offset(layout, r);
  llvm::Value* thread_ptr = b.CreateGEP(elem, base, offset.thread);
  return offset.constant ? b.CreateConstInBoundsGEP1_64(elem, thread_ptr, static_cast<uint64_t>(offset.constant))
                         : thread_ptr;
}

llvm::Value* Lowering::owns_data(const LinearLayout& layout) {
  // A scalar is held by every thread; thread 0 acts for the CTA.
  bool is_scalar = layout.rank() == 0;
  uint32_t lanes = is_scalar ? 31u : layout.replicated_lane_mask();
  uint32_t warps = is_scalar ? static_cast<uint32_t>(fn.num_warps - 1) : layout.replicated_warp_mask();
  llvm::IRBuilder<> eb(entry_->getTerminator());
  llvm::Value* lane_ok = eb.CreateICmpEQ(eb.CreateAnd(lane_, lanes), eb.getInt32(0));
  llvm::Value* warp_ok = eb.CreateICmpEQ(eb.CreateAnd(warp_, warps), eb.getInt32(0));
  return eb.CreateAnd(lane_ok, warp_ok);
}

llvm::Value* Lowering::warpgroup_id() {
  if (!warpgroup_) {
    llvm::IRBuilder<> eb(entry_->getTerminator());
    llvm::Function* shuffle =
        llvm::Intrinsic::getOrInsertDeclaration(module_.get(), llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {});
    llvm::Value* all_lanes = eb.getInt32(0xffffffffu);
    warpgroup_ = eb.CreateCall(shuffle, {all_lanes, eb.CreateLShr(tid_, 7), eb.getInt32(0), eb.getInt32(0x1f)});
  }
  return warpgroup_;
}

llvm::Value* Lowering::shared_block() {
  if (!shared_) {
    auto* type = llvm::ArrayType::get(b.getInt8Ty(), 0);
    shared_ = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                       "tilejit_shared", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    shared_->setAlignment(llvm::Align(1024));  // wgmma's 128-byte swizzle repeats every 1024 bytes
  }
  return shared_;
}

llvm::Value* Lowering::shared_base() {
  complete_scratch_readers();
  scratch_taken_ = true;
  return scratch_offset ? b.CreateConstGEP1_64(b.getInt8Ty(), shared_block(), static_cast<uint64_t>(scratch_offset))
                        : shared_block();
}

void Lowering::reserve_shared(int64_t bytes) { shared_bytes_ = std::max(shared_bytes_, scratch_offset + bytes); }

void Lowering::barrier() {
  if (turn_held)
    fail("kernel {}: pingpong: the consumer warpgroups would meet at a barrier while one of them issues its "
         "products in its turn (an operand moved through shared memory: a warpgroup that does not own whole rows "
         "of the products, or a desc_load at a column not proven a whole number of 16 bytes?); run it without "
         "pingpong",
         fn.name);
  if (scratch_readers_.empty()) scratch_idle_since_ = ++scratch_events_;
  if (!producer_warps) {
    call_intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {b.getInt32(0)});
    return;
  }
  // The producer warps have left: barrier 0 would wait for them.
  constexpr uint32_t kConsumerBarrier = 1;
  call_intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
                 {b.getInt32(kConsumerBarrier), const_i32(32 * fn.num_warps)});
}

void Lowering::fence_proxy_async() {
  call_intrinsic(llvm::Intrinsic::nvvm_fence_proxy_async_shared_cta, {}, {});
}

void Lowering::fence_and_barrier() {
  fence_proxy_async();
  barrier();
  copies_unfenced_before = nullptr;
}

void Lowering::fence_copies() {
  if (!copies_unfenced_before) return;
  llvm::IRBuilderBase::InsertPointGuard keep(b);
  b.SetInsertPoint(copies_unfenced_before);
  fence_proxy_async();
  copies_unfenced_before = nullptr;
}

namespace {
constexpr int kTurnBarriers = 2;     // warpgroup w waits for its turn on barrier 2 + w
constexpr int kWarpgroupThreads = 128;
}  // namespace

// Each turn barrier completes with the 128 threads of the warpgroup that waits there and the
// 128 of the other one, which arrive when they hand the turn over.
void Lowering::wait_for_turn() {
  llvm::Value* warpgroup = warpgroup_id();
  call_intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
                 {b.CreateAdd(warpgroup, const_i32(kTurnBarriers)), const_i32(2 * kWarpgroupThreads)});
}

void Lowering::pass_turn() {
  llvm::Value* warpgroup = warpgroup_id();
  call_intrinsic(llvm::Intrinsic::nvvm_barrier_cta_arrive_aligned_count, {},
                 {b.CreateSub(const_i32(kTurnBarriers + 1), warpgroup), const_i32(2 * kWarpgroupThreads)});
}

llvm::Value* Lowering::call_intrinsic(unsigned id, llvm::ArrayRef<llvm::Type*> types,
                                      llvm::ArrayRef<llvm::Value*> args) {
  llvm::Function* f = llvm::Intrinsic::getOrInsertDeclaration(module_.get(), id, types);
  return b.CreateCall(f, args);
}

llvm::Value* Lowering::call_libdevice(const std::string& name, llvm::ArrayRef<llvm::Value*> args) {
  std::vector<llvm::Type*> types;
  for (auto* a : args) types.push_back(a->getType());
  auto* type = llvm::FunctionType::get(args[0]->getType(), types, false);
  llvm::FunctionCallee callee = module_->getOrInsertFunction(name, type);
  return b.CreateCall(callee, args);
}

void Lowering::lower_block(const ir::Block& block) {
  for (auto& op : block.ops) {
    // The wait comes before the op's own code, which may branch (a wait is .aligned: every
    // thread runs it). A region is lowered once but may run many times: the groups it would
    // wait for must have been committed before it.
    if (op->kind == ir::OpKind::for_loop || op->kind == ir::OpKind::if_else) complete_all_wgmma();
    if (op->kind != ir::OpKind::wait_after) complete_wgmma_read_by(*op);  // it waits after its anchor
    if (product_turn && op.get() == product_turn->first) {
      wait_for_turn();
      turn_held = true;
    }
    lower_op(*op);
    if (scratch_taken_) scratch_used();  // its last access is over once the op is lowered
    scratch_taken_ = false;
    if (product_turn && op.get() == product_turn->last) {
      pass_turn();
      turn_held = false;
    }
  }
  complete_all_wgmma();
}

void Lowering::lower_op(const ir::Op& op) {
  using K = ir::OpKind;
  switch (op.kind) {
    case K::constant:
    case K::arange:
    case K::splat:
    case K::program_id:
    case K::num_programs: lower_constant_like(op); return;
    case K::broadcast:
    case K::expand_dims:
    case K::reshape:
    case K::trans: lower_shape_op(op); return;
    case K::load:
    case K::store: lower_memory(op); return;
    case K::desc_load: lower_desc_load(op); return;
    case K::desc_store: lower_desc_store(op); return;
    case K::atomic_add:
    case K::atomic_max:
    case K::atomic_cas: lower_atomic(op); return;
    case K::reduce: lower_reduce(op); return;
    case K::dot: lower_dot(op); return;
    case K::for_loop: lower_for(op); return;
    case K::if_else: lower_if(op); return;
    case K::print: lower_print(op); return;
    case K::wait_after: lower_wait_after(op); return;
    // Its operand's producers took their own layout: consumer_layout does not follow users past it.
    case K::once_per_element: define(op.result(), home(op.operands[0])); return;
    case K::yield: return;  // handled by the enclosing for / if
    default: lower_elementwise(op); return;
  }
}

LoweredKernel Lowering::run() {
  // A TensorDesc parameter becomes its tensor map, data, rows, columns, row stride, then a size
  // and a stride per outer dim (runtime/device.h).
  auto* map_type = llvm::ArrayType::get(b.getInt8Ty(), kTensorMapBytes);
  std::vector<llvm::Type*> params;
  std::vector<unsigned> first_arg;  // of each IR parameter
  for (auto& p : fn.params) {
    first_arg.push_back(static_cast<unsigned>(params.size()));
    if (!p.type.descriptor) {
      params.push_back(llvm_type(p.type));
      continue;
    }
    params.insert(params.end(), {llvm::PointerType::get(ctx, 0), llvm::PointerType::get(ctx, 1), b.getInt32Ty(),
                                 b.getInt32Ty(), b.getInt64Ty()});
    for (size_t o = 0; o + 2 < p.type.shape.size(); ++o) params.insert(params.end(), {b.getInt32Ty(), b.getInt64Ty()});
  }
  auto* type = llvm::FunctionType::get(b.getVoidTy(), params, false);
  kernel_ = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, fn.name, module_.get());
  kernel_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    llvm::Argument* arg = kernel_->getArg(first_arg[i]);
    arg->setName(p.name);
    if (p.type.pointer) {
      arg->addAttr(llvm::Attribute::NoUndef);
      if (p.facts.divisibility > 1)
        arg->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(static_cast<uint64_t>(p.facts.divisibility))));
    }
    if (!p.type.descriptor) continue;
    // The map stays in the parameter space (TMA reads it there), never copied to local memory.
    arg->setName(p.name + ".map");
    arg->addAttr(llvm::Attribute::getWithByValType(ctx, map_type));
    arg->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
    arg->addAttr(llvm::Attribute::get(ctx, "nvvm.grid_constant"));
    const char* parts[] = {".data", ".rows", ".columns", ".row_stride"};
    for (unsigned k = 0; k < 4; ++k) kernel_->getArg(first_arg[i] + 1 + k)->setName(p.name + parts[k]);
    kernel_->getArg(first_arg[i] + 1)->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(16)));
    DescriptorArgs d{arg, kernel_->getArg(first_arg[i] + 1), kernel_->getArg(first_arg[i] + 2),
                     kernel_->getArg(first_arg[i] + 3), kernel_->getArg(first_arg[i] + 4), {}};
    for (unsigned o = 0; o + 2 < p.type.shape.size(); ++o) {
      llvm::Argument* size = kernel_->getArg(first_arg[i] + 5 + 2 * o);
      llvm::Argument* stride = kernel_->getArg(first_arg[i] + 6 + 2 * o);
      size->setName(fmt::format("{}.outer{}.size", p.name, o));
      stride->setName(fmt::format("{}.outer{}.stride", p.name, o));
      d.outer.push_back({size, stride});
    }
    descriptors[fn.body.args[i]] = d;
  }

  entry_ = llvm::BasicBlock::Create(ctx, "entry", kernel_);
  auto* body = llvm::BasicBlock::Create(ctx, "body", kernel_);
  b.SetInsertPoint(entry_);
  tid_ = call_intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  lane_ = b.CreateAnd(tid_, 31, "lane");
  warp_ = b.CreateLShr(tid_, 5, "warp");
  b.CreateBr(body);
  b.SetInsertPoint(body);

  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (fn.params[i].type.descriptor) continue;  // read through `descriptors`
    llvm::Value* arg = kernel_->getArg(first_arg[i]);
    if (fn.params[i].facts.equals_one) arg = llvm::ConstantInt::get(arg->getType(), 1);
    define_scalar(fn.body.args[i], arg);
  }
  bool waits_after = false;
  ir::walk(fn.body, [&](const ir::Op& op) { waits_after |= op.kind == ir::OpKind::wait_after; });
  if (waits_after) {
    anchor_offset = scratch_offset;
    // The scratch space above keeps its alignment: swizzled tiles are stored at its start.
    scratch_offset = SharedOperand::aligned(scratch_offset + 4 * 32 * fn.num_warps);
    reserve_shared(0);
  }
  lower_block(fn.body);
  b.CreateRetVoid();
  int num_threads = 32 * (fn.num_warps + producer_warps);
  kernel_->addFnAttr("nvvm.maxntid", std::to_string(num_threads));
  // setmaxnreg needs the register count at entry, which ptxas fixes only for a known number
  // of CTAs per SM: one, whose pool of registers the warpgroups share out.
  if (producer_warps) kernel_->addFnAttr("nvvm.minctasm", "1");
  if (fn.cluster_ctas() > 1) {
    if (target.compute_capability < 90)
      fail("kernel {}: thread-block clusters ({} x {} x {} CTAs) need sm_90 or newer; the target is {}", fn.name,
           fn.cluster[0], fn.cluster[1], fn.cluster[2], target.arch);
    // .explicitcluster .reqnctapercluster: the kernel launches only in clusters of this shape.
    kernel_->addFnAttr("nvvm.cluster_dim", fmt::format("{},{},{}", fn.cluster[0], fn.cluster[1], fn.cluster[2]));
  }

  std::string error;
  llvm::raw_string_ostream os(error);
  if (llvm::verifyModule(*module_, &os)) {
    std::string text;
    llvm::raw_string_ostream ts(text);
    module_->print(ts, nullptr);
    fail("tilejit internal error: LLVM verifier rejected the lowering of kernel {}: {}\n{}", fn.name, error, text);
  }
  return LoweredKernel{std::move(module_), shared_bytes_, num_threads};
}

}  // namespace lowering

LoweredKernel lower_to_llvm(const ir::Function& fn, const Target& target, llvm::LLVMContext& context) {
  return lowering::Lowering(fn, target, context).run();
}

}  // namespace tilejit::codegen
