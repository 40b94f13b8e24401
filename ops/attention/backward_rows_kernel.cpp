// The first backward kernel: per query row, delta = sum_h dout * out (the softmax gradient's
// rowsum(p * dp), since out = p · v) and the statistics the other kernels recompute the
// softmax weights with, p = exp(logits - row_base) * 2^-row_offset.
//
// For ordinary rows the statistics are the forward's logsumexp and 0. A row whose
// logsumexp is within kNegligibleGap of masked_logit cannot use it: with masked_logit near
// -2.4e38 (bf16, f32), logsumexp = masked_logit + log(S) rounds to masked_logit in f32, and a
// fully masked row would get weight 1 instead of 1 / S for each key (for f16, the rounding
// of logsumexp near -45852 would still cost about 0.2%). Blocks holding such a row recompute
// its softmax max m and sum l over every key (the forward's online softmax without p · v)
// and keep them apart: row_base = m, row_offset = log2(l). Rows of ordinary size are exact
// either way; only blocks with such a row pay for the recomputation. Such a block also sets
// its head's flag in close_rows (an atomic max of 1: the same result in any order), which
// tells the dk / dv kernel that masked keys carry weight in that head.

#include <limits>

#include "ops/attention/backward_kernels.h"
#include "ops/attention/kernel_tiles.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

Kernel backward_rows_kernel(DType dtype, std::vector<ir::Param> params) {
  return define_attention_kernel(
      "attention_backward_rows", dtype, std::move(params), [](AttentionTiles& a, int64_t bm, int64_t bn) {
        // The grid covers the row statistics' padding: rows T <= t < workspace_rows() get weight 0.
        auto [head, kv_head, t0, rows] = a.select_query_block(bm, a.workspace_rows());  // rows: (BLOCK_M)
        Tile active = rows < a.q_end;
        // Rows t >= q_seqlens[b] have a constant zero output: their dout counts as 0.
        Chunks out = a.load_rows("out", a.operand_base("out", head), rows, a.q_end);     // (BLOCK_M, H)
        Chunks dout = a.load_rows("dout", a.operand_base("dout", head), rows, a.q_end);  // (BLOCK_M, H)
        Tile delta = zeros({bm}, DType::f32);
        for (size_t i = 0; i < out.size(); ++i)
          delta = delta + sum(cast(out[i], DType::f32) * cast(dout[i], DType::f32), 1);  // (BLOCK_M)

        Tile inside = rows < a.T;
        Tile lse = load(a.lse_base(head) + rows, inside, 0.0);  // (BLOCK_M)
        Tile close = active && a.near_masked(lse);
        Tile any_close = any_set(close);
        atomic_max(a.in["close_rows"] + (a.b * a.N + head), 1, any_close);
        auto stats = if_else(
            any_close,
            [&] {
              Chunks q = a.load_rows("q", a.operand_base("q", head), rows, a.T);
              Tile k_base = a.operand_base("k", kv_head);
              auto ml = for_range(
                  0, cdiv(a.S, bn), 1,
                  online_softmax_start(bm),
                  [&](Tile block, std::vector<Tile> carried) {
                    Tile keys = block * bn + arange(0, bn);                                  // (BLOCK_N)
                    Tile qk = a.dot_heads(q, a.load_rows("k", k_base, keys, a.S));         // (BLOCK_M, BLOCK_N)
                    AttentionTiles::Logits logits = a.logits(qk, expand_dims(rows, 1), expand_dims(keys, 0), head);
                    SoftmaxStep sm = online_softmax(logits, carried[0], carried[1]);
                    return std::vector<Tile>{sm.m, sm.l};
                  });
              return std::vector<Tile>{where(close, ml[0], lse), where(close, log2(ml[1]), 0.0)};
            },
            [&] { return std::vector<Tile>{lse, zeros({bm}, DType::f32)}; });

        using RowStat = AttentionTiles::RowStat;
        store(a.row_stat_base(RowStat::delta, head) + rows, delta);
        const double weightless = std::numeric_limits<double>::infinity();  // the row_base of rows past T
        store(a.row_stat_base(RowStat::base, head) + rows, where(inside, stats[0], weightless));
        store(a.row_stat_base(RowStat::offset, head) + rows, stats[1]);
      });
}

}  // namespace tilejit::ops::attention_detail
