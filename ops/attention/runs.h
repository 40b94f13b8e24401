// `tilejit run attention` and `tilejit run attention_backward` (ops/library_runs.h).
#pragma once

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

// Dimensions B, T, S, N, K, H and CAUSAL (0 by default; --set CAUSAL=1 for the top-left
// causal mask): bf16 q (B, T, N, H), k and v (B, S, K, H) (host_values.h's random elements).
// The forward run times the fused kernel with the config a call would run (tuned or heuristic,
// tuning.h) into outputs made once and reports 4 * B * N * T * S * H flops per
// call, halved when causal. The check (double precision) covers up to 32 query rows of up to
// 4 (batch, head) pairs, logsumexp included.
ExampleRun run_attention(Device& device, const ExampleOptions& options);

// The same problem through the backward kernels with the configs a call would run (the forward
// runs once, untimed): 2.5 times
// the forward's flops, as flash-attention benchmarks count it (five products of the forward's
// two). The check covers dq for up to 32 query rows and dk, dv for up to 32 keys, of up to
// two (batch, kv head) pairs.
ExampleRun run_attention_backward(Device& device, const ExampleOptions& options);

}  // namespace tilejit::ops
