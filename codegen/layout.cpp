#include "codegen/layout.h"

#include <map>

namespace tilejit::codegen {
namespace {

int log2_exact(int64_t v) {
  TJ_CHECK(v > 0 && (v & (v - 1)) == 0);
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

Coord unit(int rank, int dim, int64_t value) {
  Coord c(rank, 0);
  c[dim] = value;
  return c;
}

bool is_zero(const Coord& c) {
  for (auto v : c)
    if (v) return false;
  return true;
}

template <typename F>
LinearLayout map_bases(const LinearLayout& in, ir::Shape shape, F&& fn) {
  LinearLayout out;
  out.shape = std::move(shape);
  for (auto& b : in.reg) out.reg.push_back(fn(b));
  for (auto& b : in.lane) out.lane.push_back(fn(b));
  for (auto& b : in.warp) out.warp.push_back(fn(b));
  return out;
}

std::string bases_str(const std::vector<Coord>& bases) {
  std::vector<std::string> s;
  for (auto& b : bases) s.push_back(fmt::format("({})", fmt::join(b, ",")));
  return fmt::format("[{}]", fmt::join(s, " "));
}

}  // namespace

LinearLayout LinearLayout::blocked(const ir::Shape& shape, int num_warps, int vec, int rows) {
  int rank = static_cast<int>(shape.size());
  LinearLayout l;
  l.shape = shape;
  // Bits still to place, per dim, fastest (last) dim first.
  std::vector<int> left(rank), placed(rank, 0);
  for (int d = 0; d < rank; ++d) left[d] = log2_exact(shape[d]);
  auto take = [&](std::vector<Coord>& bases, int count, int only_dim) {
    for (int i = 0; i < count; ++i) {
      int dim = -1;
      for (int d = rank - 1; d >= 0 && dim < 0; --d)
        if (left[d] > 0 && (only_dim < 0 || d == only_dim)) dim = d;
      if (dim < 0) {
        bases.push_back(Coord(rank, 0));
        continue;
      }
      bases.push_back(unit(rank, dim, int64_t{1} << placed[dim]));
      ++placed[dim];
      --left[dim];
    }
  };
  int vec_bits = rank ? std::min(log2_exact(vec), left[rank - 1]) : 0;
  take(l.reg, vec_bits, rank - 1);
  if (rank >= 2) take(l.reg, std::min(log2_exact(rows), left[rank - 2]), rank - 2);
  take(l.lane, 5, -1);
  take(l.warp, log2_exact(num_warps), -1);
  int rest = 0;
  for (int d = 0; d < rank; ++d) rest += left[d];
  take(l.reg, rest, -1);
  return l;
}

Coord LinearLayout::apply(int64_t r, int64_t l, int64_t w) const {
  Coord c(rank(), 0);
  auto add = [&](const std::vector<Coord>& bases, int64_t bits) {
    for (size_t i = 0; i < bases.size(); ++i)
      if (bits >> i & 1)
        for (int d = 0; d < rank(); ++d) c[d] ^= bases[i][d];
  };
  add(reg, r);
  add(lane, l);
  add(warp, w);
  return c;
}

LinearLayout LinearLayout::squash(const std::vector<int>& dims) const {
  ir::Shape s = shape;
  for (int d : dims) s[d] = 1;
  return map_bases(*this, s, [&](Coord b) {
    for (int d : dims) b[d] = 0;
    return b;
  });
}

LinearLayout LinearLayout::remove_dim(int dim) const {
  ir::Shape s = shape;
  s.erase(s.begin() + dim);
  return map_bases(*this, s, [&](Coord b) {
    b.erase(b.begin() + dim);
    return b;
  });
}

LinearLayout LinearLayout::insert_dim(int dim) const {
  ir::Shape s = shape;
  s.insert(s.begin() + dim, 1);
  return map_bases(*this, s, [&](Coord b) {
    b.insert(b.begin() + dim, 0);
    return b;
  });
}

LinearLayout LinearLayout::permute(const std::vector<int64_t>& perm) const {
  ir::Shape s(rank());
  for (int i = 0; i < rank(); ++i) s[i] = shape[perm[i]];
  return map_bases(*this, s, [&](const Coord& b) {
    Coord out(b.size());
    for (size_t i = 0; i < b.size(); ++i) out[i] = b[perm[i]];
    return out;
  });
}

int64_t linear_index(const ir::Shape& shape, const Coord& c) {
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d) index = index * shape[d] + c[d];
  return index;
}

LinearLayout LinearLayout::reshape(const ir::Shape& new_shape) const {
  // Row-major flattening of power-of-two dims concatenates coordinate bits, so it is linear.
  return map_bases(*this, new_shape, [&](const Coord& b) {
    int64_t index = linear_index(shape, b);
    Coord out(new_shape.size());
    for (int d = static_cast<int>(new_shape.size()) - 1; d >= 0; --d) {
      out[d] = index % new_shape[d];
      index /= new_shape[d];
    }
    return out;
  });
}

LinearLayout LinearLayout::project(const std::vector<int>& dims) const {
  return map_bases(*this, shape, [&](const Coord& b) {
    Coord out(b.size(), 0);
    for (int d : dims) out[d] = b[d];
    return out;
  });
}

uint32_t LinearLayout::replicated_lane_mask() const {
  uint32_t mask = 0;
  for (size_t i = 0; i < lane.size(); ++i)
    if (is_zero(lane[i])) mask |= 1u << i;
  return mask;
}

uint32_t LinearLayout::replicated_warp_mask() const {
  uint32_t mask = 0;
  for (size_t i = 0; i < warp.size(); ++i)
    if (is_zero(warp[i])) mask |= 1u << i;
  return mask;
}

std::vector<bool> LinearLayout::duplicate_registers() const {
  std::vector<bool> dup(num_regs());
  std::map<Coord, int> seen;
  for (int r = 0; r < num_regs(); ++r) dup[r] = !seen.emplace(reg_coord(r), r).second;
  return dup;
}

std::string LinearLayout::str() const {
  return fmt::format("layout<{}> reg={} lane={} warp={}", ir::shape_str(shape), bases_str(reg), bases_str(lane),
                     bases_str(warp));
}

std::optional<std::vector<int>> register_map(const LinearLayout& from, const LinearLayout& to) {
  TJ_CHECK(from.shape == to.shape);
  // With equal lane and warp bases, both layouts add the same per-thread offset, so
  // register r of `to` is the register of `from` with the same register coordinate.
  if (from.lane != to.lane || from.warp != to.warp) return std::nullopt;
  std::map<Coord, int> held;
  for (int r = from.num_regs() - 1; r >= 0; --r) held[from.reg_coord(r)] = r;
  std::vector<int> map(to.num_regs());
  for (int r = 0; r < to.num_regs(); ++r) {
    auto it = held.find(to.reg_coord(r));
    if (it == held.end()) return std::nullopt;
    map[r] = it->second;
  }
  return map;
}

}  // namespace tilejit::codegen
