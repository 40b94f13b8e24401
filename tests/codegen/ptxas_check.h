// The check every compile test makes of generated PTX: ptxas accepts it for its target
// (when the toolkit is installed) without serializing wgmma, warpgroups that trade registers
// stay within the CTA's pool, and, where asked, the kernel spills no registers.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
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

// A kernel whose warpgroups trade registers with setmaxnreg: its producer warpgroup (128
// threads) gives back what the consumers take, counted from the registers ptxas gave each
// thread at entry. setmaxnreg.inc waits until the CTA's pool has the registers, so a
// consumer count beyond it would hang on the GPU (the emulator does not model the pool).
inline void expect_register_pool_shared_out(const std::string& ptx, const PtxasResult& r, const std::string& what) {
  std::smatch inc, dec, threads;
  if (!std::regex_search(ptx, inc, std::regex(R"(setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+))"))) return;
  ASSERT_TRUE(std::regex_search(ptx, dec, std::regex(R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+))"))) << what;
  ASSERT_TRUE(std::regex_search(ptx, threads, std::regex(R"(\.maxntid\s+(\d+))"))) << what;
  const int64_t taken = std::stoll(inc[1]), kept = std::stoll(dec[1]), all = std::stoll(threads[1]);
  const int64_t producers = 128, consumers = all - producers, at_entry = r.registers;
  EXPECT_LE(consumers * (taken - at_entry), producers * (at_entry - kept))
      << what << ": " << consumers << " consumer threads take " << taken << " registers each, " << producers
      << " producer threads keep " << kept << ", from " << at_entry << " each at entry";
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
  expect_register_pool_shared_out(k.ptx, r, k.name + " " + k.arch);
  if (expect_no_spills) {
    EXPECT_EQ(r.spill_stores, 0) << r.log;
    EXPECT_EQ(r.spill_loads, 0) << r.log;
  }
}

}  // namespace tilejit::codegen
