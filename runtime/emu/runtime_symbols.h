// Internal to the emulator: the emulation runtime the host-compiled kernels call, as the
// name -> address table codegen/host_compiler.h binds. One file per family of operations.
#pragma once

#include "codegen/host_compiler.h"

namespace tilejit::emu {

codegen::HostSymbols runtime_symbols();  // all of the below

void add_thread_symbols(codegen::HostSymbols& out);  // special registers, barriers, shuffles, votes, matches
void add_memory_symbols(codegen::HostSymbols& out);  // shared base, access checks, race detector
void add_math_symbols(codegen::HostSymbols& out);    // libdevice's __nv_* functions
void add_printf_symbols(codegen::HostSymbols& out);  // vprintf
void add_bf16_symbols(codegen::HostSymbols& out);    // bf16 conversions as the GPU rounds them
void add_bf16_fma_symbols(codegen::HostSymbols& out);  // bf16 fma, rounded once
void add_fp8_symbols(codegen::HostSymbols& out);       // fp8 pairs widened to f16 pairs
void add_mma_symbols(codegen::HostSymbols& out);     // mma.sync, tf32 conversion
void add_ldmatrix_symbols(codegen::HostSymbols& out);  // ldmatrix
void add_async_copy_symbols(codegen::HostSymbols& out);  // cp.async and its groups
void add_wgmma_symbols(codegen::HostSymbols& out);       // wgmma fences and groups, fence.proxy.async
void add_tma_symbols(codegen::HostSymbols& out);         // mbarrier, cp.async.bulk.tensor
void add_inline_ptx_symbols(codegen::HostSymbols& out);  // the inline PTX interpreter (wgmma.mma_async)

}  // namespace tilejit::emu
