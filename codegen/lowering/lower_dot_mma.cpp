// dot on the tensor cores with mma.sync (sm_80+). The operands and the accumulator are
// brought into the instruction's fragment layouts repeated over the tile (codegen/
// mma_layout.h); each warp then issues one mma per (M, N, K) repeat, chaining the
// accumulator through the K repeats. Operand elements are packed into the 32-bit words the
// instruction takes (two 16-bit, or four 8-bit elements per word). f32 operands become tf32
// (cvt.rna); with precision tf32x3 each operand is split into a tf32 high part and a tf32
// remainder, and the product is hi*hi + hi*lo + lo*hi, which recovers about f32 accuracy.
//
// Operands that are not in their fragment layout already go through shared memory: the
// tile is stored as a swizzled row-major tile (codegen/shared_layout.h) and read back with
// ldmatrix, which hands each lane its fragment words directly: A (M, K) with ldmatrix.x4
// for 16- and 8-bit elements, B (K, N) with ldmatrix.x4.trans for 16-bit elements (8-bit
// elements cannot be transposed by it, and tf32 is 32-bit: those use the generic conversion).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"

namespace tilejit::codegen::lowering {

namespace {

llvm::Intrinsic::ID mma_intrinsic(const MmaInstr& instr) {
  using K = MmaKind;
  bool b_e4m3 = instr.b_kind == K::e4m3;
  switch (instr.a_kind) {
    case K::f16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
    case K::bf16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
    case K::tf32: return llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;
    case K::s8: return llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8;
    case K::e4m3:
      return b_e4m3 ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_f32_e4m3_e4m3_f32
                    : llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_f32_e4m3_e5m2_f32;
    case K::e5m2:
      return b_e4m3 ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_f32_e5m2_e4m3_f32
                    : llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_f32_e5m2_e5m2_f32;
  }
  TJ_CHECK(false);
}

// One operand's fragments: words[outer * reps_k + rep_k] are the words one mma takes.
using Fragments = std::vector<std::vector<llvm::Value*>>;

class MmaEmitter {
 public:
  MmaEmitter(Lowering& L, const MmaTiling& t)
      : L_(L), t_(t), intrinsic_(llvm::Intrinsic::getOrInsertDeclaration(L.module(), mma_intrinsic(t.instr))) {}

  // Packs the tile's registers into per-instruction words. `reg(outer, rep_k, f)` names the
  // tile register of fragment register f; `first_param` is the intrinsic parameter the words
  // go to (its type says how they are packed).
  template <typename RegisterOf>
  Fragments pack(const std::vector<llvm::Value*>& elems, int reps_outer, int frag_regs, unsigned first_param,
                 RegisterOf reg) {
    llvm::Type* word_type = intrinsic_->getFunctionType()->getParamType(first_param);
    int per_word = t_.instr.elements_per_word();
    Fragments out;
    for (int o = 0; o < reps_outer; ++o)
      for (int k = 0; k < t_.reps_k; ++k) {
        std::vector<llvm::Value*> words;
        for (int f = 0; f < frag_regs; f += per_word) {
          std::vector<llvm::Value*> parts;
          for (int e = 0; e < per_word; ++e) parts.push_back(elems[reg(o, k, f + e)]);
          words.push_back(pack_fragment_word(L_.b, parts, word_type));
        }
        out.push_back(std::move(words));
      }
    return out;
  }

  // acc(rep_m, rep_n) += a(rep_m, rep_k) * b(rep_k, rep_n) for every repeat.
  void multiply(const Fragments& a, const Fragments& b, std::vector<llvm::Value*>& acc) {
    auto& builder = L_.b;
    for (int k = 0; k < t_.reps_k; ++k)
      for (int m = 0; m < t_.reps_m; ++m)
        for (int n = 0; n < t_.reps_n; ++n) {
          std::vector<llvm::Value*> args = a[m * t_.reps_k + k];
          const auto& bw = b[n * t_.reps_k + k];
          args.insert(args.end(), bw.begin(), bw.end());
          for (int f = 0; f < 4; ++f) args.push_back(acc[t_.acc_register(m, n, f)]);
          llvm::Value* d = builder.CreateCall(intrinsic_, args);
          for (unsigned f = 0; f < 4; ++f) acc[t_.acc_register(m, n, static_cast<int>(f))] = builder.CreateExtractValue(d, f);
        }
  }

 private:
  Lowering& L_;
  const MmaTiling& t_;
  llvm::Function* intrinsic_;
};

bool in_fragment_layout(Lowering& L, const ir::Value* v, const LinearLayout& fragment_layout) {
  return L.home(v).layout == fragment_layout || register_map(L.home(v).layout, fragment_layout).has_value();
}

// The words of every instruction's operand, `word_type` each (bitcast from ldmatrix's i32).
Fragments as_word_type(Lowering& L, Fragments f, llvm::Type* word_type) {
  for (auto& words : f)
    for (auto& w : words) w = w->getType() == word_type ? w : L.b.CreateBitCast(w, word_type);
  return f;
}

}  // namespace

llvm::Value* pack_fragment_word(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& parts, llvm::Type* word_type) {
  if (parts.size() == 1) return parts[0];
  auto* vector_type = llvm::FixedVectorType::get(parts[0]->getType(), static_cast<unsigned>(parts.size()));
  llvm::Value* v = llvm::PoisonValue::get(vector_type);
  for (size_t i = 0; i < parts.size(); ++i) v = b.CreateInsertElement(v, parts[i], b.getInt32(static_cast<uint32_t>(i)));
  return vector_type == word_type ? v : b.CreateBitCast(v, word_type);
}

const ir::Value* transposed_dot_operand(const ir::Value* v) {
  const ir::Op* op = v->def;
  if (!op || op->kind != ir::OpKind::trans || op->operands[0]->type.rank() != 2) return nullptr;
  return op->operands[0];
}

void Lowering::lower_dot_mma(const ir::Op& op, const MmaTiling& t) {
  const ir::Value* a = op.operands[0];
  const ir::Value* bv = op.operands[1];
  std::vector<llvm::Value*> acc = in_layout(op.operands[2], t.acc);  // (M, N)
  MmaEmitter mma(*this, t);
  int frag_a = t.instr.frag_a.num_regs(), frag_b = t.instr.frag_b.num_regs();
  auto a_reg = [&](int m, int k, int f) { return t.a_register(m, k, f); };
  auto b_reg = [&](int n, int k, int f) { return t.b_register(k, n, f); };
  const unsigned b_param = 4;  // every mma.sync here takes four A words, then two B words

  if (t.instr.a_kind != MmaKind::tf32) {
    // B given as trans(x) with x (N, K) goes to shared memory as x, K-contiguous rows that
    // ldmatrix turns into B fragments directly, for 8-bit elements too; A given as trans(x)
    // with x (K, M) likewise, through ldmatrix.trans (16-bit elements).
    HeldOperand ha = held_a(a, t.instr.element_bits), hb = held_b(bv);
    const ir::Value* a_held = ha.value;  // what the shared A tile holds
    const ir::Value* b_held = hb.value;  // what the shared B tile holds
    bool at = ha.mn_major, bt = !hb.mn_major;
    // An operand a loop pipeline copied into shared memory is read from there.
    bool a_shared = staged_operands.count(a_held) || !in_fragment_layout(*this, a, t.a);
    bool b_shared = staged_operands.count(b_held) ||
                    ((bt || t.instr.element_bits == 16) && !in_fragment_layout(*this, bv, t.b));
    Fragments fa, fb;
    if (a_shared || b_shared) {
      OperandTiles tiles = place_operand_tiles(*this, a_held, a_shared, hb, b_shared, /*async_proxy=*/false);
      for (int m = 0; a_shared && m < t.reps_m; ++m) {
        SharedOperand sa(*this, a_held->type, tiles.a);
        for (int k = 0; k < t.reps_k; ++k) fa.push_back(at ? sa.a_words_transposed(t, m, k) : sa.a_words(t, m, k));
      }
      if (b_shared) {
        SharedOperand sb(*this, b_held->type, tiles.b);
        fb.resize(static_cast<size_t>(t.reps_n * t.reps_k));
        for (int k = 0; k < t.reps_k; ++k)
          for (int n = 0; n < t.reps_n; n += 2) {
            bool pair = n + 1 < t.reps_n;
            std::vector<llvm::Value*> words = bt ? sb.b_words_transposed(t, k, n, pair) : sb.b_words(t, k, n, pair);
            fb[static_cast<size_t>(n * t.reps_k + k)] = {words[0], words[1]};
            if (pair) fb[static_cast<size_t>((n + 1) * t.reps_k + k)] = {words[2], words[3]};
          }
      }
    }
    llvm::FunctionType* mma_type = llvm::Intrinsic::getOrInsertDeclaration(module(), mma_intrinsic(t.instr))->getFunctionType();
    fa = a_shared ? as_word_type(*this, fa, mma_type->getParamType(0))
                  : mma.pack(in_layout(a, t.a), t.reps_m, frag_a, 0, a_reg);
    fb = b_shared ? as_word_type(*this, fb, mma_type->getParamType(b_param))
                  : mma.pack(in_layout(bv, t.b), t.reps_n, frag_b, b_param, b_reg);
    mma.multiply(fa, fb, acc);
  } else {
    std::vector<llvm::Value*> av = in_layout(a, t.a);      // (M, K)
    std::vector<llvm::Value*> bvals = in_layout(bv, t.b);  // (K, N)
    bool three_products = op.attr_str("precision") == "tf32x3";
    auto to_tf32 = [&](llvm::Value* x) { return call_intrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {x}); };
    auto split = [&](const std::vector<llvm::Value*>& xs, std::vector<llvm::Value*>& hi, std::vector<llvm::Value*>& lo) {
      for (llvm::Value* x : xs) {
        hi.push_back(to_tf32(x));
        if (three_products) lo.push_back(to_tf32(b.CreateFSub(x, b.CreateBitCast(hi.back(), b.getFloatTy()))));
      }
    };
    std::vector<llvm::Value*> a_hi, a_lo, b_hi, b_lo;
    split(av, a_hi, a_lo);
    split(bvals, b_hi, b_lo);
    Fragments ah = mma.pack(a_hi, t.reps_m, frag_a, 0, a_reg), bh = mma.pack(b_hi, t.reps_n, frag_b, b_param, b_reg);
    if (three_products) {
      // The small cross terms first, so they are not lost against the large one.
      mma.multiply(mma.pack(a_lo, t.reps_m, frag_a, 0, a_reg), bh, acc);
      mma.multiply(ah, mma.pack(b_lo, t.reps_n, frag_b, b_param, b_reg), acc);
    }
    mma.multiply(ah, bh, acc);
  }
  define(op.result(), Regs{t.acc, acc});
}

}  // namespace tilejit::codegen::lowering
