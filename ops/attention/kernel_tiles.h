// The DSL side of the attention kernels' common arguments (kernel_arguments.h): sizes, the
// per-batch sequence lengths, operand tiles, and the masked logits of a (query, key) tile,
// which every kernel computes the same way. The logits helper works in either orientation:
// the forward and dq kernels hold (queries, keys) tiles, the dk/dv kernel (keys, queries).
//
// Index conventions: t is a query row, s a key row (i32); rows t >= q_end or s >= kv_end are
// padding by the sequence lengths (kept by nothing), rows t >= T or s >= S are past the
// tensors (the tile's own padding).
//
// Head-dim chunks. An (R, H) operand or accumulator is held as column chunks of
// HEAD_CHUNK (a power of two of at least 16, one tensor-core k step): ceil(H / HEAD_CHUNK)
// tiles of (R, HEAD_CHUNK), the last one padded past H with zeros that are never stored. A
// product over the head dim (q · k^T) then sums one tensor-core dot per chunk, so an operand
// whose rows every warp needs whole (q in q · k^T is split among warps along keys, not along
// the head dim) never holds more than one chunk in its fragment layout: with head dims up to
// 256 that is what keeps such dots out of local memory.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dsl/kernel.h"
#include "ops/common/named_arguments.h"

namespace tilejit::ops::attention_detail {

// log2(e): softmax exponentials are exp2((x - max) * log2(e)).
inline constexpr double kLog2e = 1.4426950408889634;
// Rows whose largest logit is more than this above masked_logit give a masked key exactly
// zero weight in f32 (exp(-128) underflows), so blocks of masked keys can be skipped for them.
inline constexpr double kNegligibleGap = 128;

// (R, H) as (R, HEAD_CHUNK) column chunks.
using Chunks = std::vector<dsl::Tile>;

// Which bounds an attention kernel's logits are masked by, besides the band and the boolean
// mask. A kernel saves a select per logit where it needs none: the forward replaces the
// results of query rows t >= q_end, and knows when a block's keys are all below kv_end = S.
struct LogitBounds {
  bool queries = true;  // t < q_end
  bool keys = true;     // s < kv_end, and -inf for s >= S
};

class AttentionTiles {
 public:
  AttentionTiles(const NamedTiles& in, const dsl::Constants& c, DType dtype);

  const NamedTiles& in;
  DType dtype;                    // of q, k, v
  int64_t head_dim;               // H: the constant HEAD_DIM
  int64_t chunk;                  // HEAD_CHUNK
  int64_t chunks;                 // ceil(H / HEAD_CHUNK)
  bool overlap;                   // OVERLAP: products issued early (config.h)
  bool warp_specialize;           // warp_specialize: a producer warpgroup where possible (config.h)
  dsl::Tile T, S, N, G, scale;    // scalars
  // Whether the call's scale is positive and finite (it then comes as `positive_scale`): the
  // row max of q·k * scale is then that of q·k, times scale.
  bool positive_scale;
  float masked;                   // masked_logit(dtype)
  // Whether any mask can leave a whole block of keys masked for a block of queries (the
  // band or sequence lengths), so kernels may skip it.
  bool skips_blocks() const;

  // Sets the batch `b` (i32 scalar) the program works on: q_end = min(T, q_seqlens[b]) and
  // kv_end = min(S, kv_seqlens[b]) (T and S without sequence lengths).
  void select_batch(const dsl::Tile& b);
  dsl::Tile b, q_end, kv_end;

  // The program's query block in a grid over (batch, query head, block of `block_m` of a head's
  // `head_rows` query rows: T, or workspace_rows()), blocks fastest (programs that share a kv
  // head run together); selects the batch.
  struct QueryBlock {
    dsl::Tile head, kv_head;  // the query head and the kv head it reads
    dsl::Tile first, rows;    // the block's first row and its rows (BLOCK_M)
  };
  QueryBlock select_query_block(int64_t block_m, const dsl::Tile& head_rows);

  // The address of operand `name` at (b, row 0, `head_index`): an element pointer.
  dsl::Tile operand_base(const std::string& name, const dsl::Tile& head_index) const;
  // Rows `rows` (i32, (R)) of operand `name` at `base`; rows >= `limit` and head dims >= H
  // read 0.
  Chunks load_rows(const std::string& name, const dsl::Tile& base, const dsl::Tile& rows,
                   const dsl::Tile& limit) const;
  // Rows [first, first + count) of operand `name` at head `head` (i32 scalars); rows >=
  // `limit` and head dims >= H read 0. Through the operand's descriptor where it has one
  // (kernel_arguments.h), whose blocks hold zeros past the operand's own length: `limit` must
  // then be that length (S for k and v, T for the others).
  Chunks load_block(const std::string& name, const dsl::Tile& head, const dsl::Tile& first, int64_t count,
                    const dsl::Tile& limit) const;
  // Stores rows < `limit` of `value`, cast to the operand's dtype.
  void store_rows(const std::string& name, const dsl::Tile& base, const dsl::Tile& rows, const dsl::Tile& limit,
                  const Chunks& value) const;
  // Adds `value`, the transposes of rows `rows`' chunks ((HEAD_CHUNK, R) each), into the f32
  // operand `name` at `base` by atomic adds, rows < `limit` and head dims < H.
  void add_to_rows(const std::string& name, const dsl::Tile& base, const dsl::Tile& rows, const dsl::Tile& limit,
                   const Chunks& value) const;
  Chunks zero_rows(int64_t rows) const;  // f32 zeros (rows, H)
  // Element (b, n, 0) of the contiguous (B, N, T) f32 logsumexp.
  dsl::Tile lse_base(const dsl::Tile& n) const;
  // The backward's row statistics (launch.h): a head's rows there (T padded), and element
  // (b * N + n, stat, 0).
  enum class RowStat { base, offset, delta };
  dsl::Tile workspace_rows() const;
  dsl::Tile row_stat_base(RowStat stat, const dsl::Tile& n) const;

  struct Logits {
    dsl::Tile value;  // f32: the logits, masked_logit where masked, -inf for keys s >= S
    // i1: kept by every mask, and within T and S; none when nothing masks (LogitBounds).
    std::optional<dsl::Tile> keep;
    // Where set (a positive scale, no bias and nothing masked), `value` holds the raw products
    // and the logits are value * factor: the softmax takes the scale into the multiply-add of
    // its exponentials instead of a multiplication per logit.
    std::optional<dsl::Tile> factor;
  };
  // `qk`: the raw products q·k, f32 of shape (X, Y); `t` and `s`: i32 query and key
  // indices of shapes (X, 1) and (1, Y), or (1, Y) and (X, 1); `n`: the query head.
  Logits logits(const dsl::Tile& qk, const dsl::Tile& t, const dsl::Tile& s, const dsl::Tile& n,
                LogitBounds bounds = {}) const;

  // The backward pass's statistics of query rows `rows` (i32, (R)) of head `head`
  // (backward_kernels.h), shaped (R, 1) when `query_axis` is 0 and (1, R) when it is 1, to
  // broadcast against a (query, key) or (key, query) tile; rows >= T (below workspace_rows())
  // get weight 0.
  struct RowStats {
    dsl::Tile base, offset, delta;
    dsl::Tile weights(const Logits& logits) const;  // p = exp(logits - base) * 2^-offset
    // ds = p * (dp - delta) at kept logits, 0 at masked ones (a constant has no gradient).
    dsl::Tile logit_gradients(const Logits& logits, const dsl::Tile& p, const dsl::Tile& dp) const;
  };
  RowStats row_stats(const dsl::Tile& head, const dsl::Tile& rows, int query_axis) const;

  // Whether a row statistic (a row max or logsumexp) is within kNegligibleGap of
  // masked_logit: masked keys may carry weight for that row.
  dsl::Tile near_masked(const dsl::Tile& stat) const;

  // The blocks of `block_n` keys that query rows [t_first, t_first + block_m) can keep, and
  // the blocks of `block_m` queries that can keep a key of [s_first, s_first + block_n):
  // only the band and the sequence lengths are considered (first == end when there are none).
  std::pair<dsl::Tile, dsl::Tile> key_blocks(const dsl::Tile& t_first, int64_t block_m, int64_t block_n) const;
  std::pair<dsl::Tile, dsl::Tile> query_blocks(const dsl::Tile& s_first, int64_t block_n, int64_t block_m) const;

  // The kernels' products run on the tensor cores: f16 / bf16 operands, f32 ones in tf32x3
  // (see ops/attention.h); `a` is cast to q's dtype first. Accumulation in f32.
  // a (R, H) · b (C, H)^T: (R, C).
  dsl::Tile dot_heads(const Chunks& a, const Chunks& b) const;
  // p (R, X) · v (X, H) + acc (R, H).
  Chunks dot_rows(const dsl::Tile& p, const Chunks& v, const Chunks& acc) const;
  // k (X, H)^T · p (X, C): (H, C), as (HEAD_CHUNK, C) chunks.
  Chunks dot_transposed(const Chunks& k, const dsl::Tile& p) const;

 private:
  // The indices [lo, hi) within [0, limit) that some index of [first, end) reaches within
  // the band, `below` and `above` naming the band's bounds in that direction.
  std::pair<dsl::Tile, dsl::Tile> band_range(const dsl::Tile& first, const dsl::Tile& end, const char* below,
                                             const char* above, const dsl::Tile& limit) const;
  // The element pointers (R, HEAD_CHUNK) of chunk `i` of rows `rows`, and the mask of rows
  // below `limit` and head dims below H; with `transposed`, both (HEAD_CHUNK, R).
  std::pair<dsl::Tile, dsl::Tile> chunk_access(const std::string& name, const dsl::Tile& base, const dsl::Tile& rows,
                                               const dsl::Tile& limit, int64_t i, bool transposed = false) const;
};

// One block of the online softmax over rows of `logits` (X, Y): the running max m and sum l
// (X) after the block, the factor alpha rescaling what came before, and the weights p:
// exp(m_before - m) and exp(logits - m), computed as exp2(x * c - shift) with shift = m * c
// rounded (c = log2(e) but for masked rows, kernel_tiles.cpp), so but for a factor per row
// (2 to the rounding error of the shift), the same for every block, which cancels in acc / l.
// For logits of 2^31 or more in magnitude that factor can overflow or vanish.
struct SoftmaxStep {
  dsl::Tile m, l, alpha, p;
};
SoftmaxStep online_softmax(const AttentionTiles::Logits& logits, const dsl::Tile& m, const dsl::Tile& l);
// The running max and sum (`rows` each) before the first block. The max starts at the lowest
// finite f32, not -inf: a block whose logits are all -inf (a -inf bias) then gives p = 0 and
// alpha = 1 instead of exp(-inf - -inf) = NaN.
std::vector<dsl::Tile> online_softmax_start(int64_t rows);

// f(chunk) for every chunk.
Chunks map_chunks(const Chunks& x, const std::function<dsl::Tile(const dsl::Tile&)>& f);

// Whether any element of an i1 tile is set (an i1 scalar).
dsl::Tile any_set(const dsl::Tile& x);

// An attention kernel: `body` gets the AttentionTiles of its arguments and the constants
// BLOCK_M, BLOCK_N (HEAD_DIM and HEAD_CHUNK are read by AttentionTiles).
using AttentionBody = std::function<void(AttentionTiles& a, int64_t block_m, int64_t block_n)>;
dsl::Kernel define_attention_kernel(std::string name, DType dtype, std::vector<ir::Param> params,
                                    AttentionBody body);

// A loop over `length` blocks from `start` (wrapping around the block count), carrying
// `carried`: each_block or each_block_lagged.
using BlockRun = std::function<std::vector<dsl::Tile>(const dsl::Tile& start, const dsl::Tile& length,
                                                      std::vector<dsl::Tile> carried)>;

// Runs over blocks [first, end), then, when `more` (an i1 scalar) is true, over every other
// block of [0, count), carrying `carried` through both: the exact way to skip blocks whose
// contribution is zero unless `more` says otherwise. `more` is evaluated on the values carried
// out of the first range. The two ranges are two passes of one loop, so that the body is
// traced once; with `two_loops`, two loops one after the other, the first at the kernel's top
// level, where a producer warpgroup can run its copies (warp_specialize).
std::vector<dsl::Tile> for_blocks_then_rest(const std::pair<dsl::Tile, dsl::Tile>& blocks, const dsl::Tile& count,
                                            std::vector<dsl::Tile> carried, const BlockRun& run,
                                            const std::function<dsl::Tile(const std::vector<dsl::Tile>&)>& more,
                                            bool two_loops = false);

// body(block) for each block, one iteration each.
using BlockBody = std::function<std::vector<dsl::Tile>(dsl::Tile, std::vector<dsl::Tile>)>;
BlockRun each_block(const dsl::Tile& count, const BlockBody& body);

// For a body that finishes each block one iteration after starting it, so that the end of one
// block's work overlaps the start of the next one's (the forward's p · v runs on the tensor
// cores while the next block's softmax runs on the others, codegen/lowering/
// lower_dot_wgmma.cpp): n blocks take n + 1 iterations (none when n = 0). Iteration i starts
// `block` (i < n) and finishes `previous` (i > 0); either is `count`, past every block, when
// there is none, so that its keys are all masked.
struct LaggedStep {
  dsl::Tile block, previous;
};
using LaggedBody = std::function<std::vector<dsl::Tile>(const LaggedStep&, std::vector<dsl::Tile>)>;
BlockRun each_block_lagged(const dsl::Tile& count, const LaggedBody& body);

// Blocks [0, count) as one run of each_block or each_block_lagged (`lagged`) does them, in
// two loops: blocks [0, inner_count) by `inner`, the others by `edge`, which with `lagged`
// also finishes the last block `inner` started. A body for the inner blocks can then leave
// out what only the edge's need (the bound of the keys).
std::vector<dsl::Tile> each_block_in_two(const dsl::Tile& count, const dsl::Tile& inner_count, bool lagged,
                                         const LaggedBody& inner, const LaggedBody& edge,
                                         std::vector<dsl::Tile> carried);

}  // namespace tilejit::ops::attention_detail
