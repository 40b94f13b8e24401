// The ops users write kernels with. Each call appends typed IR to the kernel being traced
// (see dsl/kernel.h) and checks its operands, throwing tilejit::Error with the op, the
// shapes / dtypes and the user's file:line on misuse. Semantics follow Triton's
// programming model with numpy broadcasting; no implicit dtype promotion between tiles (cast
// explicitly); C++ numbers take the dtype of the tile they meet (fp8 / e8m0: none, cast f32).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dsl/tile.h"

namespace tilejit::dsl {

using Loc = std::source_location;

// --- ids, constants, index tiles -------------------------------------------------------
Tile program_id(int axis, Loc loc = Loc::current());    // i32 scalar; axis 0, 1 or 2
Tile num_programs(int axis, Loc loc = Loc::current());  // i32 scalar
Tile arange(int64_t start, int64_t end, Loc loc = Loc::current());  // i32 tile, end-start a power of two
Tile full(const Shape& shape, double value, DType dtype, Loc loc = Loc::current());
Tile zeros(const Shape& shape, DType dtype, Loc loc = Loc::current());
Tile scalar(double value, DType dtype, Loc loc = Loc::current());

// --- shapes ----------------------------------------------------------------------------
Tile broadcast_to(const Tile& x, const Shape& shape, Loc loc = Loc::current());
Tile expand_dims(const Tile& x, int axis, Loc loc = Loc::current());
Tile reshape(const Tile& x, const Shape& shape, Loc loc = Loc::current());
Tile trans(const Tile& x, std::vector<int64_t> perm = {1, 0}, Loc loc = Loc::current());

// --- arithmetic, comparisons, logic (numpy broadcasting) --------------------------------
// Integer division truncates toward zero and % takes the dividend's sign, as in C; float % is
// C's fmod (exact). Shift amounts are read as unsigned: past the width, a << n is 0 and a >> n
// is a's sign (0 or -1), as on the GPU.
// A pointer plus an integer tile is a tile of pointers (element offsets, not bytes).
Tile operator+(const Operand& a, const Operand& b);
Tile operator-(const Operand& a, const Operand& b);
Tile operator*(const Operand& a, const Operand& b);
Tile operator/(const Operand& a, const Operand& b);
Tile operator%(const Operand& a, const Operand& b);
Tile operator&(const Operand& a, const Operand& b);
Tile operator|(const Operand& a, const Operand& b);
Tile operator^(const Operand& a, const Operand& b);
Tile operator<<(const Operand& a, const Operand& b);
Tile operator>>(const Operand& a, const Operand& b);  // arithmetic shift
Tile operator&&(const Operand& a, const Operand& b);  // i1 only
Tile operator||(const Operand& a, const Operand& b);  // i1 only
Tile operator==(const Operand& a, const Operand& b);
Tile operator!=(const Operand& a, const Operand& b);
Tile operator<(const Operand& a, const Operand& b);
Tile operator<=(const Operand& a, const Operand& b);
Tile operator>(const Operand& a, const Operand& b);
Tile operator>=(const Operand& a, const Operand& b);
Tile operator-(const Operand& a);
Tile operator!(const Operand& a);  // i1 only
Tile operator~(const Operand& a);  // integers
Tile minimum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tile maximum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tile where(const Operand& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());
Tile cdiv(const Operand& a, const Operand& b, Loc loc = Loc::current());  // ceil(a / b) for a >= 0, b > 0
Tile fma(const Operand& a, const Operand& b, const Operand& c, Loc loc = Loc::current());

// --- math (floating point; f16 / bf16 are computed in f32) -------------------------------
Tile abs(const Tile& x, Loc loc = Loc::current());
Tile exp(const Tile& x, Loc loc = Loc::current());
Tile exp2(const Tile& x, Loc loc = Loc::current());
// exp2 with results below 2^-126 (f32's smallest normal) flushed to 0: one instruction on the
// GPU (ex2.approx.ftz.f32) where exp2 takes four. For weights that are summed with ones of
// size 1 (a softmax's), where what the flush drops is below f32's resolution anyway.
Tile exp2_flushing_subnormals(const Tile& x, Loc loc = Loc::current());
Tile log(const Tile& x, Loc loc = Loc::current());
Tile log2(const Tile& x, Loc loc = Loc::current());
Tile sqrt(const Tile& x, Loc loc = Loc::current());
Tile rsqrt(const Tile& x, Loc loc = Loc::current());
Tile sin(const Tile& x, Loc loc = Loc::current());
Tile cos(const Tile& x, Loc loc = Loc::current());
Tile tanh(const Tile& x, Loc loc = Loc::current());
Tile erf(const Tile& x, Loc loc = Loc::current());
// The nearest integer, ties to even (IEEE roundeven), as a float.
Tile rint(const Tile& x, Loc loc = Loc::current());
Tile sigmoid(const Tile& x, Loc loc = Loc::current());

// --- conversions -------------------------------------------------------------------------
// Round to nearest even. With saturate, fp8 results clamp to the format's largest finite
// value instead of becoming NaN / inf. float -> int truncates and saturates (NaN -> 0).
// e8m0 encodes the nearest power of two (ties to the even exponent; zero, negatives and
// NaN encode 0xff) and decodes to 2^(byte-127).
Tile cast(const Tile& x, DType to, bool saturate = false, Loc loc = Loc::current());
Tile bitcast(const Tile& x, DType to, Loc loc = Loc::current());  // same bit width

// --- memory ------------------------------------------------------------------------------
// Masked-off lanes read `other` (0 by default; zero bits for fp8 / e8m0), touching no memory.
Tile load(const Tile& ptr, Loc loc = Loc::current());
Tile load(const Tile& ptr, const Tile& mask, Loc loc = Loc::current());
Tile load(const Tile& ptr, const Tile& mask, const Operand& other, Loc loc = Loc::current());
// The value and mask broadcast to the pointer's shape; one with more elements than the pointer
// is an error (it would store several values to one address).
void store(const Tile& ptr, const Operand& value, Loc loc = Loc::current());
void store(const Tile& ptr, const Operand& value, const Tile& mask, Loc loc = Loc::current());
// The block of a TensorDesc's tensor whose first element is at `offsets` (one i32 per dim of
// the tensor, any value; the last two: row, column): a (rows, columns) tile of the
// descriptor's block, elements outside the tensor reading 0. On sm_90 TMA copies it where the
// column is a whole number of 16 bytes (the GPU faults on any other), tested at run time
// unless the compiler proves it; global loads take the others. A loop pipeline stages by TMA
// only blocks whose column is proven so (a multiple of the loop's step, of a specialized
// argument, ...).
Tile desc_load(const Tile& desc, const std::vector<Operand>& offsets, Loc loc = Loc::current());
// The same, promising that every CTA of the thread-block cluster whose place in it differs
// from this CTA's along cluster axis `axis` only (0: x, 1: y, 2: z) loads this same block at
// the same point of the same loop iterations. A pipeline fed by a producer warpgroup then
// copies the block once for all of them (TMA multicast), each CTA fetching its share of the
// rows: the block's rows must split evenly into shares of a multiple of 8 rows. All
// cluster-shared loads of one descriptor name the same axis.
struct ClusterShared {
  int axis = 0;
};
Tile desc_load(const Tile& desc, const std::vector<Operand>& offsets, ClusterShared shared, Loc loc = Loc::current());
// Writes `block` (a (rows, columns) tile of the descriptor's block and dtype) to the
// TensorDesc's tensor at `offsets` (as desc_load's); elements outside the tensor are not written. On
// sm_90 the block leaves through shared memory by TMA (at a column of whole 16 bytes, as
// desc_load's), asynchronously: later kernels see it, a load of the same elements later in
// this kernel may not.
void desc_store(const Tile& desc, const std::vector<Operand>& offsets, const Tile& block, Loc loc = Loc::current());
// Atomics on global memory (relaxed, device scope); each returns the old values.
Tile atomic_add(const Tile& ptr, const Operand& value, Loc loc = Loc::current());
Tile atomic_add(const Tile& ptr, const Operand& value, const Tile& mask, Loc loc = Loc::current());
Tile atomic_max(const Tile& ptr, const Operand& value, Loc loc = Loc::current());
Tile atomic_max(const Tile& ptr, const Operand& value, const Tile& mask, Loc loc = Loc::current());
Tile atomic_cas(const Tile& ptr, const Operand& compare, const Operand& value, Loc loc = Loc::current());

// --- reductions --------------------------------------------------------------------------
// argmax / argmin return i32 indices; ties pick the smallest index.
Tile sum(const Tile& x, int axis, bool keepdims = false, Loc loc = Loc::current());
Tile max(const Tile& x, int axis, bool keepdims = false, Loc loc = Loc::current());
Tile min(const Tile& x, int axis, bool keepdims = false, Loc loc = Loc::current());
Tile argmax(const Tile& x, int axis, bool keepdims = false, Loc loc = Loc::current());
Tile argmin(const Tile& x, int axis, bool keepdims = false, Loc loc = Loc::current());

// --- matrix product ----------------------------------------------------------------------
// dot(a (M,K), b (K,N), acc (M,N)) = a @ b + acc. Accumulates in f32 (i32 for i8 inputs),
// except that fp8 products on the tensor cores (sm_89, sm_90) are summed the hardware's way:
// each is cut to 13 fraction bits of the largest addend, acc included, so a loop that chains
// every K step into acc drifts as the sum grows; one that needs an f32 sum adds each block's
// product, acc + dot(a, b) (ops/common/f32_dot.h).
enum class Precision { tf32, ieee, tf32x3 };  // for f32 inputs; tf32 is the default
Tile dot(const Tile& a, const Tile& b, const Tile& acc, Precision precision = Precision::tf32,
         Loc loc = Loc::current());
Tile dot(const Tile& a, const Tile& b, Loc loc = Loc::current());
// `product` itself, where a dot's result is waited for only once `ready` is computed: on
// sm_90a a dot's tensor-core group runs on until an op uses its result, and ptxas would
// otherwise move that wait up past the ops in between (it places it where its latency model
// expects the group done). wait_after(acc, l) keeps attention's exponentials (l, the row sums,
// needs them all) running while its p · v does. No effect where nothing runs asynchronously.
Tile wait_after(const Tile& product, const Tile& ready, Loc loc = Loc::current());
// `x` itself, where the ops that compute x run once per element (in the default layout, each
// element in one thread) and x then moves to the threads that use it, instead of each of those
// threads computing its copies. For a vector decoded at some cost and broadcast over a tile
// (scaled_dot's column scales over a wgmma accumulator: 32 columns in each of 256 threads).
Tile once_per_element(const Tile& x, Loc loc = Loc::current());

// --- control flow ------------------------------------------------------------------------
// for i in range(lb, ub, step) with loop-carried tiles: the body receives the induction
// variable and the carried values and returns their next values (same types). The step must
// be positive (a literal one is checked; a tile's is the kernel's to guarantee: a step of 0
// never ends), and i + step must not pass the bounds' integer type.
using LoopBody = std::function<std::vector<Tile>(Tile, std::vector<Tile>)>;
std::vector<Tile> for_range(const Operand& lb, const Operand& ub, const Operand& step,
                            std::vector<Tile> init, const LoopBody& body, Loc loc = Loc::current());
Tile for_range(const Operand& lb, const Operand& ub, const Operand& step, const Tile& init,
               const std::function<Tile(Tile, Tile)>& body, Loc loc = Loc::current());
void for_range(const Operand& lb, const Operand& ub, const Operand& step,
               const std::function<void(Tile)>& body, Loc loc = Loc::current());
// if / else on an i1 scalar; both branches return values of the same types.
using BranchBody = std::function<std::vector<Tile>()>;
std::vector<Tile> if_else(const Tile& cond, const BranchBody& then_body, const BranchBody& else_body,
                          Loc loc = Loc::current());
void if_then(const Tile& cond, const std::function<void()>& then_body, Loc loc = Loc::current());

// --- debugging ---------------------------------------------------------------------------
void print(const std::string& prefix, const std::vector<Tile>& values, Loc loc = Loc::current());
// A compile-time assertion on constants: throws tilejit::Error at trace time.
void static_check(bool condition, const std::string& message, Loc loc = Loc::current());

}  // namespace tilejit::dsl
