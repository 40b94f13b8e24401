// The fused attention forward kernel (flash attention with an online softmax). One program
// computes BLOCK_M query rows of one (batch, head): it keeps its q tile, the f32 output
// accumulator (BLOCK_M, H), the running row max m and row sum l in registers and streams
// the kv head's keys and values in blocks of BLOCK_N:
//
//   logits = masked(q · k_block^T * scale + bias)     (BLOCK_M, BLOCK_N), f32
//   m' = max(m, rowmax(logits));  p = exp(logits - m')
//   l  = l * exp(m - m') + rowsum(p);  acc = acc * exp(m - m') + p · v_block
//
// and writes acc / l (0 for rows t >= q_seqlens[b]) and, when asked, m + log(l).
//
// Skipping blocks exactly. Masked logits are the finite masked_logit, not -inf, so a block of
// keys that the band or the sequence lengths mask entirely still carries weight
// exp(masked_logit - m) per key. That weight is exactly 0 in f32 once a row's max is more
// than kNegligibleGap above masked_logit, which is the case for every row with one kept key
// of ordinary size. So the program first visits only the blocks its rows can keep (the key
// range of the band and lengths), then checks its active rows' maxima; if any row is still
// within the gap (a row with no kept key, or logits pushed down to masked_logit by a bias)
// it visits the remaining blocks too. The online softmax does not depend on the order of the
// blocks, so the result is the one of visiting every block. With warp_specialize the two
// visits are two loops: a producer warpgroup copies the first one's blocks (config.h), and
// the consumers copy the rest's themselves.
//
// Overlap (OVERLAP, config.h). Each iteration issues q · k for its block and p · v for the
// block before (each_block_lagged), then computes its softmax: on sm_90a the logits wait for
// q · k alone, and p · v runs on the tensor cores while the softmax runs, until the
// accumulator is rescaled at the end of the iteration (after the row sums: wait_after). acc then holds the blocks up to the previous one, scaled to this
// block's max: acc' = (acc + p_prev · v_prev) * alpha. The iteration after the last block
// computes an all-masked softmax (alpha = 1, p = 0) to finish the last p · v. Without
// OVERLAP each iteration does its own block: acc' = acc * alpha + p · v.
//
// Key bounds. Without skipping, the blocks below S / BLOCK_N, whose keys are all below S, run
// in a loop of their own whose logits take no select for the key bound; a last, partial
// block (and with OVERLAP the finishing iteration) runs in a second loop with it
// (each_block_in_two).
#include "ops/attention/forward_kernel.h"

#include <tuple>

#include "ops/attention/kernel_tiles.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

Kernel forward_kernel(DType dtype, std::vector<ir::Param> params) {
  return define_attention_kernel(
      "attention_forward", dtype, std::move(params), [](AttentionTiles& a, int64_t bm, int64_t bn) {
        auto [head, kv_head, t0, rows] = a.select_query_block(bm, a.T);  // rows: (BLOCK_M)
        Chunks q = a.load_rows("q", a.operand_base("q", head), rows, a.T);  // (BLOCK_M, H)

        // Carried: the row max m, the row sum l (BLOCK_M), with OVERLAP the previous block's
        // probabilities p (BLOCK_M, BLOCK_N) in q's dtype, then the accumulator's chunks (which
        // then hold every block before that one).
        const size_t acc_index = a.overlap ? 3 : 2;
        auto p_times_v = [&](const Tile& p, const Tile& block, Chunks acc) {
          return a.dot_rows(p, a.load_block("v", kv_head, block * bn, bn, a.S), acc);  // (BLOCK_M, H)
        };
        // The step of a block. `key_bound`: whether keys may reach past S (a last, partial block).
        // `loads_q`: q loaded in the step instead of once above, so that q's registers need not
        // live through an earlier loop (for the few iterations after one).
        auto step_with = [&](bool key_bound, bool loads_q) -> LaggedBody {
          return [&, key_bound, loads_q](const LaggedStep& s, std::vector<Tile> carried) {
            Tile keys = s.block * bn + arange(0, bn);  // (BLOCK_N)
            Chunks q_rows = loads_q ? a.load_rows("q", a.operand_base("q", head), rows, a.T) : q;
            Tile qk = a.dot_heads(q_rows, a.load_block("k", kv_head, s.block * bn, bn, a.S));  // (BLOCK_M, BLOCK_N)
            Chunks acc(carried.begin() + acc_index, carried.end());
            // The previous block's p · v runs on while this block's softmax is computed.
            if (a.overlap) acc = p_times_v(carried[2], s.previous, acc);
            // Rows past the query length need no mask: the epilogue replaces their results.
            AttentionTiles::Logits logits =
                a.logits(qk, expand_dims(rows, 1), expand_dims(keys, 0), head, {.queries = false, .keys = key_bound});
            SoftmaxStep sm = online_softmax(logits, carried[0], carried[1]);
            // The exponentials run while p · v does: the row sums need them all.
            if (a.overlap) acc = map_chunks(acc, [&](const Tile& x) { return wait_after(x, sm.l); });
            acc = map_chunks(acc, [&](const Tile& x) { return x * expand_dims(sm.alpha, 1); });
            if (!a.overlap) acc = p_times_v(sm.p, s.block, acc);
            std::vector<Tile> next = {sm.m, sm.l};
            if (a.overlap) next.push_back(cast(sm.p, a.dtype));
            next.insert(next.end(), acc.begin(), acc.end());
            return next;
          };
        };
        LaggedBody step = step_with(true, false);
        std::vector<Tile> init = online_softmax_start(bm);
        if (a.overlap) init.push_back(zeros({bm, bn}, a.dtype));
        Chunks zero = a.zero_rows(bm);
        init.insert(init.end(), zero.begin(), zero.end());
        Tile block_count = cdiv(a.S, bn);
        Tile active = rows < a.q_end;  // (BLOCK_M)
        std::vector<Tile> r;
        if (a.skips_blocks()) {
          BlockRun blocks = a.overlap ? each_block_lagged(block_count, step)
                                      : each_block(block_count, [&](Tile block, std::vector<Tile> carried) {
                                          return step(LaggedStep{block, block}, std::move(carried));
                                        });
          r = for_blocks_then_rest(a.key_blocks(t0, bm, bn), block_count, init, blocks,
                                   [&](const std::vector<Tile>& carried) {
                                     return any_set(active && a.near_masked(carried[0]));
                                   },
                                   /*two_loops=*/a.warp_specialize);
        } else {
          // Every key of the blocks below S / BLOCK_N is below S: those take no key bound.
          r = each_block_in_two(block_count, a.S / bn, a.overlap, step_with(false, false), step_with(true, true), init);
        }
        Tile m = r[0], l = r[1];
        Chunks out = map_chunks(Chunks(r.begin() + static_cast<std::ptrdiff_t>(acc_index), r.end()), [&](const Tile& acc) {
          return where(expand_dims(active, 1), acc / expand_dims(l, 1), 0.0);
        });
        a.store_rows("out", a.operand_base("out", head), rows, a.T, out);
        if (a.in.has("lse")) {
          // Rows t >= q_seqlens[b] keep no key: all S logits are masked_logit.
          Tile inactive_lse = a.masked + log(cast(a.S, DType::f32));
          store(a.lse_base(head) + rows, where(active, m + log(l), inactive_lse), rows < a.T);
        }
      });
}

NamedArguments forward_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                                 const Tensor& out, const Tensor* lse) {
  NamedArguments args = common_arguments(p);
  add_sequence_operand(args, "q", *p.q_in, p.q);
  for (auto [name, t, strides] : {std::tuple{"k", p.k_in, p.k}, std::tuple{"v", p.v_in, p.v}})
    add_sequence_blocks(args, name, *t, strides,
                        sequence_descriptor(p, *t, strides, p.kv_len, p.kv_heads, config.block_n,
                                            config.head_chunk_for(p.head_dim), device));
  add_sequence_operand(args, "out", out, contiguous_sequence_strides(p.q_shape()));
  if (lse) args.add("lse", *lse);
  return args;
}

}  // namespace tilejit::ops::attention_detail
