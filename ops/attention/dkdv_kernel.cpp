// The dk / dv backward kernel. One program owns BLOCK_N keys of one (batch, kv head): it
// keeps k, v and the f32 accumulators dk, dv (BLOCK_N, H) in registers and, for each
// query head of the kv head's group, streams blocks of BLOCK_M queries, working on the
// transposed tiles (keys, queries) so that no computed tile needs a transpose:
//
//   p^T  = exp(logits^T - row_base) * 2^-row_offset    (BLOCK_N, BLOCK_M)
//   dv  += p^T · dout
//   dp^T = v · dout^T;  ds^T = p^T * (dp^T - delta), 0 where masked
//   dk  += ds^T · q                                     (times scale at the end)
//
// Summing the group's heads in one program makes dk and dv deterministic for GQA / MQA
// without atomics.
//
// Given an f32 workspace dq_sum (the fused config, KernelConfig::fuse_dq), the program also
// adds each block's share of dq into it by atomic adds, transposed so that the product has
// the head dim as its rows (with HEAD_CHUNK 64 or more, a whole warpgroup's for wgmma, where
// the queries of a step may be as few as 16):
//
//   dq^T += k^T · ds^T                                  (H, BLOCK_M)
//
// Every (query, key) pair with a gradient lies in a block some program visits. The logits then
// keep their key bound without block skipping too: keys past S would mix into dq.
//
// Skipping blocks exactly. A masked logit passes no gradient, so dk only needs the query
// blocks that can keep one of the program's keys (the query range of the band and lengths).
// dv also receives p^T · dout at masked logits, which is exactly 0 unless a row's
// statistic is within kNegligibleGap of masked_logit (see backward_rows_kernel.cpp); when
// the head has such a row (its close_rows flag), the program visits the head's other query
// blocks too.
//
// Without skipping, the logits take no bounds: queries t >= T weigh 0 (their row_base is
// +inf), and keys s >= S give rows of dk and dv that are never stored (no product mixes rows
// of keys but dq's).
#include "ops/attention/backward_kernels.h"

#include <algorithm>
#include <optional>

#include "ops/attention/kernel_tiles.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

const char* dkdv_kernel_name(bool sums_dq) {
  return sums_dq ? "attention_backward_dkdv_dq" : "attention_backward_dkdv";
}

Kernel dkdv_kernel(DType dtype, std::vector<ir::Param> params) {
  const bool sums_dq =
      std::any_of(params.begin(), params.end(), [](const ir::Param& p) { return p.name == "dq_sum"; });
  return define_attention_kernel(
      dkdv_kernel_name(sums_dq), dtype, std::move(params),
      [sums_dq](AttentionTiles& a, int64_t bm, int64_t bn) {

        Tile pid = program_id(0);
        Tile key_blocks = cdiv(a.S, bn);
        Tile kv_heads = a.N / a.G;
        a.select_batch(pid / key_blocks / kv_heads);
        Tile kv_head = pid / key_blocks % kv_heads;
        Tile s0 = pid % key_blocks * bn;
        Tile keys = s0 + arange(0, bn);                                      // (BLOCK_N)
        Chunks k = a.load_rows("k", a.operand_base("k", kv_head), keys, a.S);  // (BLOCK_N, H)
        Chunks v = a.load_rows("v", a.operand_base("v", kv_head), keys, a.S);  // (BLOCK_N, H)
        const auto chunks = static_cast<std::ptrdiff_t>(a.chunks);
        Tile block_count = cdiv(a.T, bm);

        auto head_step = [&](Tile g, std::vector<Tile> grads) {
          Tile head = kv_head * a.G + g;
          // Carried: dk's chunks, then dv's.
          auto step_with = [&](LogitBounds bounds) -> BlockBody {
            return [&, bounds](Tile block, std::vector<Tile> carried) {
              Tile rows = block * bm + arange(0, bm);                                // (BLOCK_M)
              Chunks q = a.load_block("q", head, block * bm, bm, a.T);               // (BLOCK_M, H)
              Chunks dout = a.load_block("dout", head, block * bm, bm, a.q_end);     // (BLOCK_M, H)
              auto stats = a.row_stats(head, rows, 1);                               // (1, BLOCK_M)
              Tile kq = a.dot_heads(k, q);                                           // (BLOCK_N, BLOCK_M)
              // With OVERLAP, v · dout^T is issued now and runs on while the weights are computed.
              std::optional<Tile> dp;
              if (a.overlap) dp = a.dot_heads(v, dout);
              auto logits = a.logits(kq, expand_dims(rows, 0), expand_dims(keys, 1), head, bounds);
              Tile p = stats.weights(logits);                                        // (BLOCK_N, BLOCK_M)
              Chunks dv = a.dot_rows(p, dout, Chunks(carried.begin() + chunks, carried.end()));  // (BLOCK_N, H)
              Tile ds = stats.logit_gradients(logits, p, dp ? *dp : a.dot_heads(v, dout));  // (BLOCK_N, BLOCK_M)
              // dq's shares are issued before dk's product, which runs on while they are added.
              Chunks dq_shares = sums_dq ? a.dot_transposed(k, ds) : Chunks{};  // (H, BLOCK_M)
              Chunks dk = a.dot_rows(ds, q, Chunks(carried.begin(), carried.begin() + chunks));  // (BLOCK_N, H)
              if (sums_dq) a.add_to_rows("dq_sum", a.operand_base("dq_sum", head), rows, a.T, dq_shares);
              dk.insert(dk.end(), dv.begin(), dv.end());
              return dk;
            };
          };
          if (!a.skips_blocks())
            return for_range(0, block_count, 1, std::move(grads), step_with({.queries = false, .keys = sums_dq}));
          BlockBody step = step_with({});
          Tile close_rows = load(a.in["close_rows"] + (a.b * a.N + head)) > 0;
          return for_blocks_then_rest(a.query_blocks(s0, bn, bm), block_count, std::move(grads),
                                      each_block(block_count, step),
                                      [&](const std::vector<Tile>&) { return close_rows; });
        };
        Chunks zero = a.zero_rows(bn), init = a.zero_rows(bn);
        init.insert(init.end(), zero.begin(), zero.end());
        auto grads = for_range(0, a.G, 1, init, head_step);
        Chunks dk(grads.begin(), grads.begin() + chunks);
        a.store_rows("dk", a.operand_base("dk", kv_head), keys, a.S,
                     map_chunks(dk, [&](const Tile& x) { return x * a.scale; }));
        a.store_rows("dv", a.operand_base("dv", kv_head), keys, a.S, Chunks(grads.begin() + chunks, grads.end()));
      });
}

}  // namespace tilejit::ops::attention_detail
