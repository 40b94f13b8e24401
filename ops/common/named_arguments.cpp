#include "ops/common/named_arguments.h"

#include "dsl/error.h"

namespace tilejit::ops {

void NamedArguments::add(std::string name, const KernelArg& value) {
  names_.push_back(std::move(name));
  values_.push_back(value);
}

void NamedArguments::add_owned(std::string name, TensorDescriptor descriptor) {
  descriptors_.push_back(std::make_shared<const TensorDescriptor>(std::move(descriptor)));
  add(std::move(name), KernelArg(*descriptors_.back()));
}

std::string NamedArguments::signature() const {
  std::string out;
  for (size_t i = 0; i < names_.size(); ++i) out += (i ? "," : "") + names_[i] + ":" + param_type(i).str();
  return out;
}

std::vector<ir::Param> NamedArguments::params() const {
  std::vector<ir::Param> params;
  for (size_t i = 0; i < names_.size(); ++i) params.push_back(ir::Param{names_[i], param_type(i), {}});
  return params;
}

ir::Type NamedArguments::param_type(size_t i) const {
  const KernelArg& v = values_[i];
  switch (v.kind()) {
    case KernelArg::Kind::pointer: return ir::Type::pointer_to(v.dtype());
    case KernelArg::Kind::i32: return ir::Type::scalar(DType::i32);
    case KernelArg::Kind::i64: return ir::Type::scalar(DType::i64);
    case KernelArg::Kind::f32: return ir::Type::scalar(DType::f32);
    case KernelArg::Kind::tensor_descriptor: return ir::Type::descriptor_of(v.dtype());
    case KernelArg::Kind::untyped_pointer: break;
  }
  fail("kernel argument {} has no element type", names_[i]);
}

NamedTiles::NamedTiles(const std::vector<ir::Param>& params, std::span<const dsl::Tile> tiles)
    : params_(params), tiles_(tiles) {
  TJ_CHECK(params.size() == tiles.size());
}

bool NamedTiles::has(std::string_view name) const {
  for (const ir::Param& p : params_)
    if (p.name == name) return true;
  return false;
}

const dsl::Tile& NamedTiles::operator[](std::string_view name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return tiles_[i];
  internal_error("a kernel parameter named " + std::string(name), __FILE__, __LINE__);
}

}  // namespace tilejit::ops
