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
  for (const ir::Param& p : params()) out += (out.empty() ? "" : ",") + p.name + ":" + p.type.str();
  return out;
}

std::vector<ir::Param> NamedArguments::params() const {
  std::vector<ir::Param> params;
  for (size_t i = 0; i < names_.size(); ++i) {
    const KernelArg& v = values_[i];
    ir::Type type;
    switch (v.kind()) {
      case KernelArg::Kind::pointer: type = ir::Type::pointer_to(v.dtype()); break;
      case KernelArg::Kind::i32: type = ir::Type::scalar(DType::i32); break;
      case KernelArg::Kind::i64: type = ir::Type::scalar(DType::i64); break;
      case KernelArg::Kind::f32: type = ir::Type::scalar(DType::f32); break;
      case KernelArg::Kind::tensor_descriptor: type = ir::Type::descriptor_of(v.dtype()); break;
      case KernelArg::Kind::untyped_pointer: fail("kernel argument {} has no element type", names_[i]);
    }
    params.push_back(ir::Param{names_[i], type, {}});
  }
  return params;
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
