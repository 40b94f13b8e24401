// Structured control flow: for loops with loop-carried tiles become a header with one phi
// per register, if / else becomes a diamond with phis at the join. Branch results live in
// the layout the first branch yields them in; a loop carries each value in the layout its body will
// define it in where that can be told (codegen/lowering/carried_layout.cpp), so that no
// iteration converts it. Loads that feed
// dot are software-pipelined where they qualify (codegen/lowering/loop_pipeline.h).
#include "codegen/lowering/loop_pipeline.h"
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

// The registers of a value in the layout a region boundary uses.
std::vector<llvm::Value*> boundary_regs(Lowering& L, const ir::Value* v, const LinearLayout& layout) {
  return v->type.is_scalar() ? std::vector<llvm::Value*>{L.scalar(v)} : L.in_layout(v, layout);
}

// A loop carries a tile of 16-bit registers two to a 32-bit word: the form a consumer of
// pairs (a tensor-core A fragment: attention's lagged probabilities) takes them in, and the
// form a pair is made in (cvt.rn.bf16x2.f32). Carried one value each, they cross the back edge
// as 16-bit registers that ptxas packs at the dot, and moves the words it packs them into.
bool carried_in_words(const std::vector<llvm::Value*>& regs) {
  return !regs.empty() && regs.size() % 2 == 0 && regs[0]->getType()->getPrimitiveSizeInBits() == 16;
}

std::vector<llvm::Value*> pack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& regs) {
  auto* pair = llvm::FixedVectorType::get(regs[0]->getType(), 2);
  std::vector<llvm::Value*> words;
  for (size_t r = 0; r < regs.size(); r += 2) {
    llvm::Value* v = b.CreateInsertElement(llvm::PoisonValue::get(pair), regs[r], uint64_t{0});
    v = b.CreateInsertElement(v, regs[r + 1], uint64_t{1});
    words.push_back(b.CreateBitCast(v, b.getInt32Ty()));
  }
  return words;
}

std::vector<llvm::Value*> unpack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& words, llvm::Type* type) {
  auto* pair = llvm::FixedVectorType::get(type, 2);
  std::vector<llvm::Value*> regs;
  for (llvm::Value* w : words) {
    llvm::Value* v = b.CreateBitCast(w, pair);
    regs.push_back(b.CreateExtractElement(v, uint64_t{0}));
    regs.push_back(b.CreateExtractElement(v, uint64_t{1}));
  }
  return regs;
}

}  // namespace

void Lowering::lower_for(const ir::Op& op) {
  fence_copies();
  const ir::Block& body = op.region(0);
  llvm::Value* lb = scalar(op.operands[0]);
  llvm::Value* ub = scalar(op.operands[1]);
  llvm::Value* step = scalar(op.operands[2]);
  size_t carried = op.operands.size() - 3;
  const ir::Op& yield = *body.ops.back();
  std::vector<LinearLayout> layouts;
  std::vector<std::vector<llvm::Value*>> init;
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* yielded = yield.operands[i];
    layouts.push_back(yielded->type.is_scalar() ? LinearLayout{} : carried_layout(yielded));
    init.push_back(boundary_regs(*this, op.operands[3 + i], layouts[i]));
  }
  std::vector<llvm::Type*> word_halves(carried, nullptr);  // the 16-bit type of a value carried in words
  for (size_t i = 0; i < carried; ++i)
    if (carried_in_words(init[i])) {
      word_halves[i] = init[i][0]->getType();
      init[i] = pack_words(b, init[i]);
    }
  // The pipeline of this loop's loads: planned by the loop around it when a producer runs
  // across that loop's iterations, else here.
  LoopPipeline* pipeline = spanning_pipeline && &spanning_pipeline->loop() == &op ? spanning_pipeline : nullptr;
  std::unique_ptr<LoopPipeline> planned = pipeline ? nullptr : LoopPipeline::plan(*this, op);
  if (planned) planned->prologue(lb, ub, step);
  if (planned && &planned->loop() == &op) pipeline = planned.get();
  if (planned && !pipeline) spanning_pipeline = planned.get();
  // After the prologue, whose first copies run meanwhile; after a split into producer and
  // consumers, only the consumers, which read them, store the tiles.
  InvariantTiles invariant = hold_invariant_operands(op);
  llvm::Value* first_position = pipeline ? pipeline->enter(lb) : nullptr;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* preheader = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, "for.header", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "for.body", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "for.exit", f);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(lb->getType(), 2, "iv");
  iv->addIncoming(lb, preheader);
  llvm::PHINode* stage = nullptr;  // the pipeline's position of this iteration in two laps of its ring
  if (pipeline) {
    stage = b.CreatePHI(b.getInt32Ty(), 2, "ring.position");
    stage->addIncoming(first_position, preheader);
  }
  std::vector<std::vector<llvm::PHINode*>> phis(carried);
  for (size_t i = 0; i < carried; ++i)
    for (llvm::Value* v : init[i]) {
      llvm::PHINode* phi = b.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, preheader);
      phis[i].push_back(phi);
    }
  for (size_t i = 0; i < carried; ++i) {
    std::vector<llvm::Value*> regs(phis[i].begin(), phis[i].end());
    if (word_halves[i]) regs = unpack_words(b, regs, word_halves[i]);
    const ir::Value* arg = body.args[1 + i];
    if (arg->type.is_scalar()) define_scalar(arg, regs[0]);
    else define(arg, Regs{layouts[i], regs});
    define(op.results[i], home(arg));
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, ub), loop, exit);

  b.SetInsertPoint(loop);
  define_scalar(body.args[0], iv);
  enter_region();
  scratch_used();  // by the iteration before
  if (pipeline) pipeline->begin_iteration(iv, ub, step, stage);
  lower_block(body);
  copies_unfenced_before = nullptr;  // no wgmma of the iteration read its copies
  std::vector<std::vector<llvm::Value*>> next;
  for (size_t i = 0; i < carried; ++i) {
    next.push_back(boundary_regs(*this, yield.operands[i], layouts[i]));
    if (word_halves[i]) next.back() = pack_words(b, next.back());
  }
  llvm::Value* iv_next = b.CreateAdd(iv, step, "iv.next", false, true);
  llvm::Value* stage_next = pipeline ? pipeline->next_position(stage) : nullptr;
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateBr(header);
  iv->addIncoming(iv_next, latch);
  if (stage) stage->addIncoming(stage_next, latch);
  for (size_t i = 0; i < carried; ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(next[i][r], latch);
  enter_region();
  scratch_used();  // by the last iteration
  b.SetInsertPoint(exit);
  if (pipeline) pipeline->leave(stage, ub, step);
  release_invariant_operands(invariant);
  if (planned) planned->finish();
  if (planned && !pipeline) spanning_pipeline = nullptr;
}

void Lowering::lower_if(const ir::Op& op) {
  fence_copies();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* then_bb = llvm::BasicBlock::Create(ctx, "if.then", f);
  auto* else_bb = llvm::BasicBlock::Create(ctx, "if.else", f);
  auto* join = llvm::BasicBlock::Create(ctx, "if.end", f);
  b.CreateCondBr(scalar(op.operands[0]), then_bb, else_bb);
  // Each result takes the layout the first branch yields it in (a loop's accumulator in its
  // dot's layout); the other branch's is converted to it.
  std::vector<LinearLayout> layouts(op.results.size());

  auto branch = [&](const ir::Block& block, llvm::BasicBlock* start, bool first) {
    b.SetInsertPoint(start);
    enter_region();
    scratch_used();  // by the branch lowered before, as far as the lowering knows
    lower_block(block);
    const ir::Op& yield = *block.ops.back();
    if (first)
      for (size_t i = 0; i < op.results.size(); ++i)
        if (const ir::Value* v = yield.operands[i]; !v->type.is_scalar()) layouts[i] = home(v).layout;
    std::vector<std::vector<llvm::Value*>> values;
    for (size_t i = 0; i < op.results.size(); ++i) values.push_back(boundary_regs(*this, yield.operands[i], layouts[i]));
    llvm::BasicBlock* end = b.GetInsertBlock();
    b.CreateBr(join);
    enter_region();
    return std::make_pair(end, values);
  };
  auto [then_end, then_values] = branch(op.region(0), then_bb, true);
  auto [else_end, else_values] = branch(op.region(1), else_bb, false);

  b.SetInsertPoint(join);
  scratch_used();  // by either branch
  for (size_t i = 0; i < op.results.size(); ++i) {
    std::vector<llvm::Value*> regs;
    for (size_t r = 0; r < then_values[i].size(); ++r) {
      llvm::PHINode* phi = b.CreatePHI(then_values[i][r]->getType(), 2);
      phi->addIncoming(then_values[i][r], then_end);
      phi->addIncoming(else_values[i][r], else_end);
      regs.push_back(phi);
    }
    if (op.results[i]->type.is_scalar()) define_scalar(op.results[i], regs[0]);
    else define(op.results[i], Regs{layouts[i], regs});
  }
}

}  // namespace tilejit::codegen::lowering
