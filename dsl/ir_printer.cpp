// The stable text form of the tile IR. Values are numbered in print order, so two traces
// of the same kernel print identically; parameters print by name.
#include <map>

#include "dsl/ir.h"

namespace tilejit::ir {
namespace {

std::string attr_str(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    // The shortest text that reads back as the same double: the IR text keys the kernel cache,
    // so two constants that round to different values of their dtype must print apart.
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(DType v) const { return std::string(dtype_name(v)); }
  };
  return std::visit(Visitor{}, value);
}

class Printer {
 public:
  std::string print(const Function& fn) {
    std::vector<std::string> params;
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Param& p = fn.params[i];
      names_[fn.body.args[i]] = "%" + p.name;
      std::string facts;
      if (p.facts.equals_one) facts += " {equals_one}";
      if (p.facts.divisibility > 1)
        facts += fmt::format(" {{{}_{}}}", p.type.pointer ? "aligned" : "divisible_by", p.facts.divisibility);
      params.push_back(fmt::format("%{}: {}{}", p.name, p.type.str(), facts));
    }
    std::vector<std::string> consts;
    for (auto& [name, value] : fn.constants) consts.push_back(fmt::format("{} = {}", name, value));
    out_ = fmt::format("kernel @{}({}) num_warps({}) num_stages({})", fn.name, fmt::join(params, ", "),
                       fn.num_warps, fn.num_stages);
    if (fn.warp_specialize) out_ += " warp_specialize";
    if (fn.pingpong) out_ += " pingpong";
    if (fn.cluster_ctas() > 1) out_ += fmt::format(" cluster({}, {}, {})", fn.cluster[0], fn.cluster[1], fn.cluster[2]);
    if (!consts.empty()) out_ += fmt::format(" constants {{{}}}", fmt::join(consts, ", "));
    out_ += " {\n";
    print_block(fn.body, 1);
    out_ += "}\n";
    return out_;
  }

 private:
  std::string name(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_[v] = fmt::format("%{}", next_id_++);
  }

  void print_block(const Block& block, int depth) {
    for (auto& op : block.ops) print_op(*op, depth);
  }

  void print_op(const Op& op, int depth) {
    std::string indent(2 * depth, ' ');
    std::vector<std::string> results, operands, attrs, types;
    for (auto* r : op.results) results.push_back(name(r));
    for (auto* o : op.operands) operands.push_back(name(o));
    for (auto& [key, value] : op.attrs) attrs.push_back(fmt::format("{} = {}", key, attr_str(value)));
    for (auto* r : op.results) types.push_back(r->type.str());
    std::string line = indent;
    if (!results.empty()) line += fmt::format("{} = ", fmt::join(results, ", "));
    line += op_name(op.kind);
    if (!operands.empty()) line += " " + fmt::format("{}", fmt::join(operands, ", "));
    if (!attrs.empty()) line += fmt::format(" {{{}}}", fmt::join(attrs, ", "));
    if (!types.empty()) line += fmt::format(" : {}", fmt::join(types, ", "));
    if (op.regions.empty()) {
      out_ += line + "\n";
      return;
    }
    out_ += line + " {\n";
    for (size_t i = 0; i < op.regions.size(); ++i) {
      const Block& region = *op.regions[i];
      std::vector<std::string> args;
      for (auto* a : region.args) args.push_back(fmt::format("{}: {}", name(a), a->type.str()));
      out_ += fmt::format("{}^bb{}({}):\n", indent, i, fmt::join(args, ", "));
      print_block(region, depth + 1);
    }
    out_ += indent + "}\n";
  }

  std::map<const Value*, std::string> names_;
  int next_id_ = 0;
  std::string out_;
};

}  // namespace

std::string Function::str() const { return Printer().print(*this); }

}  // namespace tilejit::ir
