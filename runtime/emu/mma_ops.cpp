// Emulation of the warp-level tensor-core instructions: mma.sync.aligned.m16n8k{8,16,32}
// (tf32, f16, bf16, e4m3 / e5m2 into f32; s8 into s32) and cvt.rna.tf32.f32. Every lane
// hands in its fragment words; the last lane to arrive assembles the whole A, B and C
// matrices from the fragment tables of the PTX ISA, multiplies, and hands every lane its
// part of D. The fragment positions are written here from the ISA's tables, independently
// of the compiler's layouts (codegen/mma_layout.h), so a layout bug shows up as wrong numbers.
//
// Numerics: products of the inputs are exact, and each element of D is C plus the sum of its
// k products, made an f32 as tensor_core_result says: rounded once, except for fp8, whose
// narrower accumulator is modelled. tf32 operands use only their top 19 bits.
// s8 products accumulate exactly into s32, wrapping on overflow (no .satfinite).
#include <bit>
#include <cmath>
#include <cstring>

#include "runtime/emu/mma_fragments.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/tensor_core_numerics.h"
#include "runtime/emu/warp_sync.h"

namespace tilejit::emu {
namespace {

constexpr int kAWords = 4, kBWords = 2, kCWords = 4;

// D = A * B + C for the warp. Accumulators travel as their bits (f32 or s32).
template <int K, Encoding EA, Encoding EB>
void mma_warp(WarpExchange& w) {
  constexpr bool integer = EA == Encoding::s8;
  const int a_count = kAWords * 32 / element_bits(EA), b_count = kBWords * 32 / element_bits(EB);
  double a[16][K], b[K][8], c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const uint32_t* in = w.words_in[lane];
    for (int i = 0; i < a_count; ++i) {
      Position p = a_position(K, lane, i);
      a[p.row][p.col] = decode(EA, fragment_element(in, element_bits(EA), i));
    }
    for (int i = 0; i < b_count; ++i) {
      Position p = b_position(K, lane, i);
      b[p.row][p.col] = decode(EB, fragment_element(in + kAWords, element_bits(EB), i));
    }
    for (int i = 0; i < kCWords; ++i) {
      Position p = c_position(lane, i);
      uint32_t bits = in[kAWords + kBWords + i];
      c[p.row][p.col] = integer ? static_cast<double>(static_cast<int32_t>(bits)) : std::bit_cast<float>(bits);
    }
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < kCWords; ++i) {
      Position p = c_position(lane, i);
      if (integer) {
        // Exact in int64: |products| < 2^14, 32 of them, plus any s32.
        int64_t sum = static_cast<int64_t>(c[p.row][p.col]);
        for (int k = 0; k < K; ++k) sum += static_cast<int64_t>(a[p.row][k]) * static_cast<int64_t>(b[k][p.col]);
        w.words_out[lane][i] = static_cast<uint32_t>(sum);
      } else {
        float d = tensor_core_result(EA, c[p.row][p.col], K, [&](int k) { return a[p.row][k] * b[k][p.col]; });
        w.words_out[lane][i] = std::bit_cast<uint32_t>(d);
      }
    }
}

// The C-callable binding: host_compiler passes a struct result through `out` and each
// <2 x half> word as its 32 bits.
template <int K, Encoding EA, Encoding EB, typename Acc>
void mma_sync(Acc* out, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1, Acc c0, Acc c1,
              Acc c2, Acc c3) {
  WarpExchange& w = warp_exchange("mma.sync.aligned", 0xffffffffu);
  uint32_t* in = w.words_in[current().thread->tid % 32];
  const uint32_t words[] = {a0, a1, a2, a3, b0, b1, std::bit_cast<uint32_t>(c0), std::bit_cast<uint32_t>(c1),
                            std::bit_cast<uint32_t>(c2), std::bit_cast<uint32_t>(c3)};
  std::memcpy(in, words, sizeof(words));
  warp_rendezvous(w, mma_warp<K, EA, EB>);
  const uint32_t* result = w.words_out[current().thread->tid % 32];
  for (int i = 0; i < kCWords; ++i) out[i] = std::bit_cast<Acc>(result[i]);
}

// cvt.rna.tf32.f32: round to 10 mantissa bits, ties away from zero (the format is
// sign-magnitude, so adding half an ulp to the magnitude does it); the low 13 bits are zero.
uint32_t f32_to_tf32_rna(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) ? 0x7fffffffu : u;
  return (u + 0x1000u) & 0xffffe000u;
}

template <typename F>
void* address(F* f) {
  return reinterpret_cast<void*>(f);
}

}  // namespace

void add_mma_symbols(codegen::HostSymbols& out) {
  using E = Encoding;
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.mma.m16n8k16.row.col.f32.f32", address(mma_sync<16, E::f16, E::f16, float>));
  add("llvm.nvvm.mma.m16n8k16.row.col.bf16", address(mma_sync<16, E::bf16, E::bf16, float>));
  add("llvm.nvvm.mma.m16n8k8.row.col.tf32", address(mma_sync<8, E::tf32, E::tf32, float>));
  add("llvm.nvvm.mma.m16n8k32.row.col.s8", address(mma_sync<32, E::s8, E::s8, int32_t>));
  add("llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32", address(mma_sync<32, E::e4m3, E::e4m3, float>));
  add("llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e5m2.f32", address(mma_sync<32, E::e4m3, E::e5m2, float>));
  add("llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e4m3.f32", address(mma_sync<32, E::e5m2, E::e4m3, float>));
  add("llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e5m2.f32", address(mma_sync<32, E::e5m2, E::e5m2, float>));
  add("llvm.nvvm.f2tf32.rna", address(f32_to_tf32_rna));
}

}  // namespace tilejit::emu
