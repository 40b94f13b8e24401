// The emulator device: runs kernels on the host CPU by executing the same lowered code that
// becomes PTX (see codegen/host_compiler.h). Global memory is host memory the device hands
// out and tracks, so every global access is checked against it; CTAs are spread over the
// host's cores, each CTA's threads run as fibers (runtime/emu/cta_runner.h). Work runs
// synchronously at the call, so streams are trivially ordered and events measure host time.
//
// Environment: TILEJIT_EMU_ARCH (the target whose semantics are emulated, default sm_90a),
// TILEJIT_EMU_THREADS (host worker threads, default: all cores), TILEJIT_EMU_RACECHECK=1.
#pragma once

#include "runtime/device.h"

namespace tilejit {

Device& emu_device();
// The emulator of one target ("sm_80", "sm_90a", ...): kernels are lowered for that target,
// so its tensor-core instructions run. Throws tilejit::Error for an unknown target.
Device& emu_device(const std::string& arch);

// A hand-written per-thread kernel in LLVM's text form (see
// codegen::compile_llvm_text_for_host), loaded on the emulator to launch like any other:
// lets tests plant bugs the lowering never makes.
std::shared_ptr<LoadedKernel> emu_load_llvm_ir(const std::string& llvm_ir, const std::string& kernel_name,
                                               int num_threads, int64_t dynamic_shared_bytes);

}  // namespace tilejit
