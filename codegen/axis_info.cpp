#include "codegen/axis_info.h"

#include <numeric>

namespace tilejit::codegen {
namespace {

constexpr int64_t kMaxDivisibility = int64_t{1} << 30;

int64_t pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  int64_t d = 1;
  while (d < kMaxDivisibility && (v % (d * 2)) == 0) d *= 2;
  return d;
}

AxisInfo uniform(const ir::Type& type, int64_t divisibility) {
  AxisInfo a;
  a.scalar_divisibility = divisibility;
  for (int64_t size : type.shape) {
    a.contiguity.push_back(1);
    a.divisibility.push_back(divisibility);
    a.constancy.push_back(size);
  }
  return a;
}

AxisInfo known_value(const ir::Type& type, int64_t value) {
  AxisInfo a = uniform(type, pow2_divisor(value));
  a.value = value;
  return a;
}

AxisInfo unknown(const ir::Type& type) {
  AxisInfo a;
  for (size_t i = 0; i < type.shape.size(); ++i) {
    a.contiguity.push_back(1);
    a.divisibility.push_back(1);
    a.constancy.push_back(1);
  }
  return a;
}

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

// What divides x's values along `d` where runs of `run` consecutive elements start (run 1:
// every element). Inside one of x's longer runs of consecutive values, a start lies a multiple
// of `run` elements past the run's first value: only what divides that offset too.
int64_t run_start_divisibility(const AxisInfo& x, const ir::Type& type, int d, int64_t run) {
  if (x.contiguity[d] <= run) return x.divisibility[d];
  int64_t unit = type.pointer ? dtype_storage_bytes(type.dtype) : 1;
  return gcd(x.divisibility[d], run * unit);
}

}  // namespace

AxisAnalysis::AxisAnalysis(const ir::Function& fn) {
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    int64_t div = p.facts.divisibility;
    if (p.type.pointer) div = std::max<int64_t>(div, dtype_storage_bytes(p.type.dtype));
    bool one = !p.type.pointer && p.facts.equals_one;
    infos_[fn.body.args[i]] = one ? known_value(p.type, 1) : uniform(p.type, div);
  }
  visit_block(fn.body);
}

const AxisInfo& AxisAnalysis::info(const ir::Value* v) const {
  auto it = infos_.find(v);
  TJ_CHECK(it != infos_.end());
  return it->second;
}

void AxisAnalysis::visit_block(const ir::Block& block) {
  for (auto& op : block.ops) {
    for (auto& region : op->regions) {
      for (auto* arg : region->args) infos_[arg] = unknown(arg->type);
      if (op->kind == ir::OpKind::for_loop) {
        // The induction variable is lb + i * step: divisible by what divides both.
        int64_t div = gcd(info(op->operands[0]).scalar_divisibility, info(op->operands[2]).scalar_divisibility);
        infos_[region->args[0]] = uniform(region->args[0]->type, div);
      }
      visit_block(*region);
    }
    for (auto* r : op->results) infos_[r] = r == op->results[0] ? compute(*op) : unknown(r->type);
  }
}

AxisInfo AxisAnalysis::compute(const ir::Op& op) const {
  const ir::Type& type = op.result()->type;
  auto in = [&](size_t i) -> const AxisInfo& { return info(op.operands[i]); };
  int rank = type.rank();
  switch (op.kind) {
    case ir::OpKind::constant:
      if (std::holds_alternative<int64_t>(op.attr("value"))) return known_value(type, op.attr_int("value"));
      return uniform(type, 1);
    case ir::OpKind::arange: {
      AxisInfo a;
      a.contiguity = {type.shape[0]};
      a.divisibility = {pow2_divisor(op.attr_int("start"))};
      a.constancy = {1};
      return a;
    }
    case ir::OpKind::splat: {
      AxisInfo a = uniform(type, in(0).scalar_divisibility);
      a.value = in(0).value;
      return a;
    }
    case ir::OpKind::broadcast: {
      AxisInfo a = in(0);
      const ir::Shape& from = op.operands[0]->type.shape;
      for (int d = 0; d < rank; ++d)
        if (from[d] != type.shape[d]) a.constancy[d] = type.shape[d];
      return a;
    }
    case ir::OpKind::expand_dims: {
      // Along the new dim every element starts a run: what divides every element. Along a dim
      // without runs of consecutive values, that is its divisibility.
      AxisInfo a = in(0);
      int64_t every_element = a.divisibility.empty() ? a.scalar_divisibility : 1;
      for (int d = 0; d < static_cast<int>(a.divisibility.size()); ++d)
        every_element = std::max(every_element, run_start_divisibility(a, op.operands[0]->type, d, 1));
      int axis = static_cast<int>(op.attr_int("axis"));
      a.contiguity.insert(a.contiguity.begin() + axis, 1);
      a.divisibility.insert(a.divisibility.begin() + axis, every_element);
      a.constancy.insert(a.constancy.begin() + axis, 1);
      return a;
    }
    case ir::OpKind::trans: {
      // Dim d of the result is dim perm[d] of the operand, with its runs.
      const std::vector<int64_t>& perm = op.attr_ints("perm");
      AxisInfo a = in(0);
      for (int d = 0; d < rank; ++d) {
        auto from = static_cast<size_t>(perm[static_cast<size_t>(d)]);
        a.contiguity[d] = in(0).contiguity[from];
        a.divisibility[d] = in(0).divisibility[from];
        a.constancy[d] = in(0).constancy[from];
      }
      return a;
    }
    case ir::OpKind::add:
    case ir::OpKind::sub:
    case ir::OpKind::addptr: {
      const AxisInfo& a = in(0);
      const AxisInfo& b = in(1);
      int64_t scale = op.kind == ir::OpKind::addptr ? dtype_storage_bytes(type.dtype) : 1;
      AxisInfo r;
      r.scalar_divisibility = gcd(a.scalar_divisibility, b.scalar_divisibility * scale);
      for (int d = 0; d < rank; ++d) {
        int64_t contig_b = op.kind == ir::OpKind::sub ? 1 : b.contiguity[d];
        int64_t run = std::max(gcd(a.contiguity[d], b.constancy[d]), gcd(contig_b, a.constancy[d]));
        r.contiguity.push_back(run);
        r.divisibility.push_back(gcd(run_start_divisibility(a, op.operands[0]->type, d, run),
                                     run_start_divisibility(b, op.operands[1]->type, d, run) * scale));
        r.constancy.push_back(gcd(a.constancy[d], b.constancy[d]));
      }
      return r;
    }
    case ir::OpKind::mul: {
      const AxisInfo& a = in(0);
      const AxisInfo& b = in(1);
      if (b.value == 1) return a;
      if (a.value == 1) return b;
      AxisInfo r;
      r.scalar_divisibility = std::min(kMaxDivisibility, a.scalar_divisibility * b.scalar_divisibility);
      for (int d = 0; d < rank; ++d) {
        r.contiguity.push_back(1);
        int64_t every_a = run_start_divisibility(a, op.operands[0]->type, d, 1);
        int64_t every_b = run_start_divisibility(b, op.operands[1]->type, d, 1);
        r.divisibility.push_back(std::min(kMaxDivisibility, every_a * every_b));
        r.constancy.push_back(gcd(a.constancy[d], b.constancy[d]));
      }
      return r;
    }
    case ir::OpKind::minimum:
    case ir::OpKind::maximum: {
      // Either operand's value: divisible by what divides both (`minimum(K, k + steps)`).
      AxisInfo r = elementwise_facts(op);
      if (!is_integer(type.dtype)) return r;
      r.scalar_divisibility = gcd(in(0).scalar_divisibility, in(1).scalar_divisibility);
      for (int d = 0; d < rank; ++d)
        r.divisibility[d] = gcd(run_start_divisibility(in(0), op.operands[0]->type, d, r.contiguity[d]),
                                run_start_divisibility(in(1), op.operands[1]->type, d, r.contiguity[d]));
      return r;
    }
    case ir::OpKind::rem: {
      // A run of d consecutive values starting at a multiple of d stays consecutive modulo n
      // when d divides n (`offsets % N` with N a multiple of 16).
      const AxisInfo& a = in(0);
      const AxisInfo& b = in(1);
      AxisInfo r = unknown(type);
      if (!is_integer(type.dtype)) return r;
      for (int d = 0; d < rank; ++d) {
        if (b.constancy[d] != type.shape[d]) continue;
        int64_t run = gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d]));
        r.contiguity[d] = run;
        r.divisibility[d] = gcd(run_start_divisibility(a, op.operands[0]->type, d, run),
                                run_start_divisibility(b, op.operands[1]->type, d, run));
        r.constancy[d] = a.constancy[d];
      }
      return r;
    }
    case ir::OpKind::shr: {
      // A run of consecutive values starting at a multiple of 2^s, shifted right by s, is
      // constant over aligned runs of 2^s: the block of K index k >> 5. (Not a division:
      // it rounds towards zero, so -4 .. -1 divided by 4 are -1, 0, 0, 0.)
      AxisInfo r = elementwise_facts(op);
      const std::optional<int64_t>& by = in(1).value;
      if (!is_integer(type.dtype) || !by || *by < 1 || *by > 30) return r;
      const int64_t block = int64_t{1} << *by;
      const AxisInfo& a = in(0);
      for (int d = 0; d < rank; ++d)
        r.constancy[d] = std::max(r.constancy[d], gcd(block, gcd(a.contiguity[d], a.divisibility[d])));
      return r;
    }
    case ir::OpKind::cast:
      // Widening an integer keeps every value, so every fact.
      if (is_integer(type.dtype) && is_integer(op.operands[0]->type.dtype) && type.dtype != DType::i1 &&
          dtype_storage_bytes(type.dtype) >= dtype_storage_bytes(op.operands[0]->type.dtype))
        return in(0);
      return elementwise_facts(op);
    case ir::OpKind::cmp: {
      // contiguous < splat(n), or >=, or the same with the operands swapped: equal within
      // aligned runs when n and the run starts share the divisor (the classic `offs < n` mask).
      // Not ==, != or <= n: `arange(0, 4) <= 0` changes after its first element.
      const std::string& predicate = op.attr_str("predicate");
      bool swapped = predicate == "gt" || predicate == "le";
      const AxisInfo& run = in(swapped ? 1 : 0);
      const AxisInfo& bound = in(swapped ? 0 : 1);
      bool threshold = swapped || predicate == "lt" || predicate == "ge";
      AxisInfo r = unknown(type);
      for (int d = 0; d < rank; ++d) {
        int64_t c = gcd(run.constancy[d], bound.constancy[d]);
        if (threshold && bound.constancy[d] == type.shape[d])
          c = std::max(c, gcd(run.contiguity[d], gcd(run.divisibility[d], bound.divisibility[d])));
        r.constancy[d] = c;
      }
      return r;
    }
    default: return elementwise_facts(op);
  }
}

// Elementwise ops keep runs of equal values equal; anything else is unknown.
AxisInfo AxisAnalysis::elementwise_facts(const ir::Op& op) const {
  const ir::Type& type = op.result()->type;
  AxisInfo r = type.is_scalar() ? uniform(type, 1) : unknown(type);
  bool elementwise = ir::is_elementwise_binary(op.kind) || ir::is_elementwise_unary(op.kind) ||
                     op.kind == ir::OpKind::select || op.kind == ir::OpKind::cast;
  if (elementwise)
    for (int d = 0; d < type.rank(); ++d) {
      int64_t c = type.shape[d];
      for (auto* operand : op.operands) c = gcd(c, info(operand).constancy[d]);
      r.constancy[d] = c;
    }
  return r;
}

}  // namespace tilejit::codegen
