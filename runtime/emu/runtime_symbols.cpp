#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {

codegen::HostSymbols runtime_symbols() {
  codegen::HostSymbols out;
  add_thread_symbols(out);
  add_memory_symbols(out);
  add_math_symbols(out);
  add_printf_symbols(out);
  add_bf16_symbols(out);
  add_bf16_fma_symbols(out);
  add_fp8_symbols(out);
  add_mma_symbols(out);
  add_ldmatrix_symbols(out);
  add_async_copy_symbols(out);
  add_wgmma_symbols(out);
  add_tma_symbols(out);
  add_inline_ptx_symbols(out);
  return out;
}

}  // namespace tilejit::emu
