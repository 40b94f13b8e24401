#include "dsl/kernel.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "dsl/trace.h"
#include "dsl/verifier.h"

namespace tilejit::dsl {
namespace {

// An ASCII letter or '_', then letters, digits and '_' (whatever the locale).
bool is_identifier(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !name.empty() && letter(name[0]) && std::all_of(name.begin(), name.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

}  // namespace

int64_t Constants::operator[](std::string_view name) const {
  for (auto& [key, value] : values)
    if (key == name) return value;
  fail("kernel constant '{}' is not declared", name);
}

bool Constants::has(std::string_view name) const {
  for (auto& [key, value] : values)
    if (key == name) return true;
  return false;
}

Kernel::Kernel(std::string name, std::vector<ir::Param> params, std::vector<ConstantDecl> constants, Body body,
               BodyOrigin origin)
    : name_(std::move(name)),
      params_(std::move(params)),
      constants_(std::move(constants)),
      body_(std::move(body)),
      origin_(std::move(origin)) {
  // The IR text names parameters and constants by these names, and it is what the kernel
  // caches key on: two kernels whose names collide there would share a compiled image.
  std::set<std::string_view> seen;
  for (auto& p : params_) {
    if (!is_identifier(p.name)) fail("kernel {}: parameter name '{}' is not an identifier", name_, p.name);
    if (!seen.insert(p.name).second) fail("kernel {}: two parameters are named '{}'", name_, p.name);
    if (p.type.is_tile()) fail("kernel {}: parameter '{}' must be a scalar or a pointer", name_, p.name);
  }
  seen.clear();
  for (auto& c : constants_) {
    if (!is_identifier(c.name)) fail("kernel {}: constant name '{}' is not an identifier", name_, c.name);
    if (!seen.insert(c.name).second) fail("kernel {}: the constant '{}' is declared twice", name_, c.name);
  }
  auto declare_default = [&](const char* key, int64_t value) {
    for (auto& c : constants_)
      if (c.name == key) return;
    constants_.push_back({key, value});
  };
  declare_default("num_warps", 4);
  declare_default("num_stages", 1);
}

const std::string& Kernel::captures() const {
  static const std::string unknown;
  return origin_.captures ? *origin_.captures : unknown;
}

Constants Kernel::constants(const std::vector<std::pair<std::string, int64_t>>& overrides) const {
  Constants result;
  for (auto& c : constants_) result.values.emplace_back(c.name, c.default_value);
  for (auto& [key, value] : overrides) {
    bool found = false;
    for (auto& [name, v] : result.values)
      if (name == key) {
        v = value;
        found = true;
      }
    if (!found) {
      std::vector<std::string> names;
      for (auto& c : constants_) names.push_back(c.name);
      fail("kernel {}: unknown constant '{}' (declared: {})", name_, key, fmt::join(names, ", "));
    }
  }
  return result;
}

std::vector<ir::ArgFacts> Kernel::aligned_facts() const {
  std::vector<ir::ArgFacts> facts;
  for (auto& p : params_) {
    ir::ArgFacts f;
    if (!p.type.descriptor && (p.type.pointer || is_integer(p.type.dtype))) f.divisibility = ir::kMaxArgDivisibility;
    facts.push_back(f);
  }
  return facts;
}

std::unique_ptr<ir::Function> Kernel::trace(const Constants& constants,
                                            const std::vector<ir::ArgFacts>& facts) const {
  if (!facts.empty() && facts.size() != params_.size())
    fail("kernel {}: {} specialization facts for {} parameters", name_, facts.size(), params_.size());
  auto fn = std::make_unique<ir::Function>();
  detail::TraceState state{fn.get(), &fn->body};
  detail::TraceGuard guard(state);  // from here: the arguments' tiles belong to this trace
  fn->name = name_;
  fn->params = params_;
  fn->constants = constants.values;
  const int64_t nw = constants["num_warps"], stages = constants["num_stages"];
  if (nw < 1 || nw > 32 || (nw & (nw - 1)))
    fail("kernel {}: num_warps must be a power of two in [1, 32], got {}", name_, nw);
  if (stages < 1 || stages > ir::kMaxStages)
    fail("kernel {}: num_stages must be in [1, {}], got {}", name_, ir::kMaxStages, stages);
  fn->num_warps = static_cast<int>(nw);
  fn->num_stages = static_cast<int>(stages);
  for (auto [name, flag] : {std::pair{"warp_specialize", &fn->warp_specialize}, std::pair{"pingpong", &fn->pingpong}}) {
    if (!constants.has(name)) continue;
    int64_t value = constants[name];
    if (value != 0 && value != 1) fail("kernel {}: {} must be 0 or 1, got {}", name_, name, value);
    *flag = value == 1;
  }
  for (int axis = 0; axis < 3; ++axis) {
    std::string name = std::string("cluster_") + "xyz"[axis];
    if (!constants.has(name)) continue;
    int64_t ctas = constants[name];
    if (ctas < 1 || ctas > ir::kMaxClusterCtas) fail("kernel {}: {} must be in [1, {}], got {}", name_, name, ir::kMaxClusterCtas, ctas);
    fn->cluster[static_cast<size_t>(axis)] = static_cast<int>(ctas);
  }
  if (fn->cluster_ctas() > ir::kMaxClusterCtas)
    fail("kernel {}: a cluster of {} x {} x {} CTAs exceeds the portable {}", name_, fn->cluster[0], fn->cluster[1],
         fn->cluster[2], ir::kMaxClusterCtas);

  std::vector<Tile> args;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!facts.empty()) fn->params[i].facts = facts[i];
    ir::Param& p = fn->params[i];
    int64_t divisibility = p.facts.divisibility;
    if (divisibility < 1 || divisibility > ir::kMaxArgDivisibility || (divisibility & (divisibility - 1)))
      fail("kernel {}: parameter '{}': divisibility {} is not a power of two from 1 to {}", name_, p.name, divisibility,
           ir::kMaxArgDivisibility);
    if (p.type.descriptor) {
      if (p.facts.block.size() < 2)
        fail("kernel {}: descriptor parameter '{}' needs its block shape (1 along each dim before the rows, then "
             "rows, columns), which the launch's TensorDescriptor gives; got [{}]",
             name_, p.name, ir::shape_str(p.facts.block));
      if (std::string problem = ir::descriptor_block_problem(p.type.dtype, p.facts.block); !problem.empty())
        fail("kernel {}: descriptor parameter '{}': {}", name_, p.name, problem);
      p.type.shape = p.facts.block;
    }
    ir::Value* v = fn->new_value(p.type, &fn->body, nullptr);
    v->name = params_[i].name;
    fn->body.args.push_back(v);
    args.emplace_back(v);
  }
  body_(constants, args);
  verify(*fn);
  return fn;
}

}  // namespace tilejit::dsl
