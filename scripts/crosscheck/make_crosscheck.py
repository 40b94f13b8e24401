#!/usr/bin/env python3
"""Cross-check cases for tilejit's kernel library, computed by an independent implementation.

Every expected output in tests/data/crosscheck/ is computed here by JAX on the CPU (the files were made
with JAX 0.10.2, jaxlib 0.10.2, ml_dtypes 0.6.0, numpy 2.4; each file records the versions used), never by
tilejit. One file per op family, each case named after what it exercises:

  attention.json    jax.nn.dot_product_attention(..., implementation='xla'): MHA / GQA / MQA, scale, bias
                    (head dim 1 and N), boolean masks, is_causal, local_window_size, query / key-value sequence
                    lengths (padded query rows, fully masked rows), f32 and bf16. Transformer Engine's
                    bottom-right causal mask is passed to JAX as an explicit boolean mask. The row logsumexp
                    (f32, (B, N, T)) is computed here in f32 from the same logits (einsum, scale, bias, the same
                    -0.7 * f32 max substitution, jax.nn.logsumexp), so a row that keeps no key has that constant
                    as its logsumexp (log S is below its rounding). dq, dk, dv come from jax.vjp with a random
                    dout (input "dout").
  scaled_dot.json   jax.lax.scaled_dot; mx_quantize through JAX's own mxfp8 quantizer,
                    jax._src.cudnn.scaled_matmul_stablehlo.quantize(x, jax.nn.get_scaled_dot_general_config(
                    'mxfp8')), whose e8m0 rounding (cast_to_e8m0_with_rounding_up) is SEMANTICS.md's rule, except
                    for blocks whose amax / 448 is zero or an f32 subnormal: XLA on the CPU flushes subnormals,
                    so those blocks come from the same rule in numpy (checked equal to JAX on every other block).
  int8.json         FJFormer's bits.py formulas written in jax.numpy: quant_int8, matmul_true_int8,
                    q_matmul_int8 and the batch-broadcasting matmul (jnp.matmul).
  fp8.json          Transformer Engine's delayed scaling as SEMANTICS.md states it, in jax.numpy at f32 with the
                    fp8 casts done by ml_dtypes, several steps per case; the FP8 GEMM with jax.lax.dot.
  norms.json        LayerNorm / RMSNorm as SEMANTICS.md states them, in jax.numpy at f32; dx, dgamma, dbeta
                    from jax.vjp with a random dy (input "dy").
  collectives.json  jax.lax.psum_scatter / all_gather / psum / pmax / pmin / pmean under jax.pmap with
                    axis_index_groups, on 8 host CPU devices (--xla_force_host_platform_device_count=8).

The file format is documented in tests/ops/crosscheck_data.h, which reads it.

Suggested tolerances: integer and quantized outputs are exact (rtol = atol = 0). For a float output, every
case is also computed in float64 from the same inputs (the same JAX functions on float64 arrays, or numpy),
and the suggestion is rtol by dtype (f32 1e-5, f16 1e-3, bf16 1e-2) plus an atol that is the larger of a
dtype floor times the largest |value| and twice JAX's own error against float64 beyond rtol, so that an
implementation as accurate as JAX, or one that follows SEMANTICS.md where JAX rounds differently (the case's
note says where), passes. The script refuses to write a case whose JAX result strays unexpectedly far from
its float64 reference.

Rerun (needs jax, jaxlib, ml_dtypes and numpy; no GPU; a few minutes on two cores):

    python3 scripts/crosscheck/make_crosscheck.py              # rewrites every file
    python3 scripts/crosscheck/make_crosscheck.py norms int8   # only these families

The output is deterministic: each case draws its inputs from numpy's PCG64 seeded with the CRC-32 of the
case's name, so adding a case changes no other.
"""

import argparse
import json
import math
import os
import sys
import zlib
from pathlib import Path

# Eight CPU devices for the collectives; set before JAX is imported.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.cudnn import scaled_matmul_stablehlo as jax_block_scaling  # noqa: E402

# float64 references for the tolerances; every expected value below uses explicit dtypes.
jax.config.update("jax_enable_x64", True)

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO / "tests" / "data" / "crosscheck"

F32, F64 = np.float32, np.float64
BF16, F16 = ml_dtypes.bfloat16, np.float16
E4M3, E5M2, E8M0 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu
I8, I32 = np.int8, np.int32

# numpy dtype -> tilejit's dtype name (dsl/dtype.h)
DTYPE_NAMES = {
    np.dtype(F32): "f32", np.dtype(BF16): "bf16", np.dtype(F16): "f16", np.dtype(E4M3): "f8e4m3",
    np.dtype(E5M2): "f8e5m2", np.dtype(E8M0): "e8m0", np.dtype(I8): "i8", np.dtype(I32): "i32",
    np.dtype(np.bool_): "i1",
}

RTOL = {"f32": 1e-5, "f16": 1e-3, "bf16": 1e-2}
ATOL_FLOOR = {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}
# Largest |JAX - float64| (beyond rtol, relative to the largest |value|) accepted without a note saying why.
UNEXPLAINED_ERROR = {"f32": 1e-5, "f16": 1e-3, "bf16": 2e-2}


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def host(x):
    """A numpy array of a JAX or numpy value."""
    return np.asarray(x)


def to64(x):
    return host(x).astype(F64)


# --- tolerances ----------------------------------------------------------------------------------

class Out:
    """An expected output with its suggested tolerance."""

    def __init__(self, value, reference=None, *, explained=False, scale_where=True):
        """reference: the float64 value (float outputs); None for an exact output. explained: the case's note
        says why JAX differs from the reference by more than a dtype's rounding. scale_where: the elements whose
        magnitude sets atol (not a fully masked row's huge logsumexp)."""
        self.value = host(value)
        name = DTYPE_NAMES[self.value.dtype]
        if reference is None:
            self.tolerance = {"rtol": 0, "atol": 0}
            return
        want, ref = to64(self.value), np.asarray(reference, F64)
        assert want.shape == ref.shape, (want.shape, ref.shape)
        finite = np.isfinite(ref)
        assert np.array_equal(want[~finite], ref[~finite], equal_nan=True)
        scale = float(np.max(np.abs(ref[finite & scale_where]), initial=0.0))
        excess = float(np.max(np.abs(want - ref)[finite] - RTOL[name] * np.abs(want[finite]), initial=0.0))
        excess = max(excess, 0.0)
        if not explained:
            assert excess <= UNEXPLAINED_ERROR[name] * scale, (
                f"JAX differs from float64 by {excess:.3g} beyond rtol (largest |value| {scale:.3g})")
        self.relative_error = excess / scale if scale else 0.0
        self.tolerance = {"rtol": RTOL[name], "atol": round_up(max(ATOL_FLOOR[name] * scale, 2 * excess))}


def round_up(x):
    """x rounded up to two significant digits (a readable tolerance)."""
    if x == 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return float(f"{math.ceil(x / 10.0 ** e) * 10.0 ** e:.2g}")


# --- cases and their JSON text -------------------------------------------------------------------

class Case:
    def __init__(self, name, op, options, inputs, outputs, note=None):
        self.name, self.op, self.options, self.note = name, op, options, note
        self.inputs = {k: host(v) for k, v in inputs.items() if v is not None}
        self.outputs = outputs


def value_token(v, dtype):
    if dtype == "i1":
        return "1" if v else "0"
    if dtype in ("i8", "i32"):
        return str(int(v))
    f = float(v)  # exact: every float dtype here is a subset of float64
    if math.isnan(f):
        return '"nan"'
    if math.isinf(f):
        return '"inf"' if f > 0 else '"-inf"'
    if dtype == "f32":
        text = str(F32(f))  # the shortest decimal that identifies the f32
        back = F32(float(text))
        assert back == F32(f) and math.copysign(1, back) == math.copysign(1, f), (f, text)
        return text
    text = repr(f)  # the shortest decimal that reads back as this exact double
    assert float(text) == f
    return text


def array_text(a, indent, tolerance=None):
    dtype = DTYPE_NAMES[a.dtype]
    head = f'{{"dtype": "{dtype}", "shape": {json.dumps(list(a.shape))}, '
    if tolerance is not None:
        head += f'"tolerance": {json.dumps(tolerance)}, '
    tokens = [value_token(v, dtype) for v in a.reshape(-1)]
    lines, line = [], ""
    for t in tokens:
        if line and len(line) + len(t) > 110:
            lines.append(line.rstrip())
            line = ""
        line += t + ", "
    if line:
        lines.append(line.rstrip().rstrip(","))
    pad = " " * (indent + 2)
    body = ("\n" + pad).join(lines)
    return head + '"values": [\n' + pad + body + "]}" if len(lines) > 1 else head + f'"values": [{body}]}}'


def case_text(case):
    pad = "    "
    parts = [f'{pad}{{"name": {json.dumps(case.name)}, "op": {json.dumps(case.op)},']
    if case.note:
        parts.append(f'{pad} "note": {json.dumps(case.note)},')
    parts.append(f'{pad} "options": {json.dumps(case.options)},')
    for key, entries in (("inputs", case.inputs), ("outputs", case.outputs)):
        items = []
        for name, entry in entries.items():
            text = array_text(entry.value, 6, entry.tolerance) if isinstance(entry, Out) else array_text(entry, 6)
            items.append(f'{pad}   {json.dumps(name)}: {text}')
        parts.append(f'{pad} "{key}": {{\n' + ",\n".join(items) + "}" + ("," if key == "inputs" else "}"))
    return "\n".join(parts)


def file_text(family, description, cases):
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    header = {
        "family": family,
        "generator": "scripts/crosscheck/make_crosscheck.py",
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "ml_dtypes": ml_dtypes.__version__,
                     "numpy": np.__version__},
        "description": description,
    }
    head = "{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in header.items())
    return head + '  "cases": [\n' + ",\n".join(case_text(c) for c in cases) + "\n  ]\n}\n"


def check_round_trip(text, cases):
    """The written text reads back to exactly the arrays it was made from."""
    parsed = json.loads(text)

    def number(v):
        return float(v) if isinstance(v, str) else v

    for case, entry in zip(cases, parsed["cases"]):
        for key, arrays in (("inputs", case.inputs), ("outputs", case.outputs)):
            for name, a in arrays.items():
                a = a.value if isinstance(a, Out) else a
                got = entry[key][name]
                assert got["shape"] == list(a.shape) and got["dtype"] == DTYPE_NAMES[a.dtype]
                values = np.array([number(v) for v in got["values"]], F64)
                if got["dtype"] == "f32":
                    values = values.astype(F32).astype(F64)
                want = to64(a).reshape(-1)
                number_at = ~np.isnan(want)  # a NaN's sign is not written
                same = (values == want) | (np.isnan(values) & ~number_at)
                assert same.all() and np.array_equal(np.signbit(values[number_at]), np.signbit(want[number_at])), (
                    case.name, name)


# --- random inputs -------------------------------------------------------------------------------

def normal(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32).astype(dtype)


def fp8_values(rng, shape, dtype, scale):
    """Random finite values of an fp8 dtype, normals and subnormals, both signs."""
    limit = float(ml_dtypes.finfo(dtype).max)
    return np.clip(rng.standard_normal(shape) * scale, -limit, limit).astype(F32).astype(dtype)


# --- attention -----------------------------------------------------------------------------------

LARGE_NEGATIVE = -0.7 * float(np.finfo(F32).max)  # jax's masked-logit value for f32 / bf16 / f64 logits


def attention_keep_mask(B, T, S, N, mask, is_causal, bottom_right, window, q_seqlens, kv_seqlens):
    """(B, N, T, S) bool: SEMANTICS.md's rules, all ANDed."""
    t = np.arange(T)[:, None]
    s = np.arange(S)[None, :]
    keep = np.ones((B, N, T, S), bool)
    if mask is not None:
        keep &= np.broadcast_to(mask, (B, N, T, S))
    if is_causal:
        keep &= s <= t
    if bottom_right:
        keep &= s <= t + (S - T)
    if window is not None:
        left, right = window
        keep &= (t - left <= s) & (s <= t + right)
    if q_seqlens is not None:
        keep &= (np.arange(T)[None, None, :, None] < q_seqlens[:, None, None, None])
    if kv_seqlens is not None:
        keep &= (np.arange(S)[None, None, None, :] < kv_seqlens[:, None, None, None])
    return keep


def attention_lse(q, k, bias, keep, scale, dtype):
    """Row logsumexp (B, N, T) from the logits as jax forms them, in `dtype` (f32, or f64 for the reference)."""
    N, K = q.shape[2], k.shape[2]
    k_per_head = jnp.repeat(jnp.asarray(k), N // K, axis=2)
    logits = jnp.einsum("BTNH,BSNH->BNTS", jnp.asarray(q), k_per_head, preferred_element_type=dtype,
                        precision=jax.lax.Precision.HIGHEST)
    logits = logits * jnp.asarray(scale, dtype)
    if bias is not None:
        logits = logits + jnp.asarray(bias).astype(dtype)
    logits = jnp.where(jnp.asarray(keep), logits, jnp.asarray(LARGE_NEGATIVE, dtype))
    return jax.nn.logsumexp(logits, axis=-1)


def attention_case(name, *, B=1, T=8, S=8, N=2, K=2, H=8, dtype=F32, scale=None, bias_heads=None,
                   bias_batch=True, mask=None, masked_rows=(), is_causal=False, bottom_right=False, window=None,
                   q_seqlens=None, kv_seqlens=None, backward=False, rank3=False, note=None):
    """mask: None, or the mask's shape; masked_rows: (b, n, t) rows of that mask made all False."""
    rng = rng_for(name)
    q = normal(rng, (B, T, N, H), dtype)
    k = normal(rng, (B, S, K, H), dtype)
    v = normal(rng, (B, S, K, H), dtype)
    bias = None
    if bias_heads is not None:
        bias = normal(rng, (B if bias_batch else 1, bias_heads, T, S), dtype)
    explicit_mask = None
    if mask is not None:
        explicit_mask = rng.random(mask) > 0.3
        for row in masked_rows:
            explicit_mask[row] = False
    q_len = None if q_seqlens is None else np.array(q_seqlens, I32)
    kv_len = None if kv_seqlens is None else np.array(kv_seqlens, I32)
    window_pair = (window, window) if isinstance(window, int) else window
    keep = attention_keep_mask(B, T, S, N, explicit_mask, is_causal, bottom_right, window_pair, q_len, kv_len)
    jax_mask = explicit_mask
    if bottom_right:  # jax has no bottom-right causal option: pass it as a mask
        br = np.arange(S)[None, :] <= np.arange(T)[:, None] + (S - T)
        jax_mask = br[None, None] if jax_mask is None else jax_mask & br

    def attend(q, k, v, bias):
        if rank3:
            q, k, v = q[0], k[0], v[0]
        return jax.nn.dot_product_attention(
            q, k, v, bias, None if jax_mask is None else jnp.asarray(jax_mask), scale=scale, is_causal=is_causal,
            query_seq_lengths=None if q_len is None else jnp.asarray(q_len),
            key_value_seq_lengths=None if kv_len is None else jnp.asarray(kv_len),
            local_window_size=window, implementation="xla")

    args = [jnp.asarray(x) for x in (q, k, v)]
    args64 = [jnp.asarray(to64(x)) for x in (q, k, v)]
    bias_j = None if bias is None else jnp.asarray(bias)
    bias64 = None if bias is None else jnp.asarray(to64(bias))
    out = attend(*args, bias_j)
    out64 = attend(*args64, bias64)
    outputs = {"out": Out(out, out64)}
    scale_value = 1.0 / math.sqrt(H) if scale is None else scale
    if not rank3:
        lse = attention_lse(q, k, bias, keep, scale_value, F32)
        lse64 = attention_lse(to64(q), to64(k), bias64, keep, scale_value, F64)
        if dtype == F32:  # jax's own residual (B, T, N) agrees with the logsumexp computed here
            _, residual = jax.nn.dot_product_attention(
                *args, bias_j, None if jax_mask is None else jnp.asarray(jax_mask), scale=scale,
                is_causal=is_causal, query_seq_lengths=None if q_len is None else jnp.asarray(q_len),
                key_value_seq_lengths=None if kv_len is None else jnp.asarray(kv_len),
                local_window_size=window, implementation="xla", return_residual=True)
            np.testing.assert_allclose(host(residual).transpose(0, 2, 1), host(lse), rtol=1e-6)
        outputs["lse"] = Out(lse, lse64, scale_where=keep.any(axis=-1))
    inputs = {"q": q, "k": k, "v": v, "bias": bias, "mask": explicit_mask, "q_seqlens": q_len, "kv_seqlens": kv_len}
    if backward:
        dout = normal(rng, (B, T, N, H), dtype)
        grads = jax.vjp(lambda q, k, v: attend(q, k, v, bias_j), *args)[1](jnp.asarray(dout if not rank3 else dout[0]))
        grads64 = jax.vjp(lambda q, k, v: attend(q, k, v, bias64), *args64)[1](
            jnp.asarray(to64(dout) if not rank3 else to64(dout)[0]))
        inputs["dout"] = dout
        for n, g, g64 in zip(("dq", "dk", "dv"), grads, grads64):
            outputs[n] = Out(g, g64)
    if rank3:  # drop B = 1 from the inputs and from the gradients, taken with respect to rank-4 arrays
        inputs = {n: (x[0] if n in ("q", "k", "v", "dout") else x) for n, x in inputs.items()}
        for o in outputs.values():
            o.value = o.value[0] if o.value.ndim == 4 else o.value
    options = {}
    if scale is not None:
        options["scale"] = scale
    if is_causal:
        options["is_causal"] = True
    if bottom_right:
        options["causal_bottom_right"] = True
    if window is not None:
        options["local_window"] = window if isinstance(window, int) else list(window)
    return Case(name, "attention", options, inputs, outputs, note)


def attention_cases():
    fully = "A fully masked row is the uniform average of v over all S positions (jax: softmax of equal logits)."
    padded = "Query rows t >= q_seqlens[b] are zero in out, and get zero dq."
    cases = [
        attention_case("mha_f32", B=2, backward=True),
        attention_case("mha_bf16", B=2, dtype=BF16, backward=True,
                       note="jax rounds the f32 softmax probabilities to bf16 before the product with v."),
        attention_case("gqa_f32_scale", T=6, S=10, N=4, K=2, scale=0.3, backward=True),
        attention_case("gqa_bf16_scale", T=6, S=10, N=4, K=2, dtype=BF16, scale=0.3),
        attention_case("mqa_f32", B=2, T=5, S=7, N=4, K=1, H=16),
        attention_case("mqa_bf16_causal", T=8, S=8, N=4, K=1, dtype=BF16, is_causal=True, backward=True),
        attention_case("bias_head1_f32", B=2, T=4, S=6, bias_heads=1, backward=True),
        attention_case("bias_headN_batch1_f32", B=2, T=4, S=6, N=4, K=2, bias_heads=4, bias_batch=False),
        attention_case("bias_headN_bf16", B=2, T=4, S=6, N=2, K=1, dtype=BF16, bias_heads=2),
        attention_case("mask_f32", B=2, T=6, S=8, mask=(2, 2, 6, 8), masked_rows=[(0, 1, 2)], backward=True,
                       note=fully),
        attention_case("mask_broadcast_f32", T=6, S=8, N=4, K=2, mask=(1, 1, 6, 8)),
        attention_case("mask_bf16", B=2, T=4, S=8, dtype=BF16, mask=(2, 1, 4, 8), masked_rows=[(1, 0, 3)],
                       note=fully),
        attention_case("causal_f32", is_causal=True, backward=True),
        attention_case("causal_wide_f32", T=4, S=8, is_causal=True, note="Top-left aligned: key s kept iff s <= t."),
        attention_case("causal_tall_f32", T=8, S=4, is_causal=True, note="Top-left aligned: key s kept iff s <= t."),
        attention_case("causal_bottom_right_f32", T=4, S=8, bottom_right=True, backward=True,
                       note="Key s kept iff s <= t + (S - T); computed by jax with that explicit mask."),
        attention_case("causal_bottom_right_tall_f32", T=6, S=4, bottom_right=True,
                       note="Key s kept iff s <= t + (S - T); computed by jax with that explicit mask. Rows 0 and "
                            "1 keep no key: " + fully),
        attention_case("causal_bottom_right_bf16", B=2, T=4, S=6, N=4, K=2, dtype=BF16, bottom_right=True,
                       note="Key s kept iff s <= t + (S - T); computed by jax with that explicit mask."),
        attention_case("window_f32", T=10, S=10, window=(2, 1), note="Key s kept iff t - 2 <= s <= t + 1."),
        attention_case("window_int_causal_f32", T=10, S=12, window=3, is_causal=True, backward=True,
                       note="local_window 3 means (3, 3); with is_causal: t - 3 <= s <= t."),
        attention_case("window_bf16", T=8, S=8, dtype=BF16, window=(1, 0)),
        attention_case("seqlens_f32", B=3, T=8, S=8, q_seqlens=[8, 5, 8], kv_seqlens=[8, 6, 0], backward=True,
                       note=padded + " Batch 2 has kv_seqlens 0: " + fully),
        attention_case("seqlens_q_only_f32", B=2, T=6, S=6, q_seqlens=[3, 6], note=padded),
        attention_case("seqlens_kv_only_causal_bf16", B=2, T=6, S=8, dtype=BF16, kv_seqlens=[4, 8], is_causal=True),
        attention_case("seqlens_bf16", B=2, T=8, S=8, N=2, K=1, dtype=BF16, q_seqlens=[6, 8], kv_seqlens=[0, 5],
                       backward=True, note=padded + " Batch 0 has kv_seqlens 0: " + fully),
        attention_case("combined_f32", B=2, T=8, S=10, N=4, K=2, scale=0.25, bias_heads=1, mask=(2, 4, 8, 10),
                       is_causal=True, window=(4, 0), q_seqlens=[8, 6], kv_seqlens=[7, 10], backward=True,
                       note="GQA, post-scale bias, mask, causal, window and sequence lengths together."),
        attention_case("combined_bf16", B=2, T=8, S=8, N=4, K=1, dtype=BF16, bias_heads=4, mask=(1, 1, 8, 8),
                       is_causal=True, q_seqlens=[7, 8], kv_seqlens=[8, 6]),
        attention_case("rank3_f32", T=6, S=8, N=2, K=1, rank3=True, backward=True,
                       note="Rank-3 q (T, N, H), k and v (S, K, H): B = 1. No lse."),
    ]
    return cases


# --- scaled_dot and mx_quantize ------------------------------------------------------------------

def expand_scale(scale, operand_shape, contracting):
    """Each scale element repeated over its block of consecutive operand elements (SEMANTICS.md)."""
    s = to64(scale)
    for d in contracting:
        s = np.repeat(s, operand_shape[d] // s.shape[d], axis=d)
    return s


def dot_general64(lhs, rhs, dn):
    return host(jax.lax.dot_general(jnp.asarray(lhs), jnp.asarray(rhs), dn, precision=jax.lax.Precision.HIGHEST))


def e8m0_bytes(rng, shape, lo, hi):
    return rng.integers(lo, hi + 1, shape).astype(np.uint8).view(E8M0)


def scaled_dot_case(name, lhs, rhs, lhs_scale, rhs_scale, dn=None, out_dtype=None, note=None, explained=False):
    n = lhs.ndim
    dn_used = dn if dn is not None else (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    kwargs = {}
    if dn is not None:
        kwargs["dimension_numbers"] = dn
    if out_dtype is not None:
        kwargs["preferred_element_type"] = out_dtype
    out = jax.lax.scaled_dot(jnp.asarray(lhs), jnp.asarray(rhs),
                             lhs_scale=None if lhs_scale is None else jnp.asarray(lhs_scale),
                             rhs_scale=None if rhs_scale is None else jnp.asarray(rhs_scale), **kwargs)
    (lc, rc), _ = dn_used
    a = to64(lhs) * (1.0 if lhs_scale is None else expand_scale(lhs_scale, lhs.shape, lc))
    b = to64(rhs) * (1.0 if rhs_scale is None else expand_scale(rhs_scale, rhs.shape, rc))
    ref = dot_general64(a, b, dn_used)
    options = {}
    if dn is not None:
        options["dimension_numbers"] = [[list(lc), list(rc)], [list(dn[1][0]), list(dn[1][1])]]
    if out_dtype is not None:
        options["preferred_element_type"] = DTYPE_NAMES[np.dtype(out_dtype)]
    return Case(name, "scaled_dot", options,
                {"lhs": lhs, "rhs": rhs, "lhs_scale": lhs_scale, "rhs_scale": rhs_scale},
                {"out": Out(out, ref, explained=explained)}, note)


def scaled_dot_cases():
    cases = []

    def mk(name, M, K, N, dtype=E4M3, rdtype=None, block=32, sdtype="e8m0", out=None, note=None):
        rdtype = rdtype or dtype
        rng = rng_for(name)
        lhs = fp8_values(rng, (M, K), dtype, 8.0) if dtype in (E4M3, E5M2) else normal(rng, (M, K), dtype)
        rhs = fp8_values(rng, (K, N), rdtype, 8.0) if rdtype in (E4M3, E5M2) else normal(rng, (K, N), rdtype)
        if sdtype == "e8m0":
            ls, rs = e8m0_bytes(rng, (M, K // block), 120, 134), e8m0_bytes(rng, (K // block, N), 120, 134)
        else:
            ls = rng.uniform(0.25, 4.0, (M, K // block)).astype(F32).astype(BF16)
            rs = rng.uniform(0.25, 4.0, (K // block, N)).astype(F32).astype(BF16)
        cases.append(scaled_dot_case(name, lhs, rhs, ls, rs, out_dtype=out, note=note, explained=sdtype == "bf16"))

    mk("e4m3_block32_default_out", 8, 64, 8)
    mk("e4m3_block32_f32", 8, 128, 8, out=F32)
    mk("e4m3_block32_bf16", 8, 64, 6, out=BF16)
    mk("e5m2_block32_f32", 4, 96, 6, dtype=E5M2, out=F32)
    mk("e4m3_x_e5m2_block32_f32", 4, 64, 5, dtype=E4M3, rdtype=E5M2, out=F32)
    mk("e4m3_block16_bf16", 6, 64, 4, block=16, out=BF16)
    mk("e4m3_block2_f32", 4, 16, 4, block=2, out=F32)
    mk("bf16_e8m0_block32_f32", 4, 64, 4, dtype=BF16, out=F32)
    mk("bf16_bf16scale_block16_f32", 4, 64, 4, dtype=BF16, block=16, sdtype="bf16", out=F32,
       note="bf16 scales: jax rounds each operand * scale product to bf16 before the dot; the tolerance "
            "also admits the exact products.")
    mk("e4m3_bf16scale_block32_bf16", 4, 64, 4, sdtype="bf16", out=BF16,
       note="bf16 scales: jax rounds each operand * scale product to bf16 before the dot; the tolerance "
            "also admits the exact products.")

    # Scales far from 1: block k of lhs is scaled by 2^c_k and of rhs by 2^-c_k (|c_k| up to 60), so the
    # products stay near 1 only when each block meets its own scale.
    rng = rng_for("e4m3_extreme_scales_f32")
    M, K, N = 4, 128, 4
    c = np.array([60, -60, 37, -45])
    lhs, rhs = fp8_values(rng, (M, K), E4M3, 4.0), fp8_values(rng, (K, N), E4M3, 4.0)
    row = rng.integers(-3, 4, (M, 1))
    col = rng.integers(-3, 4, (1, N))
    ls = (127 + c[None, :] + row).astype(np.uint8).view(E8M0)
    rs = (127 - c[:, None] + col).astype(np.uint8).view(E8M0)
    cases.append(scaled_dot_case("e4m3_extreme_scales_f32", lhs, rhs, ls, rs, out_dtype=F32))

    # Batch dims and explicit dimension numbers.
    rng = rng_for("batched_default_dn_f32")
    lhs, rhs = fp8_values(rng, (2, 4, 64), E4M3, 8.0), fp8_values(rng, (2, 64, 5), E4M3, 8.0)
    cases.append(scaled_dot_case("batched_default_dn_f32", lhs, rhs, e8m0_bytes(rng, (2, 4, 2), 122, 132),
                                 e8m0_bytes(rng, (2, 2, 5), 122, 132), out_dtype=F32))
    rng = rng_for("contracting_dim0_f32")
    lhs, rhs = fp8_values(rng, (64, 4), E4M3, 8.0), fp8_values(rng, (5, 64), E4M3, 8.0)
    cases.append(scaled_dot_case("contracting_dim0_f32", lhs, rhs, e8m0_bytes(rng, (2, 4), 122, 132),
                                 e8m0_bytes(rng, (5, 2), 122, 132), dn=(((0,), (1,)), ((), ())), out_dtype=F32,
                                 note="lhs (K, M) contracts dim 0, rhs (N, K) contracts dim 1: out (M, N)."))
    rng = rng_for("batch_dim_middle_f32")
    lhs, rhs = fp8_values(rng, (3, 2, 64), E4M3, 8.0), fp8_values(rng, (2, 4, 64), E4M3, 8.0)
    cases.append(scaled_dot_case("batch_dim_middle_f32", lhs, rhs, e8m0_bytes(rng, (3, 2, 2), 122, 132),
                                 e8m0_bytes(rng, (2, 4, 2), 122, 132), dn=(((2,), (2,)), ((1,), (0,))),
                                 out_dtype=F32, note="lhs (M, B, K), rhs (B, N, K): out (B, M, N)."))
    rng = rng_for("batched_contracting_first_bf16")
    lhs, rhs = fp8_values(rng, (2, 32, 3), E5M2, 8.0), fp8_values(rng, (2, 32, 4), E4M3, 8.0)
    cases.append(scaled_dot_case("batched_contracting_first_bf16", lhs, rhs, e8m0_bytes(rng, (2, 2, 3), 122, 132),
                                 e8m0_bytes(rng, (2, 2, 4), 122, 132), dn=(((1,), (1,)), ((0,), (0,))),
                                 out_dtype=BF16, note="lhs (B, K, M), rhs (B, K, N), block 16: out (B, M, N)."))

    # Missing scales mean all ones.
    rng = rng_for("missing_lhs_scale_f32")
    lhs, rhs = fp8_values(rng, (4, 64), E4M3, 8.0), fp8_values(rng, (64, 4), E4M3, 8.0)
    cases.append(scaled_dot_case("missing_lhs_scale_f32", lhs, rhs, None, e8m0_bytes(rng, (2, 4), 122, 132),
                                 out_dtype=F32))
    rng = rng_for("no_scales_default_out")
    lhs, rhs = fp8_values(rng, (4, 32), E4M3, 8.0), fp8_values(rng, (32, 4), E4M3, 8.0)
    cases.append(scaled_dot_case("no_scales_default_out", lhs, rhs, None, None))

    # Wider operands, which jax rounds to bf16 before the dot.
    rng = rng_for("f32_bf16_exact_f32")
    lhs, rhs = normal(rng, (4, 64), BF16).astype(F32), normal(rng, (64, 4), BF16).astype(F32)
    cases.append(scaled_dot_case("f32_bf16_exact_f32", lhs, rhs, e8m0_bytes(rng, (4, 2), 122, 132),
                                 e8m0_bytes(rng, (2, 4), 122, 132), out_dtype=F32,
                                 note="f32 operands that are exact in bf16, so jax's bf16 rounding loses nothing."))
    lossy = ("jax rounds {} operands to bf16 before scaling (SEMANTICS.md computes in f32); the tolerance admits "
             "both.")
    rng = rng_for("f32_operands_f32")
    lhs, rhs = normal(rng, (4, 64), F32), normal(rng, (64, 4), F32)
    cases.append(scaled_dot_case("f32_operands_f32", lhs, rhs, e8m0_bytes(rng, (4, 2), 122, 132),
                                 e8m0_bytes(rng, (2, 4), 122, 132), out_dtype=F32, note=lossy.format("f32"),
                                 explained=True))
    rng = rng_for("f16_operands_f32")
    lhs, rhs = normal(rng, (4, 64), F16), normal(rng, (64, 4), F16)
    cases.append(scaled_dot_case("f16_operands_f32", lhs, rhs, e8m0_bytes(rng, (4, 2), 122, 132),
                                 e8m0_bytes(rng, (2, 4), 122, 132), out_dtype=F32, note=lossy.format("f16"),
                                 explained=True))
    return cases


MX_CONFIG = jax.nn.get_scaled_dot_general_config("mxfp8")
MX_BLOCK = 32
F32_MIN_NORMAL = float(np.finfo(F32).tiny)


def mx_quantize_numpy(x):
    """SEMANTICS.md's rule in numpy, which keeps f32 subnormals: (data, scale)."""
    blocks = x.reshape(x.shape[:-1] + (x.shape[-1] // MX_BLOCK, MX_BLOCK))
    s = (np.max(np.abs(blocks), axis=-1) / F32(448)).astype(F32)
    bits = s.view(np.uint32)
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    up = (mantissa > 0) & (exponent != 0xFE) & ~((exponent == 0) & (mantissa <= 0x400000))
    byte = (exponent + up).astype(np.uint8)
    decoded = (byte.astype(np.uint32) << 23).view(F32)
    decoded = np.where(decoded == 0, F32(2.0 ** -127), decoded)
    data = np.clip(blocks / decoded[..., None], F32(-448), F32(448)).astype(E4M3)
    return data.reshape(x.shape), byte.view(E8M0)


def mx_quantize_case(name, x, note=None):
    """JAX's helper on the f32 values of x (for bf16 input the upcast is exact). XLA on the CPU flushes f32
    subnormals to zero, both s = amax / 448 and the decoded scale 2^-127 of byte 0, so for a block whose s is
    zero or subnormal jax gives NaN data (x / 0); those blocks come from numpy following the same rule, which
    must agree with jax on every other block."""
    x32 = host(x).astype(F32)
    data, scale = (host(v) for v in jax_block_scaling.quantize(jnp.asarray(x32), MX_CONFIG))
    data_np, scale_np = mx_quantize_numpy(x32)
    normal_s = np.max(np.abs(x32.reshape(scale.shape + (MX_BLOCK,))), axis=-1) / 448 >= F32_MIN_NORMAL
    assert np.array_equal(scale.view(np.uint8)[normal_s], scale_np.view(np.uint8)[normal_s]), name
    data_blocks, data_np_blocks = (d.view(np.uint8).reshape(scale.shape + (MX_BLOCK,)) for d in (data, data_np))
    assert np.array_equal(data_blocks[normal_s], data_np_blocks[normal_s]), name
    if not normal_s.all():
        note = ((note + " ") if note else "") + (
            f"The {int((~normal_s).sum())} blocks whose s is zero or subnormal come from numpy following the rule: "
            "XLA on the CPU flushes subnormals (s, and the 2^-127 that byte 0 decodes to), so jax's helper gives "
            "them NaN data.")
    return Case(name, "mx_quantize", {}, {"x": x}, {"data": Out(data_np), "scale": Out(scale_np)}, note)


def mx_quantize_cases():
    rng = rng_for("mx_quantize_f32")
    x = (rng.standard_normal((4, 128)) * 10.0 ** rng.uniform(-4, 4, (4, 4)).repeat(32, axis=1)).astype(F32)
    cases = [mx_quantize_case("mx_quantize_f32", x)]

    # One block per edge of the rounding rule; the block's amax is reached by one element, of either sign.
    amax = [0.0,                          # all zero: byte 0
            448.0,                        # s = 1 exactly: byte 127, no rounding up
            56.0,                         # a power of two below 1
            448.0 * 32 * (1 + 2.0 ** -23),  # just above a power of two: rounds up
            448.0 * 1.5,                  # mantissa 0x400000 above a power of two: rounds up
            1e-38,                        # s subnormal, mantissa <= 0x400000: byte 0
            448.0 * 2.0 ** -127,          # s = 2^-127, mantissa exactly 0x400000: byte 0, no rounding up
            448.0 * 0.75 * 2.0 ** -126,   # s subnormal, mantissa > 0x400000: byte 1
            3e38,                         # near the f32 maximum
            1e20,
            1.0,                          # with tiny elements: fp8 subnormals and zeros
            -5.0,                         # every element negative
            0.3, 7.0, 1000.0]
    rng = rng_for("mx_quantize_edges_f32")
    blocks = rng.uniform(-1, 1, (len(amax), 32))
    for i, a in enumerate(amax):
        row = blocks[i] / np.max(np.abs(blocks[i])) * abs(a)
        if i == 10:
            row *= 2.0 ** -12
        if a < 0:
            row = -np.abs(row)
        row[(5 * i) % 32] = a if i % 2 else -a
        blocks[i] = row
    x = blocks.astype(F32).reshape(3, 160)
    cases.append(mx_quantize_case(
        "mx_quantize_edges_f32", x,
        note="Blocks by amax: 0 (byte 0); 448 (byte 127); 56; 448 * 32 * (1 + 2^-23) and 672 (round up); 1e-38, "
             "448 * 2^-127 and 448 * 0.75 * 2^-126 (subnormal s: bytes 0, 0, 1); 3e38; 1e20; 1 with elements near "
             "2^-12 (fp8 subnormals and zeros); -5 (all negative); 0.3; 7; 1000."))

    rng = rng_for("mx_quantize_3d_f32")
    cases.append(mx_quantize_case("mx_quantize_3d_f32", normal(rng, (2, 3, 64), F32, 3.0)))
    rng = rng_for("mx_quantize_bf16")
    x = normal(rng, (3, 64), BF16, 20.0)
    x[1, :32] = np.linspace(-449.0, 449.0, 32).astype(F32).astype(BF16)
    x[1, 5] = BF16(450.0)
    # jax's helper divides by 448 in the input's dtype; for bf16 input that gives the same bytes.
    on_bf16 = [host(v).view(np.uint8) for v in jax_block_scaling.quantize(jnp.asarray(x), MX_CONFIG)]
    on_f32 = [v.view(np.uint8) for v in mx_quantize_numpy(x.astype(F32))]
    assert all(np.array_equal(a, b) for a, b in zip(on_bf16, on_f32))
    cases.append(mx_quantize_case("mx_quantize_bf16", x, note="bf16 input; block (1, 0) has amax 450."))
    return cases


# --- int8 (FJFormer bits.py) ---------------------------------------------------------------------

def quant_int8(x):
    return jnp.clip(jnp.round(x), -127, 127).astype(jnp.int8)


def q_matmul_int8(a, w, compute_dtype):
    """FJFormer's q_matmul_int8 in `compute_dtype`. For an all-zero row of a (column of w) the scale is inf, the
    scaled values 0 * inf = NaN, which XLA converts to int8 0; the result there is 0 / inf = 0."""
    a = jnp.asarray(a).astype(compute_dtype)
    w = jnp.asarray(w).astype(compute_dtype)
    a_s = 127 / jnp.max(jnp.abs(a), axis=1, keepdims=True)
    w_s = 127 / jnp.max(jnp.abs(w), axis=0, keepdims=True)
    acc = jnp.matmul(quant_int8(a * a_s), quant_int8(w * w_s), preferred_element_type=jnp.int32)
    return acc / (a_s * w_s)


def int8_cases():
    cases = []
    edges = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.5000002, -0.0, 0.0, 126.5, 127.4, 127.5, 128.0,
             -126.5, -127.5, -128.0, -300.0, 1e9, -1e9, 3.4e38, -3.4e38, 1e-30]
    rng = rng_for("quant_int8_f32")
    x = np.concatenate([np.array(edges, F32), rng.uniform(-200, 200, 41).astype(F32)])
    cases.append(Case("quant_int8_f32", "quant_int8", {}, {"x": x}, {"out": Out(quant_int8(jnp.asarray(x)))},
                      "Round half to even, then clip to [-127, 127]."))
    rng = rng_for("quant_int8_bf16")
    x = np.concatenate([np.array(edges[:8] + edges[10:18], F32), rng.uniform(-160, 160, 48)]).astype(BF16)
    cases.append(Case("quant_int8_bf16", "quant_int8", {}, {"x": x}, {"out": Out(quant_int8(jnp.asarray(x)))}))

    def true_int8(name, a, b):
        out = jnp.matmul(jnp.asarray(a), jnp.asarray(b), preferred_element_type=jnp.int32)
        assert np.array_equal(host(out), a.astype(np.int64) @ b.astype(np.int64))
        cases.append(Case(name, "matmul_true_int8", {}, {"a": a, "b": b}, {"out": Out(out)}))

    rng = rng_for("matmul_true_int8_random")
    true_int8("matmul_true_int8_random", rng.integers(-128, 128, (5, 32)).astype(I8),
              rng.integers(-128, 128, (32, 7)).astype(I8))
    a = np.full((3, 256), -128, I8)
    a[1] = 127
    a[2, ::2] = 127
    b = np.full((256, 2), -128, I8)
    b[:, 1] = 127
    true_int8("matmul_true_int8_extremes", a, b)

    def q_matmul(name, a, w, note=None):
        out = q_matmul_int8(a, w, a.dtype)
        zero_rows, zero_cols = ~np.any(a != 0, axis=1), ~np.any(w != 0, axis=0)
        assert not np.isnan(host(out)).any() and not host(out)[zero_rows].any() and not host(out)[:, zero_cols].any()
        if a.dtype == F32:
            # The formula fixes every f32 rounding (scales, products, quotient): only an implementation that
            # divides by multiplying with a reciprocal may differ, by an ulp or two.
            entry = Out(out)
            entry.tolerance = {"rtol": 1e-6, "atol": 0.0}
        else:
            # The same formula with f32 scales on the same bf16 inputs, rounded once to bf16: the tolerance
            # covers jax's bf16 arithmetic and this.
            f32_way = q_matmul_int8(a, w, F32)
            entry = Out(out, to64(host(f32_way).astype(BF16)), explained=True)
            note = ((note + " ") if note else "") + (
                "jax computes the scales, the scaled inputs and the final division in bf16 and rounds the i32 "
                "sums to bf16 before dividing; the tolerance also admits the same formula computed in f32.")
        cases.append(Case(name, "q_matmul_int8", {}, {"a": a, "w": w}, {"out": entry}, note))

    rng = rng_for("q_matmul_int8_f32")
    q_matmul("q_matmul_int8_f32", normal(rng, (6, 32), F32) * rng.uniform(0.1, 10, (6, 1)).astype(F32),
             normal(rng, (32, 5), F32) * rng.uniform(0.1, 10, (1, 5)).astype(F32))
    rng = rng_for("q_matmul_int8_bf16")
    q_matmul("q_matmul_int8_bf16", normal(rng, (6, 32), BF16), normal(rng, (32, 5), BF16))
    rng = rng_for("q_matmul_int8_zero_row_col_f32")
    a, w = normal(rng, (4, 16), F32), normal(rng, (16, 3), F32)
    a[2] = 0
    w[:, 1] = 0
    q_matmul("q_matmul_int8_zero_row_col_f32", a, w,
             note="Row 2 of a and column 1 of w are all zero: their scales are inf and the scaled values "
                  "0 * inf = NaN, which XLA converts to int8 0, so FJFormer's formula gives 0 / inf = 0 there, "
                  "as SEMANTICS.md asks.")
    rng = rng_for("q_matmul_int8_nan_inf_f32")
    a, w = normal(rng, (5, 16), F32), normal(rng, (16, 4), F32)
    a[1, 9], a[3, 0], w[4, 2], w[11, 0] = np.nan, np.inf, -np.inf, np.nan
    a[4] = 0
    out = q_matmul_int8(a, w, F32)
    nan_at = np.zeros((5, 4), bool)
    nan_at[[1, 3], :] = nan_at[:, [0, 2]] = True
    assert np.array_equal(np.isnan(host(out)), nan_at) and not host(out)[4, [1, 3]].any()
    entry = Out(out)
    entry.tolerance = {"rtol": 1e-6, "atol": 0.0}
    cases.append(Case("q_matmul_int8_nan_inf_f32", "q_matmul_int8", {}, {"a": a, "w": w}, {"out": entry},
                      "A NaN in row 1 of a and column 0 of w makes their scales NaN; an infinity in row 3 of a "
                      "and column 2 of w makes their scales 0, every scaled value 0 (inf * 0 = NaN, converted "
                      "to 0) and the result 0 / 0. Those rows and columns are NaN, also where they meet the "
                      "all-zero row 4 (0 / (inf * NaN), 0 / (inf * 0)); the rest is as usual."))

    def broadcast(name, a_shape, b_shape, dtype):
        rng = rng_for(name)
        a, b = normal(rng, a_shape, dtype), normal(rng, b_shape, dtype)
        out = jnp.matmul(jnp.asarray(a), jnp.asarray(b))
        ref = np.matmul(to64(a), to64(b))
        cases.append(Case(name, "matmul", {}, {"a": a, "b": b}, {"out": Out(out, ref)}))

    broadcast("matmul_broadcast_f32", (2, 1, 4, 8), (3, 8, 5), F32)
    broadcast("matmul_broadcast_both_f32", (1, 3, 4, 8), (2, 1, 8, 4), F32)
    broadcast("matmul_2d_x_batch_bf16", (4, 16), (2, 16, 6), BF16)
    broadcast("matmul_batch_x_2d_f32", (3, 2, 8), (8, 3), F32)
    return cases


# --- fp8 delayed scaling -------------------------------------------------------------------------

FP8_MAX = {"f8e4m3": 448.0, "f8e5m2": 57344.0}


def delayed_scaling_case(name, steps, *, fp8_format="HYBRID", tensor="forward", margin=0, history_len=4,
                         algo="max", dtype=F32, note=None):
    fp8 = E4M3 if fp8_format == "E4M3" or (fp8_format == "HYBRID" and tensor == "forward") else E5M2
    fmax = F32(FP8_MAX[DTYPE_NAMES[np.dtype(fp8)]])
    x_all = np.stack(steps).astype(dtype)
    scale = jnp.asarray(1.0, F32)
    history = jnp.zeros((history_len,), F32)
    init_scale, init_history = host(scale), host(history)
    q_out, scale_inv_out, amax_out, scale_out, history_out = [], [], [], [], []
    for x in x_all:
        x32 = jnp.asarray(x).astype(F32)
        scaled = jnp.clip(x32 * scale, -fmax, fmax)
        q_out.append(host(scaled).astype(fp8))  # ml_dtypes' cast: round to nearest even
        scale_inv_out.append(host(1.0 / scale).astype(F32))
        history = history.at[0].set(jnp.max(jnp.abs(x32)))
        amax = jnp.max(history) if algo == "max" else history[0]
        new_scale = (fmax / amax) / F32(2.0 ** margin)
        new_scale = jnp.minimum(new_scale, np.finfo(F32).max)  # a tiny amax: f32's largest, as TE's update
        new_scale = jnp.where(amax > 0, new_scale, scale)
        scale = jnp.where(jnp.isfinite(amax), new_scale, scale).astype(F32)
        history = jnp.roll(history, -1).at[0].set(0.0)
        amax_out.append(host(amax))
        scale_out.append(host(scale))
        history_out.append(host(history))
    options = {"fp8_format": fp8_format, "tensor": tensor, "margin": margin, "amax_history_len": history_len,
               "amax_compute_algo": algo}
    outputs = {"q": Out(np.stack(q_out)), "scale_inv": Out(np.stack(scale_inv_out)),
               "amax": Out(np.stack(amax_out)), "scale": Out(np.stack(scale_out)),
               "amax_history": Out(np.stack(history_out))}
    return Case(name, "fp8_delayed_scaling", options,
                {"x": x_all, "scale": init_scale, "amax_history": init_history}, outputs, note)


def fp8_cases():
    def steps(name, magnitudes, shape=(4, 16)):
        rng = rng_for(name)
        return [rng.uniform(-1, 1, shape).astype(F32) * F32(m) for m in magnitudes]

    layout = ("Steps stack along dim 0. Per step: q = fp8(clip(x * scale, -max, max)) with the scale before the "
              "step, scale_inv = 1 / that scale; then amax_history[0] = max|x|, amax, the new scale and the "
              "history after the roll.")
    cases = [delayed_scaling_case("e4m3_max_history4", steps("e4m3_max_history4", [0, 2, 5, 0.5, 0.25, 0.1, 3]),
                                  note=layout + " Step 0 is all zero (the scale stays 1); step 2 saturates.")]
    cases.append(delayed_scaling_case("e5m2_gradient_most_recent",
                                      steps("e5m2_gradient_most_recent", [1e-3, 40.0, 1e4, 7.0]), tensor="gradient",
                                      algo="most_recent", history_len=3, note=layout))
    cases.append(delayed_scaling_case("e4m3_margin2", steps("e4m3_margin2", [3.0, 100.0, 0.01, 1.0]),
                                      fp8_format="E4M3", margin=2, history_len=2, note=layout))
    x = steps("e4m3_inf_max", [1.0, 2.0, 0.5, 0.25, 0.125, 4.0])
    x[1][1, 3] = np.inf
    x[1][2, 5] = -np.inf
    cases.append(delayed_scaling_case(
        "e4m3_inf_max", x, history_len=3,
        note=layout + " Step 1 holds +-inf (quantized to +-448): while inf is in the history, 'max' keeps the "
                      "scale."))
    x = steps("e5m2_zero_inf_most_recent", [0.5, 0.0, 8.0, 1.0])
    x[2][0, 0] = -np.inf
    cases.append(delayed_scaling_case("e5m2_zero_inf_most_recent", x, fp8_format="E5M2", algo="most_recent",
                                      history_len=2,
                                      note=layout + " A zero step and an inf step each keep the scale."))
    cases.append(delayed_scaling_case("e4m3_bf16_input", [s.astype(BF16) for s in steps("e4m3_bf16_input",
                                                                                           [6.0, 0.3, 30.0])],
                                      dtype=BF16, history_len=1, note=layout + " bf16 x, scaled in f32."))

    def gemm(name, a_dtype, b_dtype, out_dtype):
        rng = rng_for(name)
        a, b = fp8_values(rng, (8, 64), a_dtype, 30.0), fp8_values(rng, (64, 6), b_dtype, 30.0)
        a_inv, b_inv = np.array(1 / 37.0, F32), np.array(2.0 ** -7 * 3, F32)
        acc = jax.lax.dot(jnp.asarray(a).astype(F32), jnp.asarray(b).astype(F32), precision=jax.lax.Precision.HIGHEST)
        out = (acc * (jnp.asarray(a_inv) * jnp.asarray(b_inv))).astype(out_dtype)
        ref = (to64(a) @ to64(b)) * (float(a_inv) * float(b_inv))
        return Case(name, "fp8_gemm", {"out_dtype": DTYPE_NAMES[np.dtype(out_dtype)]},
                    {"a": a, "b": b, "a_scale_inv": a_inv, "b_scale_inv": b_inv}, {"out": Out(out, ref)},
                    "out = (a . b accumulated in f32) * (a_scale_inv * b_scale_inv).")

    cases.append(gemm("fp8_gemm_e4m3_f32", E4M3, E4M3, F32))
    cases.append(gemm("fp8_gemm_e4m3_x_e5m2_bf16", E4M3, E5M2, BF16))
    return cases


# --- norms ---------------------------------------------------------------------------------------

def layer_norm(x, gamma, beta, eps, zero_centered, dtype):
    xc = x.astype(dtype)
    mean = jnp.mean(xc, axis=-1)
    centered = xc - mean[..., None]
    rsigma = 1 / jnp.sqrt(jnp.mean(centered * centered, axis=-1) + jnp.asarray(eps, dtype))
    g = gamma.astype(dtype) + (1 if zero_centered else 0)
    y = centered * rsigma[..., None] * g + beta.astype(dtype)
    return y.astype(x.dtype), mean, rsigma


def rms_norm(x, gamma, eps, dtype):
    xc = x.astype(dtype)
    rsigma = 1 / jnp.sqrt(jnp.mean(xc * xc, axis=-1) + jnp.asarray(eps, dtype))
    return (xc * rsigma[..., None] * gamma.astype(dtype)).astype(x.dtype), rsigma


def norm_case(name, kind, shape, dtype, eps=None, zero_centered=False, edit=None, note=None, explained=False):
    rng = rng_for(name)
    x = normal(rng, shape, F32, 2.0) + F32(0.5)
    if edit:
        edit(x)
    x = x.astype(dtype)
    hidden = shape[-1]
    gamma = normal(rng, (hidden,), dtype, 0.5 if zero_centered else 1.0)
    beta = normal(rng, (hidden,), dtype, 0.3)
    dy = normal(rng, shape, dtype)
    eps_value = 1e-6 if eps is None else eps
    args = [jnp.asarray(x), jnp.asarray(gamma)] + ([jnp.asarray(beta)] if kind == "layer_norm" else [])
    args64 = [jnp.asarray(to64(a)) for a in args]

    def forward(compute, *a):
        if kind == "layer_norm":
            return layer_norm(*a, eps_value, zero_centered, compute)
        return rms_norm(*a, eps_value, compute)

    results = forward(F32, *args)
    results64 = forward(F64, *args64)
    names = ("y", "mean", "rsigma") if kind == "layer_norm" else ("y", "rsigma")
    outputs = {n: Out(r, r64, explained=explained) for n, r, r64 in zip(names, results, results64)}
    grads = jax.vjp(lambda *a: forward(F32, *a)[0], *args)[1](jnp.asarray(dy))
    grads64 = jax.vjp(lambda *a: forward(F64, *a)[0], *args64)[1](jnp.asarray(to64(dy)))
    for n, g, g64 in zip(("dx", "dgamma", "dbeta"), grads, grads64):
        outputs[n] = Out(g, g64, explained=explained)
    options = {}
    if eps is not None:
        options["eps"] = eps
    if zero_centered:
        options["zero_centered_gamma"] = True
    inputs = {"x": x, "gamma": gamma, "beta": beta if kind == "layer_norm" else None, "dy": dy}
    return Case(name, kind, options, inputs, outputs, note)


def norms_cases():
    def constant_and_offset_rows(x):
        x[1] = 3.0
        x[2] = 100.0 + x[2] * 0.05

    def zero_row(x):
        x[1] = 0.0

    bf16 = "bf16 x, gamma, beta, dy: computed in f32, y and the gradients rounded to bf16."
    return [
        norm_case("layer_norm_f32", "layer_norm", (4, 64), F32),
        norm_case("layer_norm_zero_centered_f32", "layer_norm", (3, 48), F32, eps=1e-5, zero_centered=True),
        norm_case("layer_norm_bf16", "layer_norm", (4, 64), BF16, note=bf16),
        norm_case("layer_norm_zero_centered_bf16", "layer_norm", (2, 3, 32), BF16, zero_centered=True, note=bf16),
        norm_case("layer_norm_constant_and_offset_rows_f32", "layer_norm", (3, 40), F32, eps=1e-5,
                  edit=constant_and_offset_rows,
                  explained=True,
                  note="Row 1 is constant (var 0, rsigma = 1/sqrt(eps)); row 2 is 100 + 0.1 * noise, where "
                       "var = mean(x^2) - mean^2 would cancel; f32's rounding of the mean (about 1e-5) is "
                       "amplified by rsigma, which the tolerance allows."),
        norm_case("rms_norm_f32", "rms_norm", (4, 64), F32),
        norm_case("rms_norm_bf16", "rms_norm", (4, 64), BF16, note=bf16),
        norm_case("rms_norm_zero_row_f32", "rms_norm", (3, 40), F32, eps=1e-5, edit=zero_row,
                  note="Row 1 is zero: y = 0, rsigma = 1/sqrt(eps)."),
        norm_case("rms_norm_3d_f32", "rms_norm", (2, 2, 48), F32),
    ]


# --- collectives ---------------------------------------------------------------------------------

DEVICES = None


def on_ranks(world, fn, x):
    """fn run by every rank of `world` under pmap; x and the result stack the ranks along dim 0."""
    return host(jax.pmap(fn, axis_name="r", devices=DEVICES[:world])(jnp.asarray(x)))


def collective_case(name, op, world, x, fn, options, reference, note=None):
    out = on_ranks(world, fn, x)
    exact = np.issubdtype(out.dtype, np.integer) or op == "all_gather" or options.get("op") in ("max", "min")
    entry = Out(out) if exact else Out(out, reference)
    if exact:
        assert np.array_equal(out, reference)
    return Case(name, op, {"world_size": world, **options}, {"x": x}, {"out": entry},
                "x and out stack every rank's tensor along dim 0." + (" " + note if note else ""))


def host_groups(world, groups):
    return groups if groups else [list(range(world))]


def host_reduce_scatter(x, groups, dim, tiled):
    """SEMANTICS.md's reduce_scatter in float64: x (world, ...) -> (world, ...)."""
    world = x.shape[0]
    out = [None] * world
    for g in host_groups(world, groups):
        total = sum(to64(x[r]) for r in g)
        chunks = np.split(total, len(g), axis=dim)
        for p, r in enumerate(g):
            out[r] = chunks[p] if tiled else np.squeeze(chunks[p], axis=dim)
    return np.stack(out)


def host_all_gather(x, groups, axis, tiled):
    world = x.shape[0]
    out = [None] * world
    for g in host_groups(world, groups):
        parts = [to64(x[r]) for r in g]
        gathered = np.concatenate(parts, axis=axis) if tiled else np.stack(parts, axis=axis)
        for r in g:
            out[r] = gathered
    return np.stack(out)


def host_all_reduce(x, groups, op):
    world = x.shape[0]
    out = [None] * world
    for g in host_groups(world, groups):
        parts = np.stack([to64(x[r]) for r in g])
        value = {"sum": parts.sum(0), "max": parts.max(0), "min": parts.min(0), "average": parts.mean(0)}[op]
        for r in g:
            out[r] = value
    return np.stack(out)


def collectives_cases():
    global DEVICES
    DEVICES = jax.devices("cpu")
    assert len(DEVICES) >= 8, "needs 8 host devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)"
    cases = []

    def reduce_scatter(name, world, x, dim, tiled, groups=None, note=None):
        jax_dim = dim % (x.ndim - 1)  # jax.lax.psum_scatter does not lower a negative scatter_dimension
        fn = lambda v: jax.lax.psum_scatter(v, "r", scatter_dimension=jax_dim, tiled=tiled,  # noqa: E731
                                            axis_index_groups=groups)
        options = {"scatter_dimension": dim, "tiled": tiled}
        if groups:
            options["groups"] = groups
        cases.append(collective_case(name, "reduce_scatter", world, x, fn, options,
                                     host_reduce_scatter(x, groups, jax_dim, tiled), note))

    x = np.arange(16, dtype=F32).reshape(4, 4)
    reduce_scatter("reduce_scatter_semantics_example", 4, x, 0, True, [[0, 2], [3, 1]],
                   note="SEMANTICS.md's example: rank i holds row i of arange(16).reshape(4, 4).")
    rng = rng_for("reduce_scatter_untiled_f32")
    reduce_scatter("reduce_scatter_untiled_f32", 4, normal(rng, (4, 4, 3), F32), 0, False)
    rng = rng_for("reduce_scatter_groups_negative_dim_f32")
    reduce_scatter("reduce_scatter_groups_negative_dim_f32", 8, normal(rng, (8, 3, 8), F32), -1, True,
                   [[7, 1, 4, 2], [0, 3, 6, 5]],
                   note="jax computed it with scatter_dimension 1: psum_scatter rejects a negative one.")
    rng = rng_for("reduce_scatter_dim1_i32")
    reduce_scatter("reduce_scatter_dim1_i32", 8, rng.integers(-1000, 1000, (8, 2, 16, 3)).astype(I32), 1, True)
    rng = rng_for("reduce_scatter_untiled_groups_dim1_f32")
    reduce_scatter("reduce_scatter_untiled_groups_dim1_f32", 8, normal(rng, (8, 3, 2, 2), F32), 1, False,
                   [[1, 0], [2, 3], [5, 4], [6, 7]])

    def all_gather(name, world, x, axis, tiled, groups=None, note=None):
        fn = lambda v: jax.lax.all_gather(v, "r", axis=axis, tiled=tiled, axis_index_groups=groups)  # noqa: E731
        options = {"axis": axis, "tiled": tiled}
        if groups:
            options["groups"] = groups
        host_axis = axis if axis >= 0 else axis + (x.ndim - 1) + (0 if tiled else 1)
        cases.append(collective_case(name, "all_gather", world, x, fn, options,
                                     host_all_gather(x, groups, host_axis, tiled), note))

    rng = rng_for("all_gather_untiled_f32")
    all_gather("all_gather_untiled_f32", 4, normal(rng, (4, 3), F32), 0, False)
    rng = rng_for("all_gather_tiled_axis1_groups_f32")
    all_gather("all_gather_tiled_axis1_groups_f32", 8, normal(rng, (8, 2, 3), F32), 1, True,
               [[3, 0, 1, 2], [4, 7, 6, 5]])
    rng = rng_for("all_gather_untiled_axis_minus1_i32")
    all_gather("all_gather_untiled_axis_minus1_i32", 4, rng.integers(-50, 50, (4, 2, 3)).astype(I32), -1, False,
               note="Untiled: the new axis of size 4 is the result's last.")

    def all_reduce(name, world, x, op, groups=None):
        fn = {"sum": jax.lax.psum, "max": jax.lax.pmax, "min": jax.lax.pmin, "average": jax.lax.pmean}[op]
        options = {"op": op}
        if groups:
            options["groups"] = groups
        cases.append(collective_case(name, "all_reduce", world, x,
                                     lambda v: fn(v, "r", axis_index_groups=groups), options,
                                     host_all_reduce(x, groups, op)))

    rng = rng_for("all_reduce_sum_f32")
    all_reduce("all_reduce_sum_f32", 4, normal(rng, (4, 2, 5), F32), "sum")
    rng = rng_for("all_reduce_max_groups_f32")
    all_reduce("all_reduce_max_groups_f32", 8, normal(rng, (8, 6), F32), "max", [[0, 4], [1, 5], [2, 6], [3, 7]])
    rng = rng_for("all_reduce_min_i32")
    all_reduce("all_reduce_min_i32", 4, rng.integers(-99, 99, (4, 7)).astype(I32), "min")
    rng = rng_for("all_reduce_average_groups_f32")
    all_reduce("all_reduce_average_groups_f32", 8, normal(rng, (8, 4), F32), "average",
               [[6, 2, 0, 4], [1, 7, 3, 5]])
    return cases


# --- files ---------------------------------------------------------------------------------------

FAMILIES = {
    "attention": (attention_cases, "jax.nn.dot_product_attention(implementation='xla') on the CPU; lse computed in "
                  "f32 from the same logits; dq, dk, dv by jax.vjp with the input dout."),
    "scaled_dot": (lambda: scaled_dot_cases() + mx_quantize_cases(),
                   "jax.lax.scaled_dot on the CPU; mx_quantize by jax's own mxfp8 quantizer "
                   "(jax._src.cudnn.scaled_matmul_stablehlo.quantize with get_scaled_dot_general_config('mxfp8'))."),
    "int8": (int8_cases, "FJFormer bits.py's quant_int8, matmul_true_int8, q_matmul_int8 and matmul, written in "
             "jax.numpy, on the CPU."),
    "fp8": (fp8_cases, "Transformer Engine's delayed scaling as SEMANTICS.md states it, in jax.numpy at f32 with "
            "ml_dtypes' fp8 casts; FP8 GEMM by jax.lax.dot at f32."),
    "norms": (norms_cases, "LayerNorm / RMSNorm as SEMANTICS.md states them, in jax.numpy at f32; gradients by "
              "jax.vjp with the input dy."),
    "collectives": (collectives_cases, "jax.lax.psum_scatter, all_gather, psum, pmax, pmin, pmean under jax.pmap "
                    "with axis_index_groups on 8 host CPU devices."),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("families", nargs="*", help=f"some of {' '.join(FAMILIES)} (default: all)")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: %(default)s)")
    args = parser.parse_args()
    unknown = set(args.families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {' '.join(FAMILIES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for family in args.families or FAMILIES:
        make, description = FAMILIES[family]
        cases = make()
        text = file_text(family, description, cases)
        check_round_trip(text, cases)
        path = args.out / f"{family}.json"
        path.write_text(text)
        worst = max((o.relative_error for c in cases for o in c.outputs.values() if hasattr(o, "relative_error")),
                    default=0.0)
        print(f"{path}: {len(cases)} cases, {len(text)} bytes; largest JAX error beyond rtol vs float64 "
              f"{worst:.2g} of the largest |value|", file=sys.stderr)


if __name__ == "__main__":
    main()
