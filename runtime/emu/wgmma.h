// Internal to the emulator: sm_90a's warpgroup MMA (runtime/emu/wgmma_ops.cpp), called by the
// interpreter of inline PTX (runtime/emu/inline_ptx.cpp), which parses the instruction once.
#pragma once

#include <cstdint>

#include "runtime/emu/tensor_core_numerics.h"

namespace tilejit::emu {

// wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype with B in shared memory and A there
// or in registers.
struct WgmmaShape {
  int n = 0, k = 0;
  Encoding a = Encoding::f16, b = Encoding::f16;
  bool integer = false;                   // .s32 accumulator (s8 operands)
  int scale_a = 1, scale_b = 1;           // imm-scale-a / imm-scale-b: 1 or -1
  bool a_mn_major = false, b_mn_major = false;  // imm-trans-a / imm-trans-b
  bool a_in_registers = false;                  // A as four fragment words per thread
};

// What a thread hands in for A: a matrix descriptor, or (a_in_registers) its four words.
struct WgmmaA {
  uint64_t descriptor = 0;
  const uint32_t* words = nullptr;
};

// The calling thread's part of D = A * B + (scale_d ? C : 0): c and d hold its n/2
// accumulator registers (f32 or s32 bits). d receives placeholders; the values land at the
// wgmma.wait_group that completes the group (runtime/emu/wgmma_ops.cpp). Both throw a
// KernelFault for what the kernel did wrong.
void wgmma_mma_async(const WgmmaShape& shape, const WgmmaA& a, uint64_t desc_b, bool scale_d, const uint32_t* c,
                     uint32_t* d);
// wgmma.wait_group.sync.aligned `pending`.
void wgmma_wait_group(int64_t pending);
// What a register holding `word` holds after the wait: the value of a placeholder whose
// group is complete, anything else unchanged.
uint32_t wgmma_landed(uint32_t word);

}  // namespace tilejit::emu
