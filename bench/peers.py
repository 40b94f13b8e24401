#!/usr/bin/env python3
"""tilejit's attention and scaled_dot against their Python peers, timed in one run on one GPU.

Peers: PyTorch's scaled_dot_product_attention (each backend that runs: flash, cuDNN, memory
efficient), jax.nn.dot_product_attention (xla and cudnn) and jax.lax.scaled_dot. tilejit runs
through `tilejit run OP --device cuda`, which times its kernels alone and checks them against a
double-precision reference on sampled rows: attention twice, with the heuristic config an untuned
shape runs and tuned on its first call (TILEJIT_AUTOTUNE=1). Every timing is the median of repeats after warm-up
on random inputs; a backward time is the forward-plus-backward time minus the forward's (tilejit
times its backward kernels alone). A peer that cannot run here (not installed, no GPU backend,
an API this version lacks) is reported as unavailable with the reason, never dropped silently.

    python3 bench/peers.py --tilejit .device/bin/tilejit [--json results.json]

--small runs tiny problems on whatever device is there (tilejit on the emulator), to check the
harness itself.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPEATS = 20
# JAX would take 75% of the GPU's memory at its first call, leaving too little for the peers
# measured after it and for tilejit's processes.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def attention_problem(small):
    # 16k tokens, 16 heads of 128: the flash-attention benchmarks' long-sequence point.
    return dict(B=1, T=64, S=64, N=2, K=2, H=64) if small else dict(B=1, T=16384, S=16384, N=16, K=16, H=128)


def scaled_dot_problem(small):
    return dict(B=1, M=64, N=64, K=128, BLOCK=32) if small else dict(B=1, M=8192, N=8192, K=8192, BLOCK=32)


def dims(p):
    return " ".join(f"{k}={v}" for k, v in p.items())


def attention_flops(p, causal, backward):
    forward = 4.0 * p["B"] * p["N"] * p["T"] * p["S"] * p["H"] / (2 if causal else 1)
    return forward * (2.5 if backward else 1)  # five products of the forward's two, as flash-attention counts


def median_seconds(run, repeats=REPEATS, warmup=3):
    """`run()` must return only once the device is done."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- tilejit -------------------------------------------------------------------------------

def tilejit_ms(tilejit, op, sets, device, tuned=False):
    """Each run has a kernel cache of its own, empty, and no packs. With `tuned`, the shape is tuned
    on its first call (TILEJIT_AUTOTUNE=1) and the calls timed run the tuner's choice; otherwise
    they run the op's heuristic config, as an untuned shape does."""
    args = [tilejit, "run", op, "--device", device]
    for name, value in sets.items():
        args += ["--set", f"{name}={value}"]
    with tempfile.TemporaryDirectory(prefix="tilejit-peers-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "TILEJIT_PREBUILT"}
        env.update(TILEJIT_CACHE_DIR=cache, TILEJIT_AUTOTUNE="1" if tuned else "0")
        done = subprocess.run(args, capture_output=True, text=True, env=env)
    line = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode != 0:
        raise RuntimeError(f"tilejit run {op} failed ({done.returncode}): {line or done.stderr.strip()}")
    found = re.search(r"\s([0-9.]+) ms\s", line)
    if not found:
        raise RuntimeError(f"no time in: {line}")
    return float(found.group(1))


# --- PyTorch -------------------------------------------------------------------------------

def torch_sdpa_ms(p, causal, backward, backend_name):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch sees no GPU")
    backend = getattr(SDPBackend, backend_name)
    shape = (p["B"], p["N"], p["T"], p["H"])  # SDPA takes (B, N, T, H)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=backward) for _ in range(3))
    dout = torch.randn(shape, device="cuda", dtype=torch.bfloat16)

    def forward():
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def timed(fn):
        def run():
            fn()
            torch.cuda.synchronize()
        return median_seconds(run) * 1e3

    forward_ms = timed(forward)
    if not backward:
        return forward_ms

    def forward_backward():
        torch.autograd.grad(forward(), (q, k, v), dout)

    return timed(forward_backward) - forward_ms


# --- JAX -----------------------------------------------------------------------------------

def jax_attention_ms(p, causal, backward, implementation):
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    kq, kk, kv, kd = jax.random.split(key, 4)
    shape = (p["B"], p["T"], p["N"], p["H"])  # BTNH
    q, k, v, dout = (jax.random.normal(x, shape, jnp.bfloat16) for x in (kq, kk, kv, kd))

    def attend(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation=implementation)

    forward = jax.jit(attend)
    forward_ms = median_seconds(lambda: forward(q, k, v).block_until_ready()) * 1e3
    if not backward:
        return forward_ms

    @jax.jit
    def forward_backward(q, k, v, dout):
        _, pullback = jax.vjp(attend, q, k, v)
        return pullback(dout)

    total_ms = median_seconds(lambda: jax.block_until_ready(forward_backward(q, k, v, dout))) * 1e3
    return total_ms - forward_ms


def jax_scaled_dot_ms(p):
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    kl, kr, ksl, ksr = jax.random.split(key, 4)
    b, m, n, k, block = p["B"], p["M"], p["N"], p["K"], p["BLOCK"]
    lhs = jax.random.normal(kl, (b, m, k), jnp.float32).astype(jnp.float8_e4m3fn)
    rhs = jax.random.normal(kr, (b, k, n), jnp.float32).astype(jnp.float8_e4m3fn)
    # e8m0 scales between 1/4 and 4.
    lhs_scale = (2.0 ** jax.random.randint(ksl, (b, m, k // block), -2, 3)).astype(jnp.float8_e8m0fnu)
    rhs_scale = (2.0 ** jax.random.randint(ksr, (b, k // block, n), -2, 3)).astype(jnp.float8_e8m0fnu)
    product = jax.jit(lambda a, c, sa, sc: jax.lax.scaled_dot(a, c, lhs_scale=sa, rhs_scale=sc,
                                                               preferred_element_type=jnp.bfloat16))
    return median_seconds(lambda: product(lhs, rhs, lhs_scale, rhs_scale).block_until_ready()) * 1e3


# --- the run -------------------------------------------------------------------------------

def measure(name, flops, fn, rows):
    started = time.perf_counter()
    try:
        ms = fn()
        rows.append({"name": name, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12})
    except Exception as e:  # a peer that cannot run is reported, not dropped
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        rows.append({"name": name, "unavailable": f"{type(e).__name__}: {reason}"[:200]})
    row = rows[-1]
    took = f"(measured in {time.perf_counter() - started:.0f} s)"  # for budgeting a GPU session
    if "ms" in row:
        print(f"  {name:<44} {row['ms']:10.3f} ms {row['tflops']:9.1f} TFLOP/s  {took}", flush=True)
    else:
        print(f"  {name:<44} unavailable ({row['unavailable']})  {took}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tilejit", required=True, help="the tilejit command line tool")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--small", action="store_true", help="tiny problems, tilejit on the emulator")
    o = parser.parse_args()
    device = "emu" if o.small else "cuda"
    results = {}

    def attention(p, causal, backward):
        title = f"attention {'backward' if backward else 'forward'} bf16 {dims(p)}{' causal' if causal else ''}"
        print(title, flush=True)
        flops, rows = attention_flops(p, causal, backward), []
        sets = dict(p, CAUSAL=1) if causal else dict(p)
        op = "attention_backward" if backward else "attention"
        measure("tilejit", flops, lambda: tilejit_ms(o.tilejit, op, sets, device), rows)
        measure("tilejit tuned on first use", flops, lambda: tilejit_ms(o.tilejit, op, sets, device, tuned=True), rows)
        for backend in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
            measure(f"torch sdpa {backend.lower()}", flops, lambda: torch_sdpa_ms(p, causal, backward, backend), rows)
        for implementation in ("xla", "cudnn"):
            measure(f"jax.nn.dot_product_attention {implementation}", flops,
                    lambda: jax_attention_ms(p, causal, backward, implementation), rows)
        results[title] = rows

    def scaled_dot(p):
        title = "scaled_dot e4m3 x e4m3, e8m0 scales, bf16 out " + dims(p)
        print(title, flush=True)
        flops, rows = 2.0 * p["B"] * p["M"] * p["N"] * p["K"], []
        measure("tilejit", flops, lambda: tilejit_ms(o.tilejit, "scaled_dot", p, device), rows)
        # The same product with rhs stored (N, K): the order the 8-bit tensor cores read B in. At
        # 8192 rows tilejit copies a (K, N) rhs into that order first (ops/scaled_dot/k_major_copy.h),
        # at 1024 each program transposes its tiles: the two problems time both ways.
        measure("tilejit, rhs stored (N, K)", flops,
                lambda: tilejit_ms(o.tilejit, "scaled_dot", dict(p, RHS_NK=1), device), rows)
        measure("jax.lax.scaled_dot", flops, lambda: jax_scaled_dot_ms(p), rows)
        results[title] = rows

    # Most wanted first: a run cut off by its time limit still has these.
    attention(attention_problem(o.small), causal=False, backward=False)
    attention(attention_problem(o.small), causal=False, backward=True)
    scaled_dot(scaled_dot_problem(o.small))
    attention(attention_problem(o.small), causal=True, backward=False)
    attention(attention_problem(o.small), causal=True, backward=True)
    if not o.small:
        scaled_dot(dict(scaled_dot_problem(o.small), M=1024))

    if o.json:
        with open(o.json, "w") as f:
            json.dump(results, f, indent=1)
    # Exit 1 when tilejit itself did not run: its number is the point of the run.
    return 0 if all("ms" in rows[0] for rows in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
