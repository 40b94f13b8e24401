#include "runtime/jit.h"

#include <array>
#include <bit>
#include <map>
#include <mutex>

namespace tilejit {
namespace {

constexpr size_t kMaxParams = 64;
constexpr size_t kMaxDescriptors = 8;
// Kernel parameters a TensorDesc parameter becomes: its tensor map, data, rows, columns, row
// stride, then a size and a stride per outer dim.
constexpr size_t kMaxParamsPerDescriptor = 5 + 2 * TensorDescriptor::kMaxOuterDims;

// "cuda:1 (NVIDIA H100 80GB HBM3)", or the emulator's name.
std::string device_label(const Device& d) {
  const DeviceInfo& info = d.info();
  return info.kind == DeviceKind::cuda ? fmt::format("cuda:{} ({})", info.ordinal, info.name) : info.name;
}

// What a launch's arguments specialize the kernel for: a code per parameter (below), and the
// block shape of each descriptor argument.
struct SpecializationKey {
  std::array<uint8_t, kMaxParams> codes{};
  std::array<int64_t, 2 * kMaxDescriptors> blocks{};
  bool operator==(const SpecializationKey&) const = default;
};

// A parameter's code: an integer equal to 1, or the log2 of the largest power of two up to
// ir::kMaxArgDivisibility dividing an integer or a pointer's address; a descriptor's count of
// outer dims.
constexpr uint8_t kEqualsOneCode = 0xff;
constexpr int kMaxDivisibilityLog2 = std::countr_zero(static_cast<uint64_t>(ir::kMaxArgDivisibility));

uint8_t divisibility_code(uint64_t value) {
  return static_cast<uint8_t>(std::min(std::countr_zero(value), kMaxDivisibilityLog2));
}

// What one parameter accepts, precomputed from the signature.
struct ParamCheck {
  std::string name;
  bool pointer = false;
  bool descriptor = false;
  DType dtype = DType::i32;
};

// "an f32", "a bf16": dtype names are read letter by letter.
std::string with_article(std::string_view dtype) {
  return fmt::format("{} {}", dtype.starts_with('b') ? "a" : "an", dtype);
}

std::string type_name(const ParamCheck& p) {
  return fmt::format("{} {}", with_article(dtype_name(p.dtype)),
                     p.pointer ? "pointer" : p.descriptor ? "tensor descriptor" : "scalar");
}

bool accepts(const ParamCheck& p, const KernelArg& a) {
  using K = KernelArg::Kind;
  if (p.descriptor) return a.kind() == K::tensor_descriptor && a.dtype() == p.dtype;
  if (a.kind() == K::tensor_descriptor) return false;
  if (p.pointer) return a.kind() == K::untyped_pointer || (a.kind() == K::pointer && a.dtype() == p.dtype);
  switch (p.dtype) {
    case DType::i32: return a.kind() == K::i32;
    case DType::i64: return a.kind() == K::i32 || a.kind() == K::i64;  // widening is exact
    case DType::f32: return a.kind() == K::f32;
    default: return false;
  }
}

int64_t integer_value(const KernelArg& a) { return static_cast<int64_t>(a.bits()); }

// The largest grid a GPU launches (every arch since sm_30); the emulator keeps to it too, so
// a launch it runs never fails on a GPU.
constexpr uint32_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;

// The launch of `report`'s kernel with `dims`: a grid a GPU launches, in the clusters the
// kernel was compiled for, which a caller may give or leave out, but not contradict.
LaunchDims launch_dims(const KernelReport& report, const LaunchDims& dims) {
  const Dim3 &needed = report.cluster, &given = dims.cluster, &grid = dims.grid;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    fail("launch of {}: empty grid ({}, {}, {}); each dim must be at least 1", report.name, grid.x, grid.y, grid.z);
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ)
    fail("launch of {}: grid ({}, {}, {}) exceeds what a GPU launches ({} programs along x, {} along y and z)",
         report.name, grid.x, grid.y, grid.z, kMaxGridX, kMaxGridYZ);
  if (given.x == 0 || given.y == 0 || given.z == 0)
    fail("launch of {}: clusters of ({}, {}, {}) CTAs given; each dim must be at least 1", report.name, given.x,
         given.y, given.z);
  if (needed != Dim3{} && given != Dim3{} && given != needed)
    fail("launch of {}: clusters of ({}, {}, {}) CTAs given; the kernel is compiled for clusters of ({}, {}, {})",
         report.name, given.x, given.y, given.z, needed.x, needed.y, needed.z);
  const Dim3 cluster = needed != Dim3{} ? needed : given;
  if (grid.x % cluster.x || grid.y % cluster.y || grid.z % cluster.z)
    fail("launch of {}: the kernel runs in clusters of ({}, {}, {}) CTAs, which do not tile the grid ({}, {}, {})",
         report.name, cluster.x, cluster.y, cluster.z, grid.x, grid.y, grid.z);
  return {grid, cluster};
}

}  // namespace

std::string KernelArg::describe() const {
  switch (kind_) {
    case Kind::pointer: return with_article(dtype_name(dtype_)) + " pointer";
    case Kind::untyped_pointer: return "an untyped pointer";
    case Kind::i32: return "an i32 scalar";
    case Kind::i64: return "an i64 scalar";
    case Kind::f32: return "an f32 scalar";
    case Kind::tensor_descriptor: return with_article(dtype_name(dtype_)) + " tensor descriptor";
  }
  return "?";
}

KernelArg KernelArg::pointer(void* device_pointer, DType dtype) {
  KernelArg a(Kind::pointer, dtype);
  a.set(device_pointer);
  return a;
}

KernelArg KernelArg::untyped(void* device_pointer) {
  KernelArg a(Kind::untyped_pointer, DType::i8);
  a.set(device_pointer);
  return a;
}

struct BoundKernel::State {
  std::shared_ptr<const dsl::Kernel> kernel;
  dsl::Constants constants;
  std::vector<ParamCheck> params;

  struct Built {
    Device* device;
    SpecializationKey specialization;
    std::shared_ptr<LoadedKernel> kernel;
  };
  mutable std::mutex mutex;
  mutable std::vector<Built> built;

  void check(const Device& device, std::span<const KernelArg> args) const {
    if (args.size() != params.size()) {
      std::string names;
      for (auto& p : params) names += (names.empty() ? "" : ", ") + p.name;
      fail("kernel {}: {} argument{} given, it takes {} ({})", kernel->name(), args.size(), args.size() == 1 ? "" : "s",
           params.size(), names);
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (!accepts(params[i], args[i]))
        fail("kernel {}: argument {} ('{}') must be {}, got {}", kernel->name(), i, params[i].name, type_name(params[i]),
             args[i].describe());
      if (params[i].descriptor) args[i].descriptor().check();
      // Another device's memory would fault the launch (on a GPU, for the rest of the process).
      if (args[i].device() && args[i].device() != &device)
        fail("kernel {}: argument {} ('{}') is memory of {}, but the launch is on {}", kernel->name(), i,
             params[i].name, device_label(*args[i].device()), device_label(device));
    }
  }

  SpecializationKey specialization(std::span<const KernelArg> args) const {
    SpecializationKey key;
    size_t descriptors = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArg& a = args[i];
      if (params[i].descriptor) {
        key.codes[i] = static_cast<uint8_t>(a.descriptor().outer.size());
        key.blocks[2 * descriptors] = a.descriptor().block[0];
        key.blocks[2 * descriptors++ + 1] = a.descriptor().block[1];
      } else if (params[i].pointer) {
        key.codes[i] = divisibility_code(a.bits());
      } else if (params[i].dtype != DType::f32) {
        int64_t v = integer_value(a);
        key.codes[i] = v == 1 ? kEqualsOneCode : divisibility_code(static_cast<uint64_t>(v));
      }
    }
    return key;
  }

  std::vector<ir::ArgFacts> facts(const SpecializationKey& key) const {
    std::vector<ir::ArgFacts> out(params.size());
    size_t descriptors = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      uint8_t code = key.codes[i];
      if (params[i].descriptor) {
        out[i].block.assign(code, 1);
        out[i].block.insert(out[i].block.end(), {key.blocks[2 * descriptors], key.blocks[2 * descriptors + 1]});
        ++descriptors;
      } else if (code == kEqualsOneCode) {
        out[i].equals_one = true;
      } else {
        out[i].divisibility = int64_t{1} << code;  // f32 scalars: code 0
      }
    }
    return out;
  }

  std::shared_ptr<LoadedKernel> get(Device& device, std::span<const KernelArg> args) const {
    check(device, args);
    SpecializationKey key = specialization(args);
    {
      std::lock_guard lock(mutex);
      for (const Built& b : built)
        if (b.device == &device && b.specialization == key) return b.kernel;
    }
    // Built outside the lock: compiles of other specializations go on in parallel. Two
    // threads racing for one specialization both build it; the first one stored wins.
    KernelRequest request{kernel.get(), &constants, facts(key)};
    std::shared_ptr<LoadedKernel> loaded = device.load(request);
    std::lock_guard lock(mutex);
    for (const Built& b : built)
      if (b.device == &device && b.specialization == key) return b.kernel;
    built.push_back({&device, key, loaded});
    return loaded;
  }
};

void BoundKernel::launch_args(Stream& stream, const LaunchDims& dims, std::span<const KernelArg> args) const {
  Device& device = stream.device();
  std::shared_ptr<LoadedKernel> k = state_->get(device, args);
  const KernelReport& report = k->report();
  void* values[kMaxParams + (kMaxParamsPerDescriptor - 1) * kMaxDescriptors];
  TensorMap maps[kMaxDescriptors];
  TensorDescriptorParams descriptors[kMaxDescriptors];
  size_t n = 0, d = 0;
  for (const KernelArg& a : args) {
    if (a.kind() != KernelArg::Kind::tensor_descriptor) {
      values[n++] = const_cast<void*>(a.value());
      continue;
    }
    const TensorDescriptor& desc = a.descriptor();
    // A kernel not traced from the DSL (hand-written LLVM IR) copies whole blocks.
    const std::vector<int>& slices = report.descriptor_row_slices;
    maps[d] = device.encode_tensor_map(desc, d < slices.size() ? slices[d] : 1);
    TensorDescriptorParams& p = descriptors[d];
    p = {desc.data, static_cast<int32_t>(desc.shape[0]), static_cast<int32_t>(desc.shape[1]), desc.row_stride, {}, {}};
    for (void* v : {static_cast<void*>(&maps[d]), static_cast<void*>(&p.data), static_cast<void*>(&p.rows),
                    static_cast<void*>(&p.columns), static_cast<void*>(&p.row_stride)})
      values[n++] = v;
    for (size_t o = 0; o < desc.outer.size(); ++o) {
      p.outer_sizes[o] = static_cast<int32_t>(desc.outer[o].size);
      p.outer_strides[o] = desc.outer[o].stride;
      values[n++] = &p.outer_sizes[o];
      values[n++] = &p.outer_strides[o];
    }
    ++d;
  }
  device.launch(*k, launch_dims(report, dims), values, stream);
}

std::shared_ptr<LoadedKernel> BoundKernel::prepare(Device& device, std::span<const KernelArg> args) const {
  return state_->get(device, args);
}

const dsl::Kernel& BoundKernel::kernel() const { return *state_->kernel; }
const dsl::Constants& BoundKernel::constants() const { return state_->constants; }
int BoundKernel::builds() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<int>(state_->built.size());
}

struct JitKernel::State {
  std::shared_ptr<const dsl::Kernel> kernel;
  std::vector<ParamCheck> params;
  mutable std::mutex mutex;
  mutable std::map<std::vector<std::pair<std::string, int64_t>>, std::shared_ptr<BoundKernel::State>> bound;
};

JitKernel::JitKernel(dsl::Kernel kernel) : state_(std::make_shared<State>()) {
  if (kernel.params().size() > kMaxParams)
    fail("kernel {}: {} parameters; the launch API supports up to {}", kernel.name(), kernel.params().size(), kMaxParams);
  size_t descriptors = 0;
  for (const ir::Param& p : kernel.params()) {
    // A scalar parameter takes what KernelArg holds: i32, i64 or f32.
    const DType d = p.type.dtype;
    if (!p.type.pointer && !p.type.descriptor && d != DType::i32 && d != DType::i64 && d != DType::f32)
      fail("kernel {}: scalar parameter '{}' is {}; launches pass i32, i64 or f32 scalars (cast inside the kernel)",
           kernel.name(), p.name, dtype_name(d));
    state_->params.push_back({p.name, p.type.pointer, p.type.descriptor, d});
    descriptors += p.type.descriptor;
  }
  if (descriptors > kMaxDescriptors)
    fail("kernel {}: {} tensor descriptor parameters; the launch API supports up to {}", kernel.name(), descriptors,
         kMaxDescriptors);
  state_->kernel = std::make_shared<const dsl::Kernel>(std::move(kernel));
}

BoundKernel JitKernel::with(const std::vector<std::pair<std::string, int64_t>>& overrides) const {
  dsl::Constants constants = state_->kernel->constants(overrides);
  std::lock_guard lock(state_->mutex);
  auto& slot = state_->bound[constants.values];
  if (!slot) {
    slot = std::make_shared<BoundKernel::State>();
    slot->kernel = state_->kernel;
    slot->constants = std::move(constants);
    slot->params = state_->params;
  }
  return BoundKernel(slot);
}

const dsl::Kernel& JitKernel::kernel() const { return *state_->kernel; }

}  // namespace tilejit
