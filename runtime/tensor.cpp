#include "runtime/tensor.h"

#include <fmt/ranges.h>

#include <dlpack/dlpack.h>

#include "runtime/jit.h"

namespace tilejit {
namespace {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// DLPack 0.6 has codes for the integer and 16/32-bit float types; the fp8 formats and e8m0
// came later, so they cross as uint8 tensors, read back by the caller's choice
// (from_dlpack's `as`), not silently here.
DLDataType to_dl(DType d) {
  switch (d) {
    case DType::i1: return {kDLUInt, 8, 1};
    case DType::i8: return {kDLInt, 8, 1};
    case DType::i32: return {kDLInt, 32, 1};
    case DType::i64: return {kDLInt, 64, 1};
    case DType::f16: return {kDLFloat, 16, 1};
    case DType::bf16: return {kDLBfloat, 16, 1};
    case DType::f32: return {kDLFloat, 32, 1};
    default: fail("to_dlpack: {} has no DLPack 0.6 type code", dtype_name(d));
  }
}

// DLPack 0.8's code for bool (the header here is 0.6's); frameworks export bool tensors with it.
constexpr uint8_t kDLBoolCode = 6;

DType from_dl(DLDataType t, std::optional<DType> as) {
  if (t.lanes != 1) fail("from_dlpack: vector element types ({} lanes) are not supported", t.lanes);
  if (as) {
    const bool bytes = t.bits == 8 && (t.code == kDLUInt || t.code == kDLInt || t.code == kDLBoolCode);
    if (!bytes || dtype_storage_bytes(*as) != 1)
      fail("from_dlpack: a DLPack tensor of type (code {}, {} bits) cannot be read as {}: only the bytes of an 8-bit "
           "integer or bool tensor are read as a 1-byte dtype",
           static_cast<int>(t.code), static_cast<int>(t.bits), dtype_name(*as));
    return *as;
  }
  if (t.code == kDLBoolCode && t.bits == 8) return DType::i1;
  if (t.code == kDLInt && t.bits == 8) return DType::i8;
  if (t.code == kDLInt && t.bits == 32) return DType::i32;
  if (t.code == kDLInt && t.bits == 64) return DType::i64;
  if (t.code == kDLFloat && t.bits == 16) return DType::f16;
  if (t.code == kDLFloat && t.bits == 32) return DType::f32;
  if (t.code == kDLBfloat && t.bits == 16) return DType::bf16;
  fail("from_dlpack: DLPack type (code {}, {} bits) has no tilejit dtype{}", static_cast<int>(t.code),
       static_cast<int>(t.bits), t.bits == 8 ? " (its bytes can be read as a 1-byte dtype: from_dlpack's `as`)" : "");
}

Device& device_from_dl(DLDevice d) {
  if (d.device_type == kDLCUDA) return Device::cuda(d.device_id);
  if (d.device_type == kDLCPU) return Device::emu();
  fail("from_dlpack: DLPack device type {} is not supported (CUDA and CPU are)", static_cast<int>(d.device_type));
}

// Whether a tensor of `shape` (dims of 0 or more) stays within 2^62 bytes, counting its non-empty
// dims alone: so element and byte counts, strides, offsets and spans stay far from int64's
// overflow, also for an empty tensor's strides.
bool within_span(const std::vector<int64_t>& shape, DType dtype) {
  const int64_t limit = (int64_t{1} << 62) / dtype_storage_bytes(dtype);  // elements
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > limit / d)) return false;
    if (d > 0) n *= d;
  }
  return true;
}

// What an exported DLManagedTensor owns: the tensor (keeping its memory alive) and the
// shape and strides arrays DLPack points to.
struct Exported {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

}  // namespace

Tensor Tensor::empty(Device& device, DType dtype, std::vector<int64_t> shape) {
  Tensor t = unallocated(device, dtype, std::move(shape), "Tensor::empty");
  void* p = device.allocate(t.allocation_bytes());
  t.data_ = p;
  t.storage_ = std::shared_ptr<void>(p, [&device](void* q) { device.release(q); });
  return t;
}

Tensor Tensor::scratch(Stream& stream, DType dtype, std::vector<int64_t> shape) {
  Tensor t = unallocated(stream.device(), dtype, std::move(shape), "Tensor::scratch");
  void* p = stream.device().allocate_on(stream, t.allocation_bytes());
  t.data_ = p;
  t.storage_ = std::shared_ptr<void>(p, [&stream](void* q) { stream.device().release_on(stream, q); });
  return t;
}

Tensor Tensor::unallocated(Device& device, DType dtype, std::vector<int64_t> shape, const char* maker) {
  Tensor t;
  for (int64_t d : shape)
    if (d < 0) fail("{}: negative dimension in shape of {} tensor", maker, dtype_name(dtype));
  if (!within_span(shape, dtype))
    fail("{}: a {} tensor of shape [{}] spans 2^62 bytes or more", maker, dtype_name(dtype), fmt::join(shape, ", "));
  t.device_ = &device;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

void Tensor::check_element_size(size_t bytes, const char* use) const {
  if (bytes != static_cast<size_t>(dtype_storage_bytes(dtype_)))
    fail("{}: {} has {}-byte elements, not {}-byte ones", use, describe(), dtype_storage_bytes(dtype_), bytes);
}

// At least one byte, so that even an empty tensor has an address of its own.
size_t Tensor::allocation_bytes() const { return static_cast<size_t>(std::max<int64_t>(bytes(), 1)); }

Tensor Tensor::from_dlpack(DLManagedTensor* managed, std::optional<DType> as) {
  if (!managed) fail("from_dlpack: null DLManagedTensor");
  // Owns `managed` from here on, also if a check below throws.
  std::shared_ptr<void> owner(managed, [](void* m) {
    auto* t = static_cast<DLManagedTensor*>(m);
    if (t->deleter) t->deleter(t);
  });
  const DLTensor& dl = managed->dl_tensor;
  if (dl.ndim < 0 || (dl.ndim > 0 && !dl.shape))
    fail("from_dlpack: the tensor's ndim is {} and its shape {}", dl.ndim, dl.shape ? "given" : "null");
  Tensor t;
  t.dtype_ = from_dl(dl.dtype, as);
  t.device_ = &device_from_dl(dl.device);
  t.shape_.assign(dl.shape, dl.shape + dl.ndim);
  t.strides_ = dl.strides ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim) : contiguous_strides(t.shape_);
  for (int64_t d : t.shape_)
    if (d < 0) fail("from_dlpack: a dim is negative ({})", t.describe());
  for (int64_t s : t.strides_)
    if (s < 0) fail("from_dlpack: negative strides are not supported ({})", t.describe());
  t.data_ = static_cast<char*>(dl.data) + dl.byte_offset;
  if (reinterpret_cast<uintptr_t>(t.data_) % static_cast<uintptr_t>(dtype_storage_bytes(t.dtype_)) != 0)
    fail("from_dlpack: the data of {} is not aligned to its element size ({} bytes)", t.describe(),
         dtype_storage_bytes(t.dtype_));
  // The elements, and the bytes from the first to the end of the last: within 2^62, so that
  // index and address arithmetic on the tensor (and on views of it) cannot overflow.
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t elements = 1, last = 0, bytes = 0;
  bool overflow = false;
  for (int i = 0; i < t.rank(); ++i) {
    int64_t step = 0;
    overflow |= __builtin_mul_overflow(elements, t.shape_[i], &elements);
    if (t.shape_[i] > 0)
      overflow |= __builtin_mul_overflow(t.shape_[i] - 1, t.strides_[i], &step) ||
                  __builtin_add_overflow(last, step, &last);
  }
  if (elements > 0) overflow |= __builtin_mul_overflow(last + 1, int64_t{dtype_storage_bytes(t.dtype_)}, &bytes);
  if (overflow || elements > kLimit || bytes > kLimit)
    fail("from_dlpack: {} (strides [{}]) spans 2^62 bytes or more", t.describe(), fmt::join(t.strides_, ", "));
  Device* device = t.device_;
  device->add_external_memory(t.data_, static_cast<size_t>(bytes));
  t.storage_ = std::shared_ptr<void>(t.data_, [device, owner = std::move(owner)](void* data) {
    device->remove_external_memory(data);
  });
  return t;
}

DLManagedTensor* Tensor::to_dlpack() const {
  auto e = std::make_unique<Exported>(Exported{*this, shape_, strides_, {}});  // freed if a check below throws
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = data_;
  dl.device = device_->info().kind == DeviceKind::cuda ? DLDevice{kDLCUDA, device_->info().ordinal} : DLDevice{kDLCPU, 0};
  dl.ndim = rank();
  dl.dtype = to_dl(dtype_);
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); };
  return &e.release()->managed;
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  if (i < -r || i >= r) fail("dimension {} is out of range for {}", i, describe());
  return shape_[static_cast<size_t>(i < 0 ? i + r : i)];
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

std::string Tensor::describe() const {
  std::string dims;
  for (int64_t d : shape_) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  std::string where = device_ ? device_kind_name(device_->info().kind) : "?";
  if (device_ && device_->info().kind == DeviceKind::cuda) where += ":" + std::to_string(device_->info().ordinal);
  return fmt::format("{}[{}] on {}", dtype_name(dtype_), dims, where);
}

Tensor Tensor::view(std::vector<int64_t> shape, int64_t element_offset) const {
  if (!is_contiguous()) fail("view of {}: the tensor is not contiguous", describe());
  Tensor v = *this;
  v.shape_ = std::move(shape);
  for (int64_t d : v.shape_)
    if (d < 0) fail("view of {}: negative dimension in shape {}", describe(), v.describe());
  if (!within_span(v.shape_, dtype_))
    fail("view of {}: shape [{}] spans 2^62 bytes or more", describe(), fmt::join(v.shape_, ", "));
  v.strides_ = contiguous_strides(v.shape_);
  if (element_offset < 0 || element_offset > numel() || v.numel() > numel() - element_offset)
    fail("view of {}: {} elements from offset {} reach past its {} elements", describe(), v.numel(), element_offset,
         numel());
  v.data_ = static_cast<char*>(data_) + element_offset * dtype_storage_bytes(dtype_);
  return v;
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  if (static_cast<int>(dims.size()) != rank())
    fail("permute of {}: {} dims given for rank {}", describe(), dims.size(), rank());
  Tensor v = *this;
  std::vector<bool> used(shape_.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i] < 0 ? dims[i] + rank() : dims[i];
    if (d < 0 || d >= rank() || used[static_cast<size_t>(d)])
      fail("permute of {}: [{}] is not a permutation of its dims", describe(), fmt::join(dims, ", "));
    used[static_cast<size_t>(d)] = true;
    v.shape_[i] = shape_[static_cast<size_t>(d)];
    v.strides_[i] = strides_[static_cast<size_t>(d)];
  }
  return v;
}

Tensor Tensor::slice(int dim, int64_t start, int64_t length) const {
  int d = dim < 0 ? dim + rank() : dim;
  if (d < 0 || d >= rank()) fail("slice of {}: dim {} is out of range", describe(), dim);
  int64_t size = shape_[static_cast<size_t>(d)];
  if (start < 0 || length < 0 || start > size || length > size - start)
    fail("slice of {}: {} elements from {} of dim {} (size {})", describe(), length, start, dim, size);
  Tensor v = *this;
  v.shape_[static_cast<size_t>(d)] = length;
  v.data_ = static_cast<char*>(data_) + start * strides_[static_cast<size_t>(d)] * dtype_storage_bytes(dtype_);
  return v;
}

Tensor Tensor::select(int dim, int64_t index) const {
  Tensor v = slice(dim, index, 1);
  size_t d = static_cast<size_t>(dim < 0 ? dim + rank() : dim);
  v.shape_.erase(v.shape_.begin() + static_cast<std::ptrdiff_t>(d));
  v.strides_.erase(v.strides_.begin() + static_cast<std::ptrdiff_t>(d));
  return v;
}

Tensor Tensor::unsqueeze(int dim) const {
  int d = dim < 0 ? dim + rank() + 1 : dim;
  if (d < 0 || d > rank()) fail("unsqueeze of {}: dim {} is out of range", describe(), dim);
  Tensor v = *this;
  auto at = static_cast<size_t>(d);
  // Any stride serves a dim of size 1; this one keeps a contiguous tensor contiguous.
  int64_t stride = at < shape_.size() ? strides_[at] * shape_[at] : 1;
  v.shape_.insert(v.shape_.begin() + static_cast<std::ptrdiff_t>(at), 1);
  v.strides_.insert(v.strides_.begin() + static_cast<std::ptrdiff_t>(at), stride);
  return v;
}

void Tensor::copy_from_host(const void* src, size_t bytes) {
  if (!is_contiguous()) fail("copy_from_host: {} is not contiguous", describe());
  if (static_cast<int64_t>(bytes) != this->bytes())
    fail("copy_from_host: {} bytes given for {} ({} bytes)", bytes, describe(), this->bytes());
  device_->copy(data_, src, bytes, CopyKind::host_to_device);
}

void Tensor::copy_to_host(void* dst, size_t bytes) const {
  if (!is_contiguous()) fail("copy_to_host: {} is not contiguous", describe());
  if (static_cast<int64_t>(bytes) != this->bytes())
    fail("copy_to_host: {} bytes asked of {} ({} bytes)", bytes, describe(), this->bytes());
  device_->copy(dst, data_, bytes, CopyKind::device_to_host);
}

void Tensor::fill_bytes(uint8_t value) {
  if (!is_contiguous()) fail("fill_bytes: {} is not contiguous", describe());
  device_->memset_async(data_, value, static_cast<size_t>(bytes()), device_->default_stream());
  device_->default_stream().synchronize();
}

KernelArg::KernelArg(const Tensor& t) : KernelArg(pointer(t.data(), t.dtype())) { device_ = &t.device(); }

}  // namespace tilejit
