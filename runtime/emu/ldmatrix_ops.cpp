// Emulation of ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 and of its inverse
// stmatrix.sync.aligned.m8n8.x4.shared.b16: a warp loads (stores) one, two or four 8x8
// matrices of 16-bit elements from (to) shared memory. Lanes 8j..8j+7 give the addresses of
// the eight 16-byte rows of matrix j; lane l's word j holds the two elements of matrix j at
// row l/4, columns 2(l%4) and 2(l%4)+1, or with .trans at rows 2(l%4) and 2(l%4)+1 of column
// l/4 (lower element in the low half). Each row is checked as a 16-byte shared load (store)
// of the lane that gave its address.
#include <cstring>

#include "codegen/host_compiler.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/warp_sync.h"

namespace tilejit::emu {
namespace {

template <int Matrices, bool Transpose>
void load_matrices(WarpExchange& w) {
  for (int j = 0; j < Matrices; ++j) {
    uint16_t m[8][8];
    for (int row = 0; row < 8; ++row) std::memcpy(m[row], reinterpret_cast<const void*>(w.values[8 * j + row]), 16);
    for (int lane = 0; lane < 32; ++lane) {
      int r = lane / 4, c = 2 * (lane % 4);
      uint16_t lo = Transpose ? m[c][r] : m[r][c], hi = Transpose ? m[c + 1][r] : m[r][c + 1];
      w.words_out[lane][j] = uint32_t{lo} | uint32_t{hi} << 16;
    }
  }
}

template <int Matrices, bool Transpose>
void ldmatrix(uint32_t* out, const void* row_address) {
  int lane = current().thread->tid % 32;
  if (lane < 8 * Matrices) check_shared(row_address, 16, 0);
  WarpExchange& w = warp_exchange("ldmatrix.sync.aligned", 0xffffffffu);
  w.values[lane] = reinterpret_cast<uintptr_t>(row_address);
  warp_rendezvous(w, load_matrices<Matrices, Transpose>);
  std::memcpy(out, w.words_out[lane], sizeof(uint32_t) * Matrices);
}

void store_matrices(WarpExchange& w) {
  for (int j = 0; j < 4; ++j)
    for (int row = 0; row < 8; ++row) {
      uint16_t elements[8];
      for (int q = 0; q < 4; ++q) {
        uint32_t word = w.words_in[4 * row + q][j];
        elements[2 * q] = static_cast<uint16_t>(word), elements[2 * q + 1] = static_cast<uint16_t>(word >> 16);
      }
      std::memcpy(reinterpret_cast<void*>(w.values[8 * j + row]), elements, 16);
    }
}

void stmatrix_x4(void* row_address, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
  int lane = current().thread->tid % 32;
  check_shared(row_address, 16, codegen::kAccessWrite);
  WarpExchange& w = warp_exchange("stmatrix.sync.aligned", 0xffffffffu);
  w.values[lane] = reinterpret_cast<uintptr_t>(row_address);
  uint32_t words[4] = {w0, w1, w2, w3};
  std::memcpy(w.words_in[lane], words, sizeof words);
  warp_rendezvous(w, store_matrices);
}

// x1 returns its one word directly; x2 and x4 return a struct (written through `out`).
template <bool Transpose>
uint32_t ldmatrix_x1(const void* row_address) {
  uint32_t word;
  ldmatrix<1, Transpose>(&word, row_address);
  return word;
}

}  // namespace

void add_ldmatrix_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16.p3", reinterpret_cast<void*>(ldmatrix_x1<false>));
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.trans.b16.p3", reinterpret_cast<void*>(ldmatrix_x1<true>));
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3", reinterpret_cast<void*>(ldmatrix<2, false>));
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3", reinterpret_cast<void*>(ldmatrix<2, true>));
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", reinterpret_cast<void*>(ldmatrix<4, false>));
  add("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3", reinterpret_cast<void*>(ldmatrix<4, true>));
  add("llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3", reinterpret_cast<void*>(stmatrix_x4));
}

}  // namespace tilejit::emu
