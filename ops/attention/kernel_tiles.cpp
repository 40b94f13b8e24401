// The DSL side of the attention kernels' common arguments (kernel_tiles.h).
#include "ops/attention/kernel_tiles.h"

#include <limits>

#include "ops/attention.h"
#include "ops/attention/launch.h"
#include "ops/common/op_kernels.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tile wide(const Tile& x) { return cast(x, DType::i64); }

// Block indices of a range of rows: [first / block, ceil(end / block)), empty when the
// range is.
std::pair<Tile, Tile> block_range(const std::pair<Tile, Tile>& rows, int64_t block) {
  Tile first = rows.first / block;
  return {first, where(rows.second > rows.first, cdiv(rows.second, block), first)};
}

}  // namespace

AttentionTiles::AttentionTiles(const NamedTiles& in_, const Constants& c, DType dtype_)
    : in(in_),
      dtype(dtype_),
      head_dim(c["HEAD_DIM"]),
      chunk(c["HEAD_CHUNK"]),
      chunks((head_dim + chunk - 1) / chunk),
      overlap(c["OVERLAP"] != 0),
      warp_specialize(c["warp_specialize"] != 0),
      T(in["T"]),
      S(in["S"]),
      N(in["N"]),
      G(in["G"]),
      scale(in.has("positive_scale") ? in["positive_scale"] : in["scale"]),
      positive_scale(in.has("positive_scale")),
      masked(masked_logit(dtype_)) {}

bool AttentionTiles::skips_blocks() const { return in.has("band_left") || in.has("q_seqlens") || in.has("kv_seqlens"); }

void AttentionTiles::select_batch(const Tile& batch) {
  b = batch;
  q_end = in.has("q_seqlens") ? minimum(T, load(in["q_seqlens"] + b)) : T;
  kv_end = in.has("kv_seqlens") ? minimum(S, load(in["kv_seqlens"] + b)) : S;
}

AttentionTiles::QueryBlock AttentionTiles::select_query_block(int64_t block_m, const Tile& head_rows) {
  Tile pid = program_id(0);
  Tile blocks = cdiv(head_rows, block_m);
  select_batch(pid / blocks / N);
  Tile first = pid % blocks * block_m, head = pid / blocks % N;
  return {head, head / G, first, first + arange(0, block_m)};
}

Tile AttentionTiles::operand_base(const std::string& name, const Tile& head_index) const {
  return in[name] + (wide(b) * in[name + "_batch"] + wide(head_index) * in[name + "_head"]);
}

std::pair<Tile, Tile> AttentionTiles::chunk_access(const std::string& name, const Tile& base, const Tile& rows,
                                                   const Tile& limit, int64_t i, bool transposed) const {
  const int64_t first = i * chunk;
  const int row_axis = transposed ? 0 : 1, col_axis = 1 - row_axis;
  Tile cols = arange(first, first + chunk);  // (HEAD_CHUNK)
  Tile ptrs = base + expand_dims(wide(rows) * in[name + "_seq"], row_axis) + expand_dims(cols, col_axis);
  Tile mask = expand_dims(rows < limit, row_axis);
  if (first + chunk > head_dim) mask = mask && expand_dims(cols < head_dim, col_axis);
  return {ptrs, mask};
}

Chunks AttentionTiles::load_rows(const std::string& name, const Tile& base, const Tile& rows,
                                 const Tile& limit) const {
  Chunks out;
  for (int64_t i = 0; i < chunks; ++i) {
    auto [ptrs, mask] = chunk_access(name, base, rows, limit, i);
    out.push_back(load(ptrs, mask));
  }
  return out;
}

Chunks AttentionTiles::load_block(const std::string& name, const Tile& head, const Tile& first, int64_t count,
                                  const Tile& limit) const {
  const Tile& operand = in[name];
  if (!operand.type().descriptor) return load_rows(name, operand_base(name, head), first + arange(0, count), limit);
  // Rows past the operand's own length read zeros: the keys' and values' S, the others' T.
  TJ_CHECK(limit.value() == (name == "k" || name == "v" ? S : T).value());
  TJ_CHECK(operand.type().block_tile() == (ir::Shape{count, chunk}));
  Chunks out;
  for (int64_t i = 0; i < chunks; ++i) out.push_back(desc_load(operand, {b, head, first, i * chunk}));
  return out;
}

void AttentionTiles::store_rows(const std::string& name, const Tile& base, const Tile& rows, const Tile& limit,
                                const Chunks& value) const {
  for (int64_t i = 0; i < chunks; ++i) {
    auto [ptrs, mask] = chunk_access(name, base, rows, limit, i);
    store(ptrs, cast(value[static_cast<size_t>(i)], base.dtype()), mask);
  }
}

void AttentionTiles::add_to_rows(const std::string& name, const Tile& base, const Tile& rows, const Tile& limit,
                                 const Chunks& value) const {
  for (int64_t i = 0; i < chunks; ++i) {
    auto [ptrs, mask] = chunk_access(name, base, rows, limit, i, true);
    atomic_add(ptrs, value[static_cast<size_t>(i)], mask);
  }
}

Chunks AttentionTiles::zero_rows(int64_t rows) const {
  return Chunks(static_cast<size_t>(chunks), zeros({rows, chunk}, DType::f32));
}

Tile AttentionTiles::lse_base(const Tile& n) const { return in["lse"] + wide(b * N + n) * wide(T); }

Tile AttentionTiles::workspace_rows() const { return cdiv(T, kWorkspaceRowsMultiple) * kWorkspaceRowsMultiple; }

Tile AttentionTiles::row_stat_base(RowStat stat, const Tile& n) const {
  return in["row_stats"] + wide((b * N + n) * 3 + static_cast<int>(stat)) * wide(workspace_rows());
}

AttentionTiles::Logits AttentionTiles::logits(const Tile& qk, const Tile& t, const Tile& s, const Tile& n,
                                              LogitBounds bounds) const {
  auto broadcast_tile = [&](const std::string& name) {  // bias or mask at (b, n, t, s)
    Tile base = in[name] + (wide(b) * in[name + "_batch"] + wide(n) * in[name + "_head"]);
    return load(base + wide(t) * in[name + "_query"] + wide(s) * in[name + "_key"], (t < T) && (s < S));
  };
  const bool masks = bounds.keys || bounds.queries || in.has("band_left") || in.has("mask");
  if (!masks && !in.has("bias") && positive_scale) return {qk, std::nullopt, scale};
  Tile x = qk * scale;
  if (in.has("bias")) x = x + cast(broadcast_tile("bias"), DType::f32);
  std::optional<Tile> keep;
  auto also_keep = [&](const Tile& kept) { keep = keep ? *keep && kept : kept; };
  if (bounds.keys) also_keep(s < kv_end);
  if (bounds.queries) also_keep(t < q_end);
  if (in.has("band_left")) {
    Tile diagonal = s - t;
    also_keep((diagonal >= -in["band_left"]) && (diagonal <= in["band_right"]));
  }
  if (in.has("mask")) also_keep(broadcast_tile("mask"));
  TJ_CHECK(keep.has_value() == masks);
  if (!keep) return {x, std::nullopt, std::nullopt};
  Tile dropped = bounds.keys ? where(s < S, scalar(masked, DType::f32), -kInf) : scalar(masked, DType::f32);
  return {where(*keep, x, dropped), keep, std::nullopt};
}

AttentionTiles::RowStats AttentionTiles::row_stats(const Tile& head, const Tile& rows, int query_axis) const {
  auto stat = [&](RowStat s) { return expand_dims(load(row_stat_base(s, head) + rows), 1 - query_axis); };
  return {stat(RowStat::base), stat(RowStat::offset), stat(RowStat::delta)};
}

Tile AttentionTiles::RowStats::weights(const Logits& logits) const {
  // (x - base) first: exact where x and base are both masked_logit, which offset * log2(e)
  // beside base * log2(e) would not be (with a factor nothing is masked).
  Tile above_base = logits.factor ? fma(logits.value, *logits.factor, -base) : logits.value - base;
  return exp2_flushing_subnormals(fma(above_base, kLog2e, -offset));
}

Tile AttentionTiles::RowStats::logit_gradients(const Logits& logits, const Tile& p, const Tile& dp) const {
  Tile ds = p * (dp - delta);
  return logits.keep ? where(*logits.keep, ds, 0.0) : ds;
}

Tile AttentionTiles::near_masked(const Tile& stat) const { return stat <= masked + kNegligibleGap; }

std::pair<Tile, Tile> AttentionTiles::band_range(const Tile& first, const Tile& end, const char* below,
                                                 const char* above, const Tile& limit) const {
  Tile lo = scalar(0, DType::i32), hi = limit;
  if (in.has("band_left")) {
    lo = maximum(first - in[below], 0);
    hi = minimum(hi, end + in[above]);
  }
  return {lo, where(end > first, maximum(hi, lo), lo)};
}

std::pair<Tile, Tile> AttentionTiles::key_blocks(const Tile& t_first, int64_t block_m, int64_t block_n) const {
  // Keys t - left <= s <= t + right for t in [t_first, t_end).
  return block_range(band_range(t_first, minimum(t_first + block_m, q_end), "band_left", "band_right", kv_end),
                     block_n);
}

std::pair<Tile, Tile> AttentionTiles::query_blocks(const Tile& s_first, int64_t block_n, int64_t block_m) const {
  // Queries s - right <= t <= s + left for s in [s_first, s_end).
  return block_range(band_range(s_first, minimum(s_first + block_n, kv_end), "band_right", "band_left", q_end),
                     block_m);
}

namespace {

Tile tensor_core_dot(DType dtype, const Tile& a, const Tile& b, const Tile& acc) {
  Precision precision = dtype == DType::f32 ? Precision::tf32x3 : Precision::tf32;
  return dsl::dot(cast(a, dtype), b, acc, precision);
}

}  // namespace

Tile AttentionTiles::dot_heads(const Chunks& a, const Chunks& b_) const {
  Tile acc = zeros({a[0].shape()[0], b_[0].shape()[0]}, DType::f32);
  for (size_t i = 0; i < a.size(); ++i) acc = tensor_core_dot(dtype, a[i], trans(b_[i]), acc);
  return acc;
}

Chunks AttentionTiles::dot_rows(const Tile& p, const Chunks& v, const Chunks& acc) const {
  Chunks out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(tensor_core_dot(dtype, p, v[i], acc[i]));
  return out;
}

Chunks AttentionTiles::dot_transposed(const Chunks& k, const Tile& p) const {
  Chunks out;
  for (const Tile& chunk : k)
    out.push_back(tensor_core_dot(dtype, trans(chunk), cast(p, dtype), zeros({chunk.shape()[1], p.shape()[1]}, DType::f32)));
  return out;
}

Chunks map_chunks(const Chunks& x, const std::function<Tile(const Tile&)>& f) {
  Chunks out;
  for (const Tile& t : x) out.push_back(f(t));
  return out;
}

namespace {

// The exponent scale c of rows whose max is `row_max` (X), and the shift row_max * c rounded:
// the weights are exp2(x * c - shift), one fused multiply-add per logit where (x - max) *
// log2(e) takes two. c = log2(e) while row_max * log2(e) is finite; a row whose max is 2^127
// or more in magnitude (a masked row: masked_logit is about -2.4e38) takes c = 2^-80, which
// maps a logit equal to the max to exp2(0) = 1 and every smaller one, at least ulp(max) =
// 2^104 below it, to exp2(-2^24 or less) = 0: exp(x - max) in f32 there too.
std::pair<Tile, Tile> exponent_scale_and_shift(const Tile& row_max) {
  Tile c = where(abs(row_max) < 0x1p127, scalar(kLog2e, DType::f32), 0x1p-80);
  return {c, row_max * c};
}

// exp2(x * c - shift) for the logits (X, Y) and their rows' c and shift (X); with a factor,
// fma(value, factor * c, -shift). Weights below 2^-126 (f32's smallest normal) are flushed to
// 0: a row's weights sum to about 1 or more, beside which those are nothing in f32.
Tile shifted_weights(const AttentionTiles::Logits& logits, const Tile& c, const Tile& shift) {
  Tile slope = logits.factor ? c * *logits.factor : c;
  return exp2_flushing_subnormals(fma(logits.value, expand_dims(slope, 1), expand_dims(-shift, 1)));
}

}  // namespace

SoftmaxStep online_softmax(const AttentionTiles::Logits& logits, const Tile& m, const Tile& l) {
  // With a positive factor, the largest logit is the largest product times it (exactly:
  // rounding is monotonic).
  Tile row_max = logits.factor ? max(logits.value, 1) * *logits.factor : max(logits.value, 1);
  Tile m_next = maximum(m, row_max);
  // The weights of a block are relative to 2^shift, whose rounding differs from row_max *
  // log2(e) by up to half an ulp of the shift: alpha moves the earlier blocks from their shift
  // to this one's, so that all of a row's weights share one (it cancels in acc / l).
  Tile shift_before = exponent_scale_and_shift(m).second;
  auto [c, shift] = exponent_scale_and_shift(m_next);
  Tile alpha = exp2_flushing_subnormals(shift_before - shift);
  Tile p = shifted_weights(logits, c, shift);
  return {m_next, l * alpha + sum(p, 1), alpha, p};
}

std::vector<Tile> online_softmax_start(int64_t rows) {
  return {full({rows}, std::numeric_limits<float>::lowest(), DType::f32), zeros({rows}, DType::f32)};
}

Tile any_set(const Tile& x) { return max(cast(x, DType::i32), 0) > 0; }

Kernel define_attention_kernel(std::string name, DType dtype, std::vector<ir::Param> params, AttentionBody body) {
  return define_op_kernel(std::move(name), params,
                          {{"BLOCK_M", 64}, {"BLOCK_N", 32}, {"HEAD_DIM", 64}, {"HEAD_CHUNK", 64}, {"OVERLAP", 0},
                           {"warp_specialize", 0}, {"pingpong", 0}},
                          [dtype, params, body](const Constants& c, std::span<const Tile> tiles) {
                            NamedTiles in(params, tiles);
                            AttentionTiles a(in, c, dtype);
                            body(a, c["BLOCK_M"], c["BLOCK_N"]);
                          });
}

namespace {

// The block `index` steps from `start`, wrapping around [0, count).
Tile wrapped_block(const Tile& start, const Tile& index, const Tile& count) {
  Tile block = start + index;
  return where(block < count, block, block - count);
}

}  // namespace

std::vector<Tile> for_blocks_then_rest(const std::pair<Tile, Tile>& blocks, const Tile& count,
                                       std::vector<Tile> carried, const BlockRun& run,
                                       const std::function<Tile(const std::vector<Tile>&)>& more, bool two_loops) {
  // Blocks [first, end), then, when `more` holds for what the first range carries out, the
  // other count - (end - first) blocks from `end` on, wrapping around.
  Tile first = minimum(blocks.first, count), end = minimum(blocks.second, count);  // 0 <= first <= end <= count
  auto rest = [&](const std::vector<Tile>& c) { return where(more(c), count - (end - first), 0); };
  if (two_loops) {
    std::vector<Tile> c = run(first, end - first, std::move(carried));
    Tile length = rest(c);
    return run(end, length, std::move(c));
  }
  return for_range(0, 2, 1, std::move(carried), [&](Tile pass, std::vector<Tile> c) {
    Tile start = where(pass == 0, first, end);
    Tile length = where(pass == 0, end - first, rest(c));
    return run(start, length, std::move(c));
  });
}

BlockRun each_block(const Tile& count, const BlockBody& body) {
  return [count, body](const Tile& start, const Tile& length, std::vector<Tile> carried) {
    return for_range(0, length, 1, std::move(carried),
                     [&](Tile i, std::vector<Tile> c) { return body(wrapped_block(start, i, count), std::move(c)); });
  };
}

std::vector<Tile> each_block_in_two(const Tile& count, const Tile& inner_count, bool lagged, const LaggedBody& inner,
                                    const LaggedBody& edge, std::vector<Tile> carried) {
  // Inner iteration i starts block i and, lagged, finishes block i - 1 (none at i = 0).
  carried = for_range(0, inner_count, 1, std::move(carried), [&](Tile i, std::vector<Tile> c) {
    return inner(LaggedStep{i, lagged ? where(i > 0, i - 1, count) : i}, std::move(c));
  });
  if (!lagged)
    return for_range(inner_count, count, 1, std::move(carried),
                     [&](Tile block, std::vector<Tile> c) { return edge(LaggedStep{block, block}, std::move(c)); });
  // Edge iteration i starts block inner_count + i (none past the last) and finishes the one
  // before it: the inner loop's last block first. One more iteration than blocks.
  Tile iterations = where(count > 0, count - inner_count + 1, 0);
  return for_range(0, iterations, 1, std::move(carried), [&](Tile i, std::vector<Tile> c) {
    Tile block = inner_count + i;
    return edge(LaggedStep{where(block < count, block, count), where(block > 0, block - 1, count)}, std::move(c));
  });
}

BlockRun each_block_lagged(const Tile& count, const LaggedBody& body) {
  return [count, body](const Tile& start, const Tile& length, std::vector<Tile> carried) {
    Tile iterations = where(length > 0, length + 1, 0);
    return for_range(0, iterations, 1, std::move(carried), [&](Tile i, std::vector<Tile> c) {
      LaggedStep step{where(i < length, wrapped_block(start, i, count), count),
                      where(i > 0, wrapped_block(start, i - 1, count), count)};
      return body(step, std::move(c));
    });
  };
}

}  // namespace tilejit::ops::attention_detail
