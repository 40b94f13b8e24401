// The attention kernels' block-size heuristic (config.h): one table row per padded head dim
// (16, 32, 64, 128, 256) for 16-bit inputs and one for f32 (tf32x3).
//
// Registers bound the tiles. A program keeps its f32 accumulators ((BLOCK_M, H) for the
// forward and dq, two (BLOCK_N, H) for dk / dv), its resident operands and one (BLOCK_M,
// BLOCK_N) logits tile in registers, spread over num_warps * 32 threads; an operand of a
// product over the head dim is held one HEAD_CHUNK at a time in fragment layout. The rows
// below are the largest tiles that ptxas assembles without spills for sm_80 and sm_90a,
// with and without the band / sequence-length skipping (tests/ops/attention_sweep_test.cpp
// checks that; with every option at once, bias and mask tiles included, a few f32 and
// head-dim-256 kernels spill some bytes):
// - forward: up to 128 queries per program, so each K / V block is read for many rows;
//   fewer as H grows, and 32 keys per step (16 at H = 16 and 128, where sm_80 spilled at
//   32), which keeps the (BLOCK_M, BLOCK_N) logits small.
// - f32 runs tf32x3, whose split operands need about twice the registers of 16-bit ones:
//   smaller blocks, and head-dim chunks of 16 (32 in the forward and dq at H = 256); dq at
//   H = 32 takes 16 keys per step, as its row statistics are held where the logits' rows are
//   (codegen/lowering/load_layout.cpp).
// - the backward kernels over query blocks (rows, dq) share one row; dk / dv, which carries
//   two accumulators, takes smaller blocks.
// On sm_90 (wgmma), 16-bit inputs have tables of their own, which put 128 rows on 8 warps
// where the registers allow: each warpgroup owns 64 whole rows (row reductions are shuffles
// only, and no warpgroup splits a B operand along N inside a swizzle span, which sends a
// product back to mma.sync), and wgmma reads its operands from shared memory, leaving the
// registers to the accumulators and the logits. The forward and dq take the whole head dim as
// one chunk (wgmma's N), the forward 64 keys per step (128 at H = 64, as FlashAttention-2
// there: 0.7 of the loop's instructions per key; at H = 128 that spills when causal, and with
// a producer warpgroup; 32 at H = 256); dk / dv, with two accumulators, 128 keys per program
// and fewer queries per step as H grows. Two stages: the
// next blocks are copied into a shared-memory ring during a step instead of being stored to
// shared memory after each load, and ptxas needs fewer registers for it. The products overlap
// the softmax (config.h, overlap) except in the forward at H = 256, where the values that
// keeps live spill. dk / dv at H = 128 steps over 32 queries (214 registers, no spills) and dq
// over 64 keys (235, none): their products over the step's rows are wgmma's m64n32 and
// m64n64, which read fewer shared-memory bytes per multiply-add than m64n16 and m64n32 (an
// instruction reads its whole A for any N).
#include "ops/attention/config.h"

#include <algorithm>

namespace tilejit::ops::attention_detail {
namespace {

int table_row(int64_t head) {
  int row = 0;
  for (int64_t h = 16; h < head; h *= 2) ++row;
  return row;  // 0 for 16 ... 4 for 256
}

}  // namespace

int64_t KernelConfig::head_chunk_for(int64_t head_dim) const { return std::min(head_chunk, padded_head_dim(head_dim)); }

std::vector<std::pair<std::string, int64_t>> KernelConfig::constants(int64_t head_dim) const {
  return {{"BLOCK_M", block_m},
          {"BLOCK_N", block_n},
          {"HEAD_DIM", head_dim},
          {"HEAD_CHUNK", head_chunk_for(head_dim)},
          {"num_warps", num_warps},
          {"num_stages", num_stages},
          {"OVERLAP", overlap ? 1 : 0},
          {"warp_specialize", warp_specialize ? 1 : 0},
          {"pingpong", pingpong ? 1 : 0}};
}

int64_t padded_head_dim(int64_t head_dim) {
  int64_t p = 16;
  while (p < head_dim) p *= 2;
  return p;
}

AttentionConfigs choose_configs(DType dtype, int64_t head_dim, const DeviceInfo& device) {
  // {block_m, block_n, num_warps, head_chunk, num_stages} per padded head dim 16, 32, 64, 128,
  // 256; one stage, which never adds registers (two are the tuner's to choose).
  static const KernelConfig forward16[] = {
      {64, 16, 4, 16, 1}, {128, 32, 8, 32, 1}, {128, 32, 8, 64, 1}, {64, 16, 8, 32, 1}, {16, 32, 8, 64, 1}};
  static const KernelConfig query_blocks16[] = {
      {64, 64, 8, 64, 1}, {64, 64, 8, 64, 1}, {64, 64, 8, 64, 1}, {64, 32, 8, 32, 1}, {32, 32, 8, 64, 1}};
  static const KernelConfig dkdv16[] = {
      {64, 64, 8, 64, 1}, {64, 64, 8, 64, 1}, {32, 64, 8, 32, 1}, {32, 32, 8, 64, 1}, {16, 32, 8, 64, 1}};
  static const KernelConfig forward32[] = {
      {64, 32, 4, 16, 1}, {64, 32, 8, 16, 1}, {64, 32, 8, 16, 1}, {32, 32, 8, 16, 1}, {32, 16, 8, 32, 1}};
  static const KernelConfig query_blocks32[] = {
      {64, 32, 8, 16, 1}, {64, 16, 8, 16, 1}, {64, 32, 8, 16, 1}, {32, 32, 8, 16, 1}, {32, 16, 8, 32, 1}};
  static const KernelConfig dkdv32[] = {
      {32, 32, 8, 16, 1}, {32, 32, 8, 16, 1}, {16, 32, 8, 16, 1}, {16, 32, 8, 16, 1}, {16, 16, 8, 16, 1}};
  static const KernelConfig forward16_wgmma[] = {{128, 64, 8, 16, 2, true},
                                                 {128, 64, 8, 32, 2, true},
                                                 {128, 128, 8, 64, 2, true},
                                                 {128, 64, 8, 128, 2, true},
                                                 {128, 32, 8, 256, 2, false}};
  static const KernelConfig query_blocks16_wgmma[] = {{128, 64, 8, 16, 2, true},
                                                      {128, 64, 8, 32, 2, true},
                                                      {128, 64, 8, 64, 2, true},
                                                      {128, 64, 8, 128, 2, true},
                                                      {64, 32, 8, 256, 2, true}};
  static const KernelConfig dkdv16_wgmma[] = {{64, 128, 8, 16, 2, true},
                                              {64, 128, 8, 32, 2, true},
                                              {64, 128, 8, 64, 2, true},
                                              {32, 128, 8, 128, 2, true},
                                              {16, 64, 8, 128, 2, true}};
  const int row = table_row(padded_head_dim(head_dim));
  const bool wide = dtype == DType::f32, wgmma = !wide && device.cc_major == 9;
  AttentionConfigs c;
  c.forward = (wide ? forward32 : wgmma ? forward16_wgmma : forward16)[row];
  c.preprocess = c.dq = (wide ? query_blocks32 : wgmma ? query_blocks16_wgmma : query_blocks16)[row];
  c.dkdv = (wide ? dkdv32 : wgmma ? dkdv16_wgmma : dkdv16)[row];
  return c;
}

}  // namespace tilejit::ops::attention_detail
