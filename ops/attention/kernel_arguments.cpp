// Host side of the attention kernels' arguments (kernel_arguments.h).
#include "ops/attention/kernel_arguments.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>

namespace tilejit::ops::attention_detail {
namespace {

bool has_positive_scale(const AttentionProblem& p) { return p.scale > 0 && std::isfinite(p.scale); }

// The pointer `name` and its strides name_SUFFIX.
void add_strided(NamedArguments& args, const std::string& name, const Tensor& t,
                 std::initializer_list<std::pair<const char*, int64_t>> strides) {
  args.add(name, t);
  for (auto [suffix, stride] : strides) args.add(name + "_" + suffix, stride);
}

void add_broadcast_operand(NamedArguments& args, const std::string& name, const Tensor& t,
                           const BroadcastStrides& s) {
  add_strided(args, name, t, {{"batch", s.batch}, {"head", s.head}, {"query", s.query}, {"key", s.key}});
}

}  // namespace

void add_sequence_operand(NamedArguments& args, const std::string& name, const Tensor& t,
                          const SequenceStrides& strides) {
  add_strided(args, name, t, {{"batch", strides.batch}, {"seq", strides.seq}, {"head", strides.head}});
}

std::optional<TensorDescriptor> sequence_descriptor(const AttentionProblem& p, const Tensor& t,
                                                    const SequenceStrides& strides, int64_t length, int64_t heads,
                                                    int64_t block_rows, int64_t head_chunk, const DeviceInfo& device) {
  if (device.cc_major < 9 || dtype_storage_bytes(t.dtype()) != 2) return std::nullopt;
  // A dim of one index has no stride of its own (a (T, N, H) operand's batch): any valid one.
  auto stride = [&](int64_t size, int64_t s) { return size == 1 ? strides.seq : s; };
  TensorDescriptor d{t.data(), t.dtype(), {length, p.head_dim}, strides.seq, {block_rows, head_chunk},
                     {{p.batch, stride(p.batch, strides.batch)}, {heads, stride(heads, strides.head)}},
                     &t.device()};
  if (!d.problem().empty()) return std::nullopt;
  return d;
}

void add_sequence_blocks(NamedArguments& args, const std::string& name, const Tensor& t,
                         const SequenceStrides& strides, std::optional<TensorDescriptor> descriptor) {
  if (descriptor) args.add_owned(name, std::move(*descriptor));
  else add_sequence_operand(args, name, t, strides);
}

SequenceStrides contiguous_sequence_strides(const std::vector<int64_t>& shape) {
  size_t r = shape.size();
  int64_t head = shape[r - 1], seq = shape[r - 2] * head;
  return {r == 4 ? shape[1] * seq : 0, seq, head};
}

NamedArguments common_arguments(const AttentionProblem& p) {
  NamedArguments args;
  args.add("T", static_cast<int32_t>(p.q_len));
  args.add("S", static_cast<int32_t>(p.kv_len));
  args.add("N", static_cast<int32_t>(p.heads));
  args.add("G", static_cast<int32_t>(p.group()));
  // A positive scale comes under a name of its own: the kernels then fold it (kernel_tiles.h).
  args.add(has_positive_scale(p) ? "positive_scale" : "scale", p.scale);
  if (p.band) {
    args.add("band_left", static_cast<int32_t>(p.band_left));
    args.add("band_right", static_cast<int32_t>(p.band_right));
  }
  if (p.q_seqlens) args.add("q_seqlens", *p.q_seqlens);
  if (p.kv_seqlens) args.add("kv_seqlens", *p.kv_seqlens);
  if (p.bias) add_broadcast_operand(args, "bias", *p.bias, p.bias_strides);
  if (p.mask) add_broadcast_operand(args, "mask", *p.mask, p.mask_strides);
  return args;
}

std::string features_key(const AttentionProblem& p) {
  return fmt::format("{}/bias_{}/mask{}/band{}/qlens{}/kvlens{}/positive_scale{}", dtype_name(p.dtype),
                     p.bias ? dtype_name(p.bias->dtype()) : "none", p.mask.has_value(), p.band,
                     p.q_seqlens.has_value(), p.kv_seqlens.has_value(), has_positive_scale(p));
}

}  // namespace tilejit::ops::attention_detail
