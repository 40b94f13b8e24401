// The check every compile test makes of generated PTX: ptxas accepts it for its target
// (when the toolkit is installed) without serializing wgmma, and, where asked, the kernel
// spills no registers.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "codegen/compiler.h"
#include "codegen/ptxas.h"

namespace tilejit::codegen {

// ptxas inserts waits where the code touches wgmma's accumulators between the issue and the
// wait, or serializes the wgmmas where it cannot follow them, and says so: the overlap the
// compiler asked for would be lost. Without the register count at entry it ignores setmaxnreg.
inline void expect_overlap_kept(const PtxasResult& r, const std::string& what) {
  for (const char* lost : {"warpgroup.wait is injected", "wgmma.mma_async instructions are serialized",
                           "'setmaxnreg' ignored"})
    EXPECT_EQ(r.log.find(lost), std::string::npos) << what << ": " << r.log;
}

// Assembles with ptxas when the toolkit is installed; logs registers and spills.
inline void expect_ptxas_accepts(const CompiledKernel& k, bool expect_no_spills) {
  if (!find_ptxas()) {
    std::printf("ptxas not installed: %s/%s checked by LLVM only\n", k.name.c_str(), k.arch.c_str());
    return;
  }
  PtxasResult r = run_ptxas(k.ptx, k.arch);
  ASSERT_TRUE(r.ok) << k.name << " " << k.arch << ":\n" << r.log << "\n" << k.ptx;
  std::printf("ptxas %s %s: %d registers, %d bytes spill stores, %d bytes spill loads\n", k.name.c_str(),
              k.arch.c_str(), r.registers, r.spill_stores, r.spill_loads);
  expect_overlap_kept(r, k.name + " " + k.arch);
  if (expect_no_spills) {
    EXPECT_EQ(r.spill_stores, 0) << r.log;
    EXPECT_EQ(r.spill_loads, 0) << r.log;
  }
}

}  // namespace tilejit::codegen
