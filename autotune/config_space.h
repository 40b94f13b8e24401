// A kernel's configuration space, declared next to the kernel: each tunable constant with its
// candidate values (num_warps and num_stages are constants too), and the constraints a
// configuration must meet for a problem shape to run at all (a tile that must divide a
// dimension because the kernel has no masks, a block that must hold a whole row). Configs
// that break a constraint are pruned before anything is compiled.
//
//   ConfigSpace space;
//   space.add("BLOCK_M", {32, 64, 128}).add("num_warps", {2, 4, 8})
//        .require_divides("BLOCK_M", "M")
//        .require("BLOCK_N >= N", [](const Config& c, const ProblemShape& s) { return c["BLOCK_N"] >= s["N"]; });
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autotune/named_values.h"

namespace tilejit::autotune {

class ConfigSpace {
 public:
  using Predicate = std::function<bool(const Config&, const ProblemShape&)>;

  // A constant and the values to try, in the order they are listed.
  ConfigSpace& add(std::string constant, std::vector<int64_t> candidates);
  // A constraint; `description` says it for people ("BLOCK_N >= cols").
  ConfigSpace& require(std::string description, Predicate holds);
  // Shape dimension `dim` must be a multiple of `constant` (for kernels without masks).
  ConfigSpace& require_divides(const std::string& constant, const std::string& dim);

  // Every combination of candidates (the first constant varies slowest).
  std::vector<Config> configs() const;
  size_t size() const;
  // The first constraint `config` breaks for `shape`, as its description; nullopt if none.
  std::optional<std::string> violated(const Config& config, const ProblemShape& shape) const;
  // The constants the space varies, in declaration order.
  std::vector<std::string> constants() const;

 private:
  struct Constraint {
    std::string description;
    Predicate holds;
  };
  std::vector<std::pair<std::string, std::vector<int64_t>>> parameters_;
  std::vector<Constraint> constraints_;
};

}  // namespace tilejit::autotune
