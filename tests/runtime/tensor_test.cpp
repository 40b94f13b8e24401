// Tensors and DLPack: export and import without copies, ownership handed over correctly,
// host memory from another framework usable by emulated kernels, clear errors otherwise.
#include <dlpack/dlpack.h>

#include <limits>
#include <optional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/error_message.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;

using testing_util::error_of;

// A DLPack tensor over host memory, as a CPU framework would hand it over.
struct ForeignTensor {
  std::vector<float> data;
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
  bool* deleted;
};

DLManagedTensor* make_foreign(std::vector<float> values, std::vector<int64_t> shape, bool* deleted,
                              DLDataType dtype = {kDLFloat, 32, 1}, DLDeviceType device = kDLCPU) {
  auto* f = new ForeignTensor{std::move(values), std::move(shape), {}, deleted};
  f->managed.dl_tensor = {f->data.data(), {device, 0}, static_cast<int>(f->shape.size()), dtype, f->shape.data(), nullptr, 0};
  f->managed.manager_ctx = f;
  f->managed.deleter = [](DLManagedTensor* m) {
    auto* self = static_cast<ForeignTensor*>(m->manager_ctx);
    *self->deleted = true;
    delete self;
  };
  return &f->managed;
}

// Elements offset .. offset + n - 1 of `buffer` (which outlives it), imported as another
// framework's CPU tensor hands them over.
Tensor import_host_view(std::vector<float>& buffer, int64_t offset, int64_t n) {
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor = {buffer.data() + offset, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, new int64_t[1]{n}, nullptr, 0};
  managed->deleter = [](DLManagedTensor* self) {
    delete[] self->dl_tensor.shape;
    delete self;
  };
  return Tensor::from_dlpack(managed);
}

TEST(Tensor, EmptyIsContiguous) {
  Tensor t = Tensor::empty(Device::emu(), DType::bf16, {3, 4, 5});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{20, 5, 1}));
  EXPECT_EQ(t.numel(), 60);
  EXPECT_EQ(t.bytes(), 120);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "bf16[3, 4, 5] on emu");
  EXPECT_THAT(error_of([&] { t.dim(3); }), HasSubstr("dimension 3 is out of range for bf16[3, 4, 5] on emu"));
}

TEST(Tensor, ScratchIsContiguousAndUsable) {
  Stream& stream = Device::emu().default_stream();
  Tensor t = Tensor::scratch(stream, DType::f32, {2, 3});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(&t.device(), &Device::emu());
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  t.copy_from_host(std::span<const float>(v));
  EXPECT_EQ(t.to_host<float>(), v);
  EXPECT_THAT(error_of([&] { Tensor::scratch(stream, DType::f32, {2, -1}); }),
              HasSubstr("Tensor::scratch: negative dimension in shape of f32 tensor"));
}

TEST(Tensor, CopiesCheckSizes) {
  Tensor t = Tensor::empty(Device::emu(), DType::f32, {4});
  std::vector<float> three(3);
  EXPECT_THAT(error_of([&] { t.copy_from_host(std::span<const float>(three)); }),
              HasSubstr("12 bytes given for f32[4] on emu (16 bytes)"));
}

// Shapes whose element or byte counts would overflow are refused, not allocated in a byte.
TEST(Tensor, SizesPastInt64AreRefused) {
  Device& emu = Device::emu();
  EXPECT_THAT(error_of([&] { Tensor::empty(emu, DType::f32, {int64_t{1} << 61}); }),
              HasSubstr("Tensor::empty: a f32 tensor of shape [2305843009213693952] spans 2^62 bytes or more"));
  EXPECT_THAT(error_of([&] { Tensor::empty(emu, DType::i8, {int64_t{1} << 32, int64_t{1} << 32}); }),
              HasSubstr("spans 2^62 bytes or more"));
  EXPECT_EQ(Tensor::empty(emu, DType::f32, {0, int64_t{1} << 40}).numel(), 0);
  EXPECT_THAT(error_of([&] { Tensor::empty(emu, DType::f32, {0, int64_t{1} << 62, 4}); }),
              HasSubstr("spans 2^62 bytes or more"));  // an empty tensor's strides would overflow
  Tensor t = Tensor::empty(emu, DType::f32, {4});
  EXPECT_THAT(error_of([&] { t.view({int64_t{1} << 40, int64_t{1} << 40}); }), HasSubstr("spans 2^62 bytes or more"));
  EXPECT_THAT(error_of([&] { t.view({1}, std::numeric_limits<int64_t>::max()); }), HasSubstr("reach past its 4"));
  EXPECT_THAT(error_of([&] { t.slice(0, 1, std::numeric_limits<int64_t>::max()); }),
              HasSubstr("slice of f32[4] on emu: 9223372036854775807 elements from 1 of dim 0 (size 4)"));
}

TEST(Tensor, HostCopiesTakeElementsOfTheDtypesSize) {
  Tensor t = Tensor::empty(Device::emu(), DType::bf16, {4});
  EXPECT_THAT(error_of([&] { t.to_host<float>(); }),
              HasSubstr("to_host: bf16[4] on emu has 2-byte elements, not 4-byte"));
  std::vector<int32_t> v(2);
  EXPECT_THAT(error_of([&] { t.copy_from_host(std::span<const int32_t>(v)); }), HasSubstr("copy_from_host"));
}

TEST(Tensor, EventsAreUsedOnTheirDeviceWhileTheyHoldAHandle) {
  Device& emu = Device::emu();
  Device& other = Device::by_name("emu:sm_80");
  Event start = emu.create_event(), end = other.create_event();
  start.record(emu.default_stream());
  end.record(other.default_stream());
  EXPECT_THAT(error_of([&] { start.elapsed_ms(end); }), HasSubstr("elapsed_ms from an event of"));
  Event moved = std::move(start);
  EXPECT_THAT(error_of([&] { start.record(emu.default_stream()); }),
              HasSubstr("record of an event that was moved from"));
  EXPECT_THAT(error_of([&] { moved.elapsed_ms(start); }), HasSubstr("elapsed_ms of an event that was moved from"));
}

// A tensor's memory goes back through release (release_on for scratch tensors), which a
// destructor may call: where free fails (here a pointer the device never gave out; on a GPU,
// a context lost to a kernel fault) release logs the failure instead of throwing.
TEST(Tensor, ReleaseLogsWhatFreeThrows) {
  Device& emu = Device::emu();
  int not_an_allocation = 0;
  EXPECT_THAT(error_of([&] { emu.free(&not_an_allocation); }), HasSubstr("which is not an allocation"));
  EXPECT_THAT(error_of([&] { emu.free_on(emu.default_stream(), &not_an_allocation); }),
              HasSubstr("which is not an allocation"));
  testing::internal::CaptureStderr();
  emu.release(&not_an_allocation);
  emu.release_on(emu.default_stream(), &not_an_allocation);
  const std::string log = testing::internal::GetCapturedStderr();
  size_t logged = 0;
  for (size_t at = 0; (at = log.find("which is not an allocation", at)) != std::string::npos; ++at) ++logged;
  EXPECT_EQ(logged, 2u) << log;
  void* p = emu.allocate(16);
  emu.release(p);
  EXPECT_THAT(error_of([&] { emu.free(p); }), HasSubstr("which is not an allocation")) << "released twice";
}

TEST(Tensor, DeviceNamesOutOfRangeAreErrors) {
  EXPECT_THAT(error_of([] { Device::by_name("cuda:99999999999"); }), HasSubstr("unknown device 'cuda:99999999999'"));
}

TEST(Tensor, ViewsShareMemoryAndKeepItAlive) {
  Tensor view = [] {
    Tensor t = Tensor::empty(Device::emu(), DType::f32, {2, 3});
    std::vector<float> v = {1, 2, 3, 4, 5, 6};
    t.copy_from_host(std::span<const float>(v));
    Tensor tail = t.view({2, 2}, 2);
    EXPECT_EQ(tail.data(), static_cast<float*>(t.data()) + 2);
    EXPECT_EQ(tail.strides(), (std::vector<int64_t>{2, 1}));
    return tail;
  }();  // the original tensor is gone; the view keeps the memory
  EXPECT_EQ(view.to_host<float>(), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_THAT(error_of([&] { view.view({5}); }), HasSubstr("5 elements from offset 0 reach past its 4 elements"));
  EXPECT_THAT(error_of([&] { view.view({1}, 4); }), HasSubstr("1 elements from offset 4 reach past its 4 elements"));
}

TEST(Tensor, UnsqueezeAddsADimOfSizeOne) {
  Tensor t = Tensor::empty(Device::emu(), DType::f32, {2, 3});
  Tensor column = t.select(1, 2);  // stride 3
  EXPECT_EQ(column.unsqueeze(0).shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(column.unsqueeze(0).strides(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(column.unsqueeze(-1).shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(column.unsqueeze(-1).strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(column.unsqueeze(1).data(), column.data());
  EXPECT_TRUE(t.unsqueeze(1).is_contiguous());
  EXPECT_EQ(t.unsqueeze(1).shape(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_THAT(error_of([&] { t.unsqueeze(3); }), HasSubstr("unsqueeze of f32[2, 3] on emu: dim 3 is out of range"));
  EXPECT_THAT(error_of([&] { t.unsqueeze(-4); }), HasSubstr("dim -4 is out of range"));
}

TEST(Tensor, DlpackRoundTripSharesMemory) {
  Tensor t = Tensor::empty(Device::emu(), DType::f32, {2, 3});
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  t.copy_from_host(std::span<const float>(v));
  Tensor back = Tensor::from_dlpack(t.to_dlpack());
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(back.strides(), t.strides());
  EXPECT_EQ(back.dtype(), DType::f32);
  EXPECT_EQ(back.to_host<float>(), v);
}

TEST(Tensor, ExportKeepsMemoryAliveUntilTheConsumerDeletes) {
  DLManagedTensor* exported = nullptr;
  {
    Tensor t = Tensor::empty(Device::emu(), DType::i32, {8});
    std::vector<int32_t> v = {1, 2, 3, 4, 5, 6, 7, 8};
    t.copy_from_host(std::span<const int32_t>(v));
    exported = t.to_dlpack();
  }
  auto* data = static_cast<int32_t*>(exported->dl_tensor.data);
  EXPECT_EQ(data[7], 8);  // still allocated: the export owns a reference
  EXPECT_EQ(exported->dl_tensor.device.device_type, kDLCPU);
  exported->deleter(exported);
}

TEST(Tensor, ImportedHostMemoryRunsInTheEmulator) {
  bool deleted = false;
  {
    Tensor x = Tensor::from_dlpack(make_foreign({1, 2, 3, 4, 5}, {5}, &deleted));
    Tensor out = Tensor::empty(Device::emu(), DType::f32, {5});
    using namespace tilejit::dsl;
    JitKernel twice(define_kernel("twice", {"x", "out", "n"}, {{"BLOCK", 8}},
                                  [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
                                    Tile offs = arange(0, c["BLOCK"]);
                                    store(out + offs, load(x + offs, offs < n) * 2.0, offs < n);
                                  }));
    twice.launch(Device::emu().default_stream(), {1}, x, out, int32_t{5});
    EXPECT_EQ(out.to_host<float>(), (std::vector<float>{2, 4, 6, 8, 10}));
    EXPECT_FALSE(deleted);
  }
  EXPECT_TRUE(deleted);  // the producer's deleter ran when the last reference went away
}

// Views of one host buffer that a framework hands over one by one: its first two elements,
// then a window that starts inside them and ends past them, then the whole buffer (the first
// view's start, a larger extent). Each runs in the emulator.
TEST(Tensor, OverlappingImportsOfOneHostBufferAllRun) {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6, 7, 8};
  auto view = [&](int64_t offset, int64_t n) { return import_host_view(buffer, offset, n); };
  using namespace tilejit::dsl;
  JitKernel twice(define_kernel("twice_n", {"x", "out", "n"}, {{"BLOCK", 8}},
                                [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
                                  Tile offs = arange(0, c["BLOCK"]);
                                  store(out + offs, load(x + offs, offs < n) * 2.0, offs < n);
                                }));
  auto doubled = [&](const Tensor& x) {
    Tensor out = Tensor::empty(Device::emu(), DType::f32, {x.dim(0)});
    twice.launch(Device::emu().default_stream(), {1}, x, out, static_cast<int32_t>(x.dim(0)));
    return out.to_host<float>();
  };
  Tensor head = view(0, 2);
  EXPECT_EQ(doubled(head), (std::vector<float>{2, 4}));
  Tensor window = view(1, 6);
  EXPECT_EQ(doubled(window), (std::vector<float>{4, 6, 8, 10, 12, 14}));
  Tensor whole = view(0, 8);
  EXPECT_EQ(doubled(whole), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
}

// One import covered by another stays registered when the other goes first.
TEST(Tensor, AnImportOutlivesTheImportThatCoveredIt) {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6, 7, 8};
  auto view = [&](int64_t offset, int64_t n) { return import_host_view(buffer, offset, n); };
  std::optional<Tensor> whole = view(0, 8);
  Tensor tail = view(4, 4);
  whole.reset();
  EXPECT_EQ(tail.to_host<float>(), (std::vector<float>{5, 6, 7, 8}));
  DLManagedTensor* malformed = Tensor::empty(Device::emu(), DType::f32, {2}).to_dlpack();
  malformed->dl_tensor.ndim = -1;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(malformed); }), HasSubstr("from_dlpack: the tensor's ndim is -1"));
}

// An import that claims more memory than the allocation it starts in (a producer's mistake)
// leaves that allocation's extent as it was: reading past it is an error, and both free
// cleanly.
TEST(Tensor, AnImportLargerThanItsAllocationKeepsTheAllocationsExtent) {
  Tensor t = Tensor::empty(Device::emu(), DType::f32, {4});
  DLManagedTensor* exported = t.to_dlpack();
  exported->dl_tensor.shape[0] = 1 << 20;
  {
    Tensor claims_more = Tensor::from_dlpack(exported);
    Tensor out = Tensor::empty(Device::emu(), DType::f32, {8});
    using namespace tilejit::dsl;
    JitKernel copy(define_kernel("copy8", {"x", "out"}, {}, [](const Constants&, Ptr<f32> x, Ptr<f32> out) {
      Tile offs = arange(0, 8);
      store(out + offs, load(x + offs));
    }));
    EXPECT_THAT(error_of([&] { copy.launch(Device::emu().default_stream(), {1}, claims_more, out); }),
                HasSubstr("out-of-bounds global load of 4 bytes"));
  }
  std::vector<float> v = {1, 2, 3, 4};
  t.copy_from_host(std::span<const float>(v));
  EXPECT_EQ(t.to_host<float>(), v);
}

// fp8 data, e8m0 scales and boolean masks from frameworks: bool tensors are i1, and the bytes
// of an 8-bit tensor are read as the 1-byte dtype the caller names.
TEST(Tensor, ImportReadsBytesAsTheDtypeAsked) {
  bool deleted = false;
  Tensor mask = Tensor::from_dlpack(make_foreign({0, 0}, {8}, &deleted, {6, 8, 1}));  // DLPack 0.8's bool
  EXPECT_EQ(mask.dtype(), DType::i1);
  for (DType as : {DType::f8e4m3, DType::f8e5m2, DType::e8m0, DType::i1}) {
    SCOPED_TRACE(dtype_name(as));
    DLManagedTensor* bytes = make_foreign({1, 2}, {8}, &deleted, {kDLUInt, 8, 1});
    void* data = bytes->dl_tensor.data;
    Tensor t = Tensor::from_dlpack(bytes, as);
    EXPECT_EQ(t.dtype(), as);
    EXPECT_EQ(t.data(), data);
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{8}));
  }
  Tensor exported_mask = Tensor::empty(Device::emu(), DType::i1, {4});
  EXPECT_EQ(Tensor::from_dlpack(exported_mask.to_dlpack(), DType::i1).data(), exported_mask.data());

  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(make_foreign({1, 2}, {8}, &deleted, {kDLUInt, 8, 1})); }),
              HasSubstr("(code 1, 8 bits) has no tilejit dtype (its bytes can be read as a 1-byte dtype"));
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(make_foreign({1}, {1}, &deleted), DType::f8e4m3); }),
              HasSubstr("(code 2, 32 bits) cannot be read as f8e4m3"));
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(make_foreign({1}, {2}, &deleted, {kDLUInt, 8, 1}), DType::f16); }),
              HasSubstr("cannot be read as f16"));
}

TEST(Tensor, ImportRejectsWhatItCannotRepresent) {
  bool deleted = false;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(make_foreign({1}, {1}, &deleted, {kDLComplex, 64, 1})); }),
              HasSubstr("DLPack type (code 5, 64 bits) has no tilejit dtype"));
  EXPECT_TRUE(deleted);  // a refused import still hands the memory back
  deleted = false;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(make_foreign({1}, {1}, &deleted, {kDLFloat, 32, 1}, kDLVulkan)); }),
              HasSubstr("DLPack device type 7 is not supported"));
  EXPECT_TRUE(deleted);
  deleted = false;
  DLManagedTensor* negative = make_foreign({1}, {1}, &deleted);
  negative->dl_tensor.shape[0] = -1;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(negative); }), HasSubstr("a dim is negative (f32[-1] on emu)"));
  EXPECT_TRUE(deleted);
  deleted = false;
  DLManagedTensor* misaligned = make_foreign({1, 2}, {1}, &deleted);
  misaligned->dl_tensor.byte_offset = 2;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(misaligned); }),
              HasSubstr("the data of f32[1] on emu is not aligned to its element size (4 bytes)"));
  EXPECT_TRUE(deleted);
  deleted = false;
  DLManagedTensor* far = make_foreign({1, 2}, {2}, &deleted);
  int64_t far_stride = int64_t{1} << 61;  // 2^61 f32 elements: 2^63 bytes, past what addresses hold
  far->dl_tensor.strides = &far_stride;
  EXPECT_THAT(error_of([&] { Tensor::from_dlpack(far); }),
              HasSubstr("f32[2] on emu (strides [2305843009213693952]) spans 2^62 bytes or more"));
  EXPECT_TRUE(deleted);
  Tensor fp8 = Tensor::empty(Device::emu(), DType::f8e4m3, {4});
  EXPECT_THAT(error_of([&] { fp8.to_dlpack(); }), HasSubstr("f8e4m3 has no DLPack 0.6 type code"));
}

}  // namespace
}  // namespace tilejit
