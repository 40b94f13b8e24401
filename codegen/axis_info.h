// Per-dim facts about integer and pointer tiles that decide how wide a global memory access
// may be: contiguity (runs of consecutive values), divisibility (a power of two that divides
// the first value of every run, so every element where the contiguity is 1; bytes for
// pointers) and constancy (runs of equal values). Offsets taken modulo n (`rem`) are assumed
// not negative, as index arithmetic is. Triton's AxisInfo analysis, on the tile IR. Integer
// tiles whose every element is one known value (constants, and arguments the specialization
// key says equal 1) carry that value, so a unit stride passed as an argument keeps
// `offsets * stride` contiguous.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "dsl/ir.h"

namespace tilejit::codegen {

struct AxisInfo {
  std::vector<int64_t> contiguity;
  std::vector<int64_t> divisibility;
  std::vector<int64_t> constancy;
  int64_t scalar_divisibility = 1;  // for scalars (empty vectors)
  std::optional<int64_t> value;     // every element equals this integer
};

class AxisAnalysis {
 public:
  explicit AxisAnalysis(const ir::Function& fn);
  const AxisInfo& info(const ir::Value* v) const;

 private:
  void visit_block(const ir::Block& block);
  AxisInfo compute(const ir::Op& op) const;
  AxisInfo elementwise_facts(const ir::Op& op) const;
  std::map<const ir::Value*, AxisInfo> infos_;
};

}  // namespace tilejit::codegen
