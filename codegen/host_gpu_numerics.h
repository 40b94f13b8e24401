// Internal to codegen: rewrites of a kernel's module before the emulator compiles it for the
// host, where LLVM's x86 backend would compute a generic IR operation differently from the GPU.
// Each rewrite makes the host's result the one NVPTX's instruction gives.
#pragma once

namespace llvm {
class Module;
}

namespace tilejit::codegen {

// - An integer wider than bf16's 8 significant bits converts to bf16 in one rounding
//   (cvt.rn.bf16.s32); x86 goes through f32 and rounds twice.
// - minnum / maxnum of two zeros order -0 below +0, as PTX's min and max do; LLVM lets either
//   zero come back, and x86 returns one operand by position.
// - fma on bf16 rounds once (fma.rn.bf16); x86 fuses in f32 and rounds again.
// - an f32 atomic add in global memory flushes subnormal inputs and its result to zero of the
//   same sign (atom.global.add.f32, as the PTX ISA says; shared memory keeps them); x86 keeps them.
void match_gpu_numerics(llvm::Module& m);

}  // namespace tilejit::codegen
