#include "ops/gemm/gemm_kernels.h"

#include "dsl/builder.h"
#include "ops/common/f32_dot.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm/gemm_epilogue.h"
#include "ops/gemm/matrix_argument.h"

#include <optional>

namespace tilejit::ops::gemm_detail {
namespace {

using namespace tilejit::dsl;

void add_sizes(NamedArguments& args, const GemmProblem& p, bool with_k) {
  args.add("M", static_cast<int32_t>(p.m));
  args.add("N", static_cast<int32_t>(p.n));
  if (with_k) args.add("K", static_cast<int32_t>(p.k));
}

// An operand: its tensor descriptor and the descriptor rows between batches where it has one,
// else its pointer and strides.
void add_operand(NamedArguments& args, const std::string& name, const Tensor& t, const MatrixStrides& s,
                 const std::optional<OperandDescriptor>& d) {
  if (!d) return add_matrix_argument(args, name, t, s);
  args.add(name, d->descriptor);
  args.add(name + "_batch_rows", static_cast<int32_t>(d->batch_rows));
}

// The workspace of partial sums as a (batch, M, N) matrix of one slice.
MatrixStrides workspace_strides(const GemmProblem& p) { return {p.m * p.n, p.n, 1}; }

// The main kernel's constants (a config sets them), with their defaults.
std::vector<ConstantDecl> main_constants() {
  return {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"GROUP_M", 8},   {"SPLIT_K", 1},
          {"num_warps", 8},  {"num_stages", 1}, {"A_TRANSPOSED", 0}, {"B_TRANSPOSED", 0}, {"warp_specialize", 0},
          {"PERSISTENT", 0}, {"cluster_x", 1}};
}

}  // namespace

NamedArguments main_arguments(const GemmProblem& p, const GemmOperands& operands, const Tensor* workspace) {
  NamedArguments args;
  add_operand(args, "a", *p.a, p.a_strides, operands.a);
  add_operand(args, "b", *p.b, p.b_strides, operands.b);
  if (workspace) {
    TJ_CHECK(!operands.out);  // the slices are not the output (gemm_operands.h)
    add_matrix_argument(args, "out", *workspace, workspace_strides(p));
    args.add("out_slice_stride", p.batch * p.m * p.n);
  } else {
    if (operands.out) args.add("out", *operands.out);
    else add_matrix_argument(args, "out", *p.out, p.out_strides);
    add_epilogue_arguments(p, args);
  }
  add_sizes(args, p, true);
  return args;
}

Kernel main_kernel(const GemmFeatures& f, bool writes_workspace, std::vector<ir::Param> params) {
  return define_op_kernel(
      writes_workspace ? "gemm_partial" : "gemm", params, main_constants(),
      [f, writes_workspace, params](const Constants& c, std::span<const Tile> tiles) {
        NamedTiles in(params, tiles);
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"], group = c["GROUP_M"];
        const Tile &M = in["M"], &N = in["N"], &K = in["K"];

        // Tile rows in whole clusters (GemmConfig::cluster_m): a cluster's CTAs take
        // neighbouring tiles of one tile column, as GROUP_M's order gives them.
        int64_t cluster = c["cluster_x"];
        TJ_CHECK(group % cluster == 0);
        Tile tiles_m = cdiv(cdiv(M, bm), cluster) * cluster, tiles_n = cdiv(N, bn);
        Tile batch = cast(program_id(1), DType::i64);

        // This program's slice of K: whole BLOCK_K steps, the last slice takes the rest.
        Tile steps = cdiv(cdiv(K, bk), c["SPLIT_K"]) * bk;
        Tile k_begin = program_id(2) * steps;
        Tile k_end = minimum(K, k_begin + steps);
        Tile ks = arange(0, bk);  // (BLOCK_K)

        // Output tile `pid` of the batch's: tiles in groups of GROUP_M tile rows, column by
        // column within a group.
        auto output_tile = [&](const Tile& pid) {
          Tile group_size = tiles_n * group;
          Tile first_m = pid / group_size * group;
          Tile group_rows = minimum(tiles_m - first_m, group);
          Tile tile_m = first_m + pid % group_size % group_rows;
          Tile tile_n = pid % group_size / group_rows;

          Tile rows = tile_m * bm + arange(0, bm);  // (BLOCK_M)
          Tile cols = tile_n * bn + arange(0, bn);  // (BLOCK_N)
          // An operand whose memory runs along K the other way (A stored (K, M), B stored (N, K))
          // is read in that order, so that its reads are contiguous, and multiplied as its
          // transpose. Through a descriptor, TMA zero-fills past the tensor's edges (rows past
          // M or N of stacked batches read the next batch, never stored; K past the end reads
          // zeros, gemm_operands.h). Through pointers, rows and columns past the edge read a
          // valid row / column again (never stored), so only K needs a mask.
          bool a_t = c["A_TRANSPOSED"], b_t = c["B_TRANSPOSED"];
          // A descriptor's rows stack the batches: this batch's first row.
          auto first_row = [&](const char* name) { return program_id(1) * in[std::string(name) + "_batch_rows"]; };
          bool a_desc = in.has("a_batch_rows"), b_desc = in.has("b_batch_rows");
          std::optional<Tile> a_ptrs, b_ptrs;
          if (a_desc)
            TJ_CHECK(in["a"].shape() == (a_t ? std::vector<int64_t>{bk, bm} : std::vector<int64_t>{bm, bk}));
          else
            a_ptrs = a_t ? transposed_matrix_pointers(in, "a", batch, rows % M, ks)  // (BLOCK_K, BLOCK_M)
                         : matrix_pointers(in, "a", batch, rows % M, ks);           // (BLOCK_M, BLOCK_K)
          if (b_desc)
            TJ_CHECK(in["b"].shape() == (b_t ? std::vector<int64_t>{bn, bk} : std::vector<int64_t>{bk, bn}));
          else
            b_ptrs = b_t ? transposed_matrix_pointers(in, "b", batch, ks, cols % N)  // (BLOCK_N, BLOCK_K)
                         : matrix_pointers(in, "b", batch, ks, cols % N);           // (BLOCK_K, BLOCK_N)
          auto a_tile = [&](const Tile& k, const Tile& k_in) {  // (BLOCK_M, BLOCK_K)
            if (a_desc) {
              // The batch's first row is along K when A is stored (K, M).
              Tile row = tile_m * bm;
              return a_t ? trans(desc_load(in["a"], {first_row("a") + k, row}))
                         : desc_load(in["a"], {first_row("a") + row, k});
            }
            Tile at_k = *a_ptrs + k * in["a_col_stride"];
            return a_t ? trans(load(at_k, expand_dims(k_in, 1))) : load(at_k, expand_dims(k_in, 0));
          };
          auto b_tile = [&](const Tile& k, const Tile& k_in) {  // (BLOCK_K, BLOCK_N)
            if (b_desc) {
              Tile col = tile_n * bn;
              // The same block for the cluster's CTAs, which share the tile column.
              return b_t ? trans(desc_load(in["b"], {first_row("b") + col, k}, ClusterShared{0}))
                         : desc_load(in["b"], {first_row("b") + k, col}, ClusterShared{0});
            }
            Tile at_k = *b_ptrs + k * in["b_row_stride"];
            return b_t ? trans(load(at_k, expand_dims(k_in, 0))) : load(at_k, expand_dims(k_in, 1));
          };
          Tile acc = for_range(k_begin, k_end, bk, zeros({bm, bn}, f.accumulator()), [&](Tile k, Tile acc) {
            Tile k_in = ks + k < k_end;  // (BLOCK_K)
            Tile a = a_tile(k, k_in), b = b_tile(k, k_in);
            return f.fast_accumulation ? dot(a, b, acc, f.precision) : f32_dot(a, b, acc, f.precision);  // (BLOCK_M, BLOCK_N)
          });

          Tile in_bounds = expand_dims(rows < M, 1) && expand_dims(cols < N, 0);  // (BLOCK_M, BLOCK_N)
          if (in["out"].type().descriptor) {  // one matrix, clipped at its edges (gemm_operands.h)
            desc_store(in["out"], {tile_m * bm, tile_n * bn}, apply_epilogue(f, in, acc, batch, rows, cols, in_bounds));
            return;
          }
          Tile out_ptrs = matrix_pointers(in, "out", batch, rows, cols);
          if (writes_workspace) {
            store(out_ptrs + cast(program_id(2), DType::i64) * in["out_slice_stride"], acc, in_bounds);
          } else {
            store(out_ptrs, apply_epilogue(f, in, acc, batch, rows, cols, in_bounds), in_bounds);
          }
        };
        // A persistent launch has fewer programs than tiles (about one per multiprocessor):
        // each takes every num_programs-th tile, so the programs running at once still work
        // on neighbouring groups.
        if (c["PERSISTENT"]) for_range(program_id(0), tiles_m * tiles_n, num_programs(0), output_tile);
        else output_tile(program_id(0));
      });
}

NamedArguments reduction_arguments(const GemmProblem& p, const Tensor& workspace) {
  NamedArguments args;
  add_matrix_argument(args, "partials", workspace, workspace_strides(p));
  args.add("slice_stride", p.batch * p.m * p.n);
  add_matrix_argument(args, "out", *p.out, p.out_strides);
  add_epilogue_arguments(p, args);
  add_sizes(args, p, false);
  return args;
}

Kernel reduction_kernel(const GemmFeatures& f, std::vector<ir::Param> params) {
  return define_op_kernel(
      "gemm_split_k_sum", params, {{"BLOCK_M", 32}, {"BLOCK_N", 64}, {"SPLIT_K", 2}, {"num_warps", 4}},
      [f, params](const Constants& c, std::span<const Tile> tiles) {
        NamedTiles in(params, tiles);
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"];
        const Tile &M = in["M"], &N = in["N"];
        Tile tiles_n = cdiv(N, bn);
        Tile rows = program_id(0) / tiles_n * bm + arange(0, bm);  // (BLOCK_M)
        Tile cols = program_id(0) % tiles_n * bn + arange(0, bn);  // (BLOCK_N)
        Tile batch = cast(program_id(1), DType::i64);
        Tile in_bounds = expand_dims(rows < M, 1) && expand_dims(cols < N, 0);  // (BLOCK_M, BLOCK_N)
        Tile ptrs = matrix_pointers(in, "partials", batch, rows, cols);
        // Slices summed in order: the result does not depend on the schedule.
        Tile acc = for_range(0, c["SPLIT_K"], 1, zeros({bm, bn}, f.accumulator()), [&](Tile slice, Tile acc) {
          return acc + load(ptrs + cast(slice, DType::i64) * in["slice_stride"], in_bounds);
        });
        Tile out_ptrs = matrix_pointers(in, "out", batch, rows, cols);
        store(out_ptrs, apply_epilogue(f, in, acc, batch, rows, cols, in_bounds), in_bounds);
      });
}

}  // namespace tilejit::ops::gemm_detail
