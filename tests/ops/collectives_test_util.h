// Helpers for the collective tests: fresh random inputs per rank, outputs poisoned before the
// call, and references computed in long double straight from SEMANTICS.md's definitions, one
// multi-index at a time (no flat chunk arithmetic shared with the library). The checks run on
// any communicators, so the GPU tests use them too.
#pragma once

#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "ops/collectives.h"
#include "tests/emu/ops_test_util.h"

namespace tjcoll {

using namespace tjops;
using namespace tilejit::ops;

inline constexpr DType kCollectiveDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32};
// all_gather copies any dtype.
inline constexpr DType kGatherOnlyDTypes[] = {DType::i64, DType::i8, DType::i1, DType::f8e4m3, DType::f8e5m2,
                                              DType::e8m0};
inline constexpr ReduceOp kReduceOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::average};

// Options in one expression (designated initializers that leave members out warn under -Wextra).
inline ReduceScatterOptions scatter_options(int dim, bool tiled, RankGroups groups = {}, ReduceOp op = ReduceOp::sum) {
  return ReduceScatterOptions{dim, tiled, std::move(groups), op};
}
inline AllGatherOptions gather_options(int axis, bool tiled, RankGroups groups = {}) {
  return AllGatherOptions{axis, tiled, std::move(groups)};
}
inline AllReduceOptions reduce_options(ReduceOp op, RankGroups groups = {}) {
  return AllReduceOptions{op, std::move(groups)};
}
inline CommunicatorOptions timeout_of(std::chrono::milliseconds timeout) { return CommunicatorOptions{timeout}; }

// How the result is produced: a new tensor, a poisoned tensor given as out, or in place.
enum class Mode { allocate, into_out, in_place };
inline constexpr Mode kModes[] = {Mode::allocate, Mode::into_out, Mode::in_place};
inline const char* mode_name(Mode m) {
  return m == Mode::allocate ? "allocated" : m == Mode::into_out ? "into out" : "in place";
}

inline std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }
inline std::string groups_text(const RankGroups& groups) { return groups.empty() ? "none" : fmt::format("{}", groups); }

// The group lists a sweep covers for `world` ranks: none; every rank in one group in reverse
// order; groups of two whose positions are not sorted (SEMANTICS.md's [[0,2],[3,1]] for 4).
inline std::vector<RankGroups> groups_to_sweep(int world) {
  std::vector<RankGroups> all = {{}};
  std::vector<int> reversed(static_cast<size_t>(world));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  all.push_back({reversed});
  if (world % 2 == 0) {
    RankGroups pairs;
    for (int i = 0; i < world / 2; ++i)
      pairs.push_back(i % 2 ? std::vector<int>{i + world / 2, i} : std::vector<int>{i, i + world / 2});
    all.push_back(pairs);
  }
  return all;
}

// The members of `rank`'s group, in position order, and its position.
struct Place {
  std::vector<int> members;
  int position = 0;
};
inline Place place_of(int rank, const RankGroups& groups, int world) {
  if (groups.empty()) {
    Place p{std::vector<int>(static_cast<size_t>(world)), rank};
    std::iota(p.members.begin(), p.members.end(), 0);
    return p;
  }
  for (const auto& g : groups)
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == rank) return Place{g, static_cast<int>(i)};
  ADD_FAILURE() << "rank " << rank << " is in no group of " << groups_text(groups);
  return {};
}

inline int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}
inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}
inline int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + index[i];
  return flat;
}

inline Tensor to_device(Device& device, const Host& h, const std::vector<int64_t>& shape) {
  Tensor t = Tensor::empty(device, h.dtype, shape);
  t.copy_from_host(h.bytes.data(), h.bytes.size());
  return t;
}
inline Tensor poisoned_on(Device& device, DType dtype, const std::vector<int64_t>& shape) {
  Tensor t = Tensor::empty(device, dtype, shape);
  t.fill_bytes(0xff);  // NaN for floats, -1 for integers
  return t;
}

// Per rank: values that make sums, maxima and averages informative in every dtype that
// reduces; any bit pattern in the others.
inline std::vector<Host> random_inputs(int world, DType dtype, int64_t n, Rng& rng) {
  const bool reduces = std::find(std::begin(kCollectiveDTypes), std::end(kCollectiveDTypes), dtype) !=
                       std::end(kCollectiveDTypes);
  std::vector<Host> inputs;
  for (int r = 0; r < world; ++r)
    inputs.push_back(!reduces            ? random_full_range(dtype, static_cast<size_t>(n), rng)
                     : is_integer(dtype) ? random_host(dtype, static_cast<size_t>(n), rng, -1000, 1000)
                                         : random_host(dtype, static_cast<size_t>(n), rng, -4, 4));
  return inputs;
}

// The reduction of `values` as SEMANTICS.md defines it: exact (long double) for floats, the
// wrapped sum and a division truncating toward zero for i32.
inline LD reduce_reference(ReduceOp op, const std::vector<LD>& values, DType dtype) {
  LD acc = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (op == ReduceOp::max)
      acc = std::max(acc, values[i]);
    else if (op == ReduceOp::min)
      acc = std::min(acc, values[i]);
    else
      acc += values[i];
  }
  if (op != ReduceOp::average) return is_integer(dtype) ? round_to(dtype, acc) : acc;
  if (is_integer(dtype)) return std::trunc(round_to(dtype, acc) / static_cast<LD>(values.size()));
  return acc / static_cast<LD>(values.size());
}

// The error a result in `dtype` may have, relative to the sum of its terms' magnitudes: f32
// accumulation over up to 8 ranks, then one rounding to the dtype.
inline double reduction_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32: return 2e-6;
    case DType::f16: return 1e-3;
    case DType::bf16: return 8e-3;
    default: return 0;
  }
}

// Compares one rank's result with the reference values and the terms' magnitudes.
inline void expect_reduced(const std::string& what, const Host& got, const std::vector<LD>& want,
                           const std::vector<LD>& scale, DType dtype, ReduceOp op) {
  if (is_integer(dtype) || op == ReduceOp::max || op == ReduceOp::min)
    expect_values(what, got, want, exact());
  else
    expect_scaled(what + " [" + name_of(dtype) + "]", got.values(), want, scale, reduction_tolerance(dtype));
}

// The expected reduction of element `index` of the members' inputs, and the sum of its terms'
// magnitudes (divided like the terms for an average), which bounds its rounding error.
struct Expected {
  std::vector<LD> values, scales;
  void add(const std::vector<Host>& inputs, const std::vector<int>& members, int64_t index, ReduceOp op, DType dtype) {
    std::vector<LD> terms;
    LD magnitude = 0;
    for (int member : members) {
      terms.push_back(inputs[static_cast<size_t>(member)].get(static_cast<size_t>(index)));
      magnitude += std::fabs(terms.back());
    }
    values.push_back(reduce_reference(op, terms, dtype));
    scales.push_back(op == ReduceOp::average ? magnitude / static_cast<LD>(terms.size()) : magnitude);
  }
};

// Runs `produce` on every rank (it returns the rank's result) and returns each rank's result,
// read back once the rank's communicator has finished its work.
inline std::vector<Host> results_of(const std::vector<Communicator>& comms,
                                    const std::function<Tensor(Communicator&)>& produce) {
  std::vector<Host> results(comms.size());
  run_ranks(comms, [&](Communicator& comm) {
    Tensor y = produce(comm);
    comm.synchronize(comm.device().default_stream());
    results[static_cast<size_t>(comm.rank())] = download(y);
  });
  return results;
}

inline size_t normalized_axis(int axis, int rank) { return static_cast<size_t>(axis < 0 ? axis + rank : axis); }

// --- reduce_scatter -----------------------------------------------------------------------------

struct ReduceScatterCase {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  ReduceScatterOptions options;
  Mode mode = Mode::allocate;
  std::string describe() const {
    return fmt::format("reduce_scatter of {}{} over scatter_dimension {}, {}, {}, groups {}, {}", name_of(dtype),
                       shape_text(shape), options.scatter_dimension, options.tiled ? "tiled" : "untiled",
                       reduce_op_name(options.op), groups_text(options.groups), mode_name(mode));
  }
};

// The shape of a rank's result for a group of k, computed from the definition.
inline std::vector<int64_t> scattered_shape(const ReduceScatterCase& c, int64_t k) {
  std::vector<int64_t> shape = c.shape;
  const size_t d = normalized_axis(c.options.scatter_dimension, static_cast<int>(shape.size()));
  if (c.options.tiled)
    shape[d] /= k;
  else
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  return shape;
}

// Runs the case on every rank with fresh inputs and checks each rank's result.
inline void check_reduce_scatter(const std::vector<Communicator>& comms, const ReduceScatterCase& c, Rng& rng) {
  SCOPED_TRACE(c.describe());
  const int world = static_cast<int>(comms.size());
  const std::vector<Host> inputs = random_inputs(world, c.dtype, numel(c.shape), rng);
  const std::vector<Host> results = results_of(comms, [&](Communicator& comm) {
    Tensor x = to_device(comm.device(), inputs[static_cast<size_t>(comm.rank())], c.shape);
    const Place place = place_of(comm.rank(), c.options.groups, comm.size());
    const std::vector<int64_t> shape = scattered_shape(c, static_cast<int64_t>(place.members.size()));
    Tensor y = c.mode == Mode::into_out ? poisoned_on(comm.device(), c.dtype, shape) : x;
    if (c.mode == Mode::allocate)
      y = reduce_scatter(x, comm, c.options);
    else if (c.mode == Mode::in_place)
      y = reduce_scatter_in_place(x, comm, c.options);
    else
      reduce_scatter(x, y, comm, c.options);
    EXPECT_EQ(y.shape(), shape) << "rank " << comm.rank();
    return y;
  });
  const size_t d = normalized_axis(c.options.scatter_dimension, static_cast<int>(c.shape.size()));
  for (int r = 0; r < world; ++r) {
    const Place place = place_of(r, c.options.groups, world);
    const auto k = static_cast<int64_t>(place.members.size());
    const std::vector<int64_t> shape = scattered_shape(c, k);
    Expected expected;
    for (int64_t o = 0; o < numel(shape); ++o) {
      std::vector<int64_t> index = unravel(o, shape);
      if (c.options.tiled)
        index[d] += place.position * (c.shape[d] / k);
      else
        index.insert(index.begin() + static_cast<std::ptrdiff_t>(d), place.position);
      expected.add(inputs, place.members, ravel(index, c.shape), c.options.op, c.dtype);
    }
    expect_reduced(fmt::format("rank {}", r), results[static_cast<size_t>(r)], expected.values, expected.scales,
                   c.dtype, c.options.op);
  }
}

// --- all_gather ---------------------------------------------------------------------------------

struct AllGatherCase {
  std::vector<int64_t> shape;  // of each rank's x
  DType dtype = DType::f32;
  AllGatherOptions options;
  Mode mode = Mode::allocate;
  std::string describe() const {
    return fmt::format("all_gather of {}{} along axis {}, {}, groups {}, {}", name_of(dtype), shape_text(shape),
                       options.axis, options.tiled ? "tiled" : "untiled", groups_text(options.groups), mode_name(mode));
  }
};

// The gathered shape for a group of k, computed from the definition.
inline std::vector<int64_t> gathered_shape(const AllGatherCase& c, int64_t k) {
  std::vector<int64_t> shape = c.shape;
  const size_t a = normalized_axis(c.options.axis, static_cast<int>(shape.size()) + (c.options.tiled ? 0 : 1));
  if (c.options.tiled)
    shape[a] *= k;
  else
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(a), k);
  return shape;
}

// Every element must be a bit-exact copy of the right position's input element.
inline void check_all_gather(const std::vector<Communicator>& comms, const AllGatherCase& c, Rng& rng) {
  SCOPED_TRACE(c.describe());
  const int world = static_cast<int>(comms.size());
  const std::vector<Host> inputs = random_inputs(world, c.dtype, numel(c.shape), rng);
  const std::vector<Host> results = results_of(comms, [&](Communicator& comm) {
    const Host& mine = inputs[static_cast<size_t>(comm.rank())];
    const Place place = place_of(comm.rank(), c.options.groups, comm.size());
    const std::vector<int64_t> shape = gathered_shape(c, static_cast<int64_t>(place.members.size()));
    Tensor out = c.mode == Mode::allocate ? all_gather(to_device(comm.device(), mine, c.shape), comm, c.options)
                                          : poisoned_on(comm.device(), c.dtype, shape);
    if (c.mode == Mode::into_out) {
      all_gather(to_device(comm.device(), mine, c.shape), out, comm, c.options);
    } else if (c.mode == Mode::in_place) {
      out.view(c.shape, place.position * numel(c.shape)).copy_from_host(mine.bytes.data(), mine.bytes.size());
      all_gather_in_place(out, comm, c.options);
    }
    EXPECT_EQ(out.shape(), shape) << "rank " << comm.rank();
    return out;
  });
  const size_t a = normalized_axis(c.options.axis, static_cast<int>(c.shape.size()) + (c.options.tiled ? 0 : 1));
  for (int r = 0; r < world; ++r) {
    const Place place = place_of(r, c.options.groups, world);
    const std::vector<int64_t> shape = gathered_shape(c, static_cast<int64_t>(place.members.size()));
    const Host& got = results[static_cast<size_t>(r)];
    size_t wrong = 0;
    std::string first;
    for (int64_t o = 0; o < numel(shape); ++o) {
      std::vector<int64_t> index = unravel(o, shape);
      int64_t position;
      if (c.options.tiled) {
        position = index[a] / c.shape[a];
        index[a] %= c.shape[a];
      } else {
        position = index[a];
        index.erase(index.begin() + static_cast<std::ptrdiff_t>(a));
      }
      const Host& source = inputs[static_cast<size_t>(place.members[static_cast<size_t>(position)])];
      const auto from = static_cast<size_t>(ravel(index, c.shape));
      if (got.raw(static_cast<size_t>(o)) == source.raw(from)) continue;
      if (wrong++ == 0)
        first = fmt::format("element {} is 0x{:x}, but position {}'s element {} is 0x{:x}", o,
                            got.raw(static_cast<size_t>(o)), position, from, source.raw(from));
    }
    EXPECT_EQ(wrong, 0u) << "rank " << r << ": " << wrong << " of " << numel(shape) << " elements wrong; " << first;
  }
}

// --- all_reduce ---------------------------------------------------------------------------------

struct AllReduceCase {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  AllReduceOptions options;
  Mode mode = Mode::allocate;
  std::string describe() const {
    return fmt::format("all_reduce of {}{}, {}, groups {}, {}", name_of(dtype), shape_text(shape),
                       reduce_op_name(options.op), groups_text(options.groups), mode_name(mode));
  }
};

// With `inputs` given (one per rank), they are used instead of random ones.
inline void check_all_reduce(const std::vector<Communicator>& comms, const AllReduceCase& c, Rng& rng,
                             std::vector<Host> inputs = {}) {
  SCOPED_TRACE(c.describe());
  const int world = static_cast<int>(comms.size());
  if (inputs.empty()) inputs = random_inputs(world, c.dtype, numel(c.shape), rng);
  const std::vector<Host> results = results_of(comms, [&](Communicator& comm) {
    Tensor x = to_device(comm.device(), inputs[static_cast<size_t>(comm.rank())], c.shape);
    Tensor y = c.mode == Mode::into_out ? poisoned_on(comm.device(), c.dtype, c.shape) : x;
    if (c.mode == Mode::allocate)
      y = all_reduce(x, comm, c.options);
    else
      all_reduce(x, y, comm, c.options);  // in place: y is x
    return y;
  });
  for (int r = 0; r < world; ++r) {
    const Place place = place_of(r, c.options.groups, world);
    Expected expected;
    for (int64_t i = 0; i < numel(c.shape); ++i) expected.add(inputs, place.members, i, c.options.op, c.dtype);
    expect_reduced(fmt::format("rank {}", r), results[static_cast<size_t>(r)], expected.values, expected.scales,
                   c.dtype, c.options.op);
  }
}

// --- sweeps and rendezvous ----------------------------------------------------------------------

// The sweeps' parameters: 2, 4 or 8 ranks and a dtype.
struct WorldAndDType {
  int world;
  DType dtype;
};
inline void PrintTo(const WorldAndDType& p, std::ostream* os) { *os << p.world << " ranks, " << name_of(p.dtype); }
inline std::vector<WorldAndDType> worlds_and_dtypes() {
  std::vector<WorldAndDType> all;
  for (int world : {2, 4, 8})
    for (DType dtype : kCollectiveDTypes) all.push_back({world, dtype});
  return all;
}
inline std::string world_and_dtype_name(const ::testing::TestParamInfo<WorldAndDType>& info) {
  return fmt::format("ranks{}_{}", info.param.world, name_of(info.param.dtype));
}

// A TCP port nothing listens on right now, for rendezvous tests.
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tjcoll
