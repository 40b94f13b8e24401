// The dq backward kernel. One program owns BLOCK_M query rows of one (batch, head), keeps q,
// dout, the row statistics and the f32 accumulator dq (BLOCK_M, H) in registers, and
// streams the kv head's keys and values in blocks of BLOCK_N:
//
//   p  = exp(logits - row_base) * 2^-row_offset;  dp = dout · v^T
//   ds = p * (dp - delta), 0 where masked;  dq += ds · k      (times scale at the end)
//
// A masked logit passes no gradient, so only the blocks of keys the rows can keep (the key
// range of the band and lengths) are visited; that skip is exact for every row.
//
// Without skipping, rows t >= T need no mask (their row_base of +inf weighs every key 0, and
// their dout is 0), and the blocks below S / BLOCK_N none for their keys: those run in a
// loop whose logits take no select, the last, partial block in a second (each_block_in_two;
// one loop with a producer warpgroup).
#include "ops/attention/backward_kernels.h"

#include <optional>

#include "ops/attention/kernel_tiles.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

Kernel dq_kernel(DType dtype, std::vector<ir::Param> params) {
  return define_attention_kernel(
      "attention_backward_dq", dtype, std::move(params), [](AttentionTiles& a, int64_t bm, int64_t bn) {
        auto [head, kv_head, t0, rows] = a.select_query_block(bm, a.T);  // rows: (BLOCK_M)
        Chunks q = a.load_rows("q", a.operand_base("q", head), rows, a.T);             // (BLOCK_M, H)
        Chunks dout = a.load_rows("dout", a.operand_base("dout", head), rows, a.q_end);  // (BLOCK_M, H)
        auto stats = a.row_stats(head, rows, 0);  // (BLOCK_M, 1)

        auto step_with = [&](LogitBounds bounds) -> LaggedBody {
          return [&, bounds](const LaggedStep& s, std::vector<Tile> dq) {
            Tile block = s.block;
            Tile keys = block * bn + arange(0, bn);                                    // (BLOCK_N)
            Chunks k = a.load_block("k", kv_head, block * bn, bn, a.S);               // (BLOCK_N, H)
            Chunks v = a.load_block("v", kv_head, block * bn, bn, a.S);               // (BLOCK_N, H)
            Tile qk = a.dot_heads(q, k);                                             // (BLOCK_M, BLOCK_N)
            // With OVERLAP, dout · v^T is issued now and runs on while the weights are computed.
            std::optional<Tile> dp;
            if (a.overlap) dp = a.dot_heads(dout, v);
            auto logits = a.logits(qk, expand_dims(rows, 1), expand_dims(keys, 0), head, bounds);
            Tile p = stats.weights(logits);                                          // (BLOCK_M, BLOCK_N)
            Tile ds = stats.logit_gradients(logits, p, dp ? *dp : a.dot_heads(dout, v));  // (BLOCK_M, BLOCK_N)
            return a.dot_rows(ds, k, dq);                                            // (BLOCK_M, H)
          };
        };
        Chunks dq;
        // With a producer warpgroup, the registers setmaxnreg gives the consumers hold one
        // loop's values without spills, not two loops'.
        if (a.skips_blocks() || a.warp_specialize) {
          auto [first, end] = a.skips_blocks() ? a.key_blocks(t0, bm, bn)
                                               : std::pair<Tile, Tile>{scalar(0, DType::i32), cdiv(a.S, bn)};
          LaggedBody step = step_with({});
          dq = for_range(first, end, 1, a.zero_rows(bm),
                         [&](Tile block, std::vector<Tile> c) { return step(LaggedStep{block, block}, std::move(c)); });
        } else {
          dq = each_block_in_two(cdiv(a.S, bn), a.S / bn, false, step_with({.queries = false, .keys = false}),
                                 step_with({.queries = false, .keys = true}), a.zero_rows(bm));
        }
        a.store_rows("dq", a.operand_base("dq", head), rows, a.T,
                     map_chunks(dq, [&](const Tile& x) { return x * a.scale; }));
      });
}

}  // namespace tilejit::ops::attention_detail
