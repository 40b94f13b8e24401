// The CUDA device on a GPU (each test skips, saying why, without one): device info, a kernel
// launched through the device interface with streams, events and copies, stream-ordered
// scratch memory, thread-block cluster launches, a cached image the driver refuses compiled
// again, and driver errors that name the failing call.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/target.h"
#include "ops/kernels/examples.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "runtime/tensor.h"

namespace tilejit {
namespace {

using namespace tilejit::dsl;

class CudaDeviceTest : public testing::Test {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda_driver_status();
  }
};

TEST_F(CudaDeviceTest, InfoDescribesTheGpu) {
  const DeviceInfo& info = Device::cuda(0).info();
  EXPECT_EQ(info.kind, DeviceKind::cuda);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.cc_major, 8);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GE(info.shared_per_block_optin, 48 * 1024);
  EXPECT_GT(info.l2_bytes, 0);
  EXPECT_GT(info.memory_bytes, 0);
  EXPECT_NO_THROW(codegen::find_target(info.arch));
  EXPECT_EQ(&Device::cuda(0), &Device::cuda(0));
  EXPECT_THROW(Device::cuda(Device::cuda_device_count()), Error);
}

TEST_F(CudaDeviceTest, RunsAKernel) {
  Device& device = Device::cuda(0);
  Kernel add = ops::vector_add_kernel();
  Constants constants = add.constants({{"BLOCK", 128}});
  KernelRequest request{&add, &constants, add.aligned_facts()};
  auto kernel = device.load(request);
  EXPECT_EQ(kernel->report().arch, device.info().arch);
  EXPECT_GE(kernel->report().registers, 0);

  const int n = 1000;  // not a multiple of BLOCK: the mask matters
  std::vector<float> x(n), out(n, NAN);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * static_cast<float>(i) - 7.0f;
  size_t bytes = n * sizeof(float);
  void* dx = device.allocate(bytes);
  void* dout = device.allocate(bytes);
  device.copy(dx, x.data(), bytes, CopyKind::host_to_device);
  Stream stream = device.create_stream();
  device.memset_async(dout, 0xff, bytes, stream);  // NaN everywhere: an unwritten element fails
  int n_arg = n;
  void* args[] = {&dx, &dx, &dout, &n_arg};
  Event start = device.create_event(), stop = device.create_event();
  start.record(stream);
  device.launch(*kernel, LaunchDims{Dim3{static_cast<uint32_t>((n + 127) / 128), 1, 1}, Dim3{}}, args, stream);
  stop.record(stream);
  stop.synchronize();
  EXPECT_GE(start.elapsed_ms(stop), 0.0f);
  stream.synchronize();
  device.copy(out.data(), dout, bytes, CopyKind::device_to_host);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + x[i]) << "at " << i;

  // Device to device, on the default stream.
  void* dcopy = device.allocate(bytes);
  device.copy(dcopy, dout, bytes, CopyKind::device_to_device);
  std::vector<float> back(n, NAN);
  device.copy(back.data(), dcopy, bytes, CopyKind::device_to_host);
  EXPECT_EQ(back, out);
  device.synchronize();
  for (void* p : {dx, dout, dcopy}) device.free(p);
}

// Scratch tensors come from a stream-ordered pool: each one written and read on its stream,
// released while that work may still be queued, and the memory taken again at once.
TEST_F(CudaDeviceTest, ScratchMemoryIsStreamOrdered) {
  Device& device = Device::cuda(0);
  Stream stream = device.create_stream();
  const int64_t n = 1 << 20;
  std::vector<uint8_t> back(n);
  for (int round = 0; round < 50; ++round) {
    Tensor t = Tensor::scratch(stream, DType::i8, {n});
    ASSERT_EQ(t.shape(), std::vector<int64_t>{n});
    auto value = static_cast<uint8_t>(round + 1);
    device.memset_async(t.data(), value, n, stream);
    if (round % 10 == 0) {
      device.copy_async(back.data(), t.data(), n, CopyKind::device_to_host, stream);
      stream.synchronize();
      ASSERT_EQ(std::count(back.begin(), back.end(), value), n) << "round " << round;
    }
  }
  stream.synchronize();
}

// Runs vector_add (out = x + x) with `x`, in `cluster`s of CTAs of 128 threads; returns out.
std::vector<float> run_vector_add(Device& device, LoadedKernel& kernel, const std::vector<float>& x, Dim3 cluster) {
  const int n = static_cast<int>(x.size());
  size_t bytes = n * sizeof(float);
  std::vector<float> out(n, NAN);
  void* dx = device.allocate(bytes);
  void* dout = device.allocate(bytes);
  device.copy(dx, x.data(), bytes, CopyKind::host_to_device);
  device.memset_async(dout, 0xff, bytes, device.default_stream());
  int n_arg = n;
  void* args[] = {&dx, &dx, &dout, &n_arg};
  device.launch(kernel, LaunchDims{Dim3{static_cast<uint32_t>((n + 127) / 128), 1, 1}, cluster}, args,
                device.default_stream());
  device.copy(out.data(), dout, bytes, CopyKind::device_to_host);
  device.free(dx);
  device.free(dout);
  return out;
}

TEST_F(CudaDeviceTest, ClusterLaunchOnHopper) {
  Device& device = Device::cuda(0);
  if (device.info().cc_major < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9.0";
  Kernel add = ops::vector_add_kernel();
  Constants constants = add.constants({{"BLOCK", 128}});
  KernelRequest request{&add, &constants, {}};
  auto kernel = device.load(request);
  std::vector<float> out = run_vector_add(device, *kernel, std::vector<float>(4 * 128, 2.0f), Dim3{2, 1, 1});
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 4.0f) << "at " << i;
}

// A cached image the driver refuses (as one a newer toolkit made would be) is compiled again
// and replaces the entry; the load succeeds.
TEST_F(CudaDeviceTest, ACachedImageTheDriverRefusesIsCompiledAgain) {
  KernelCache& cache = KernelCache::global();
  if (!cache.enabled()) GTEST_SKIP() << "the kernel cache is disabled (TILEJIT_CACHE_DISABLE)";
  Device& device = Device::cuda(0);
  Kernel add = ops::vector_add_kernel();
  Constants constants = add.constants({{"BLOCK", 128}});
  KernelRequest request{&add, &constants, {}};
  const std::string image_key = device.load(request)->report().cache_entries.back();
  std::string value(**cache.get(image_key));
  size_t elf = value.find("\x7f" "ELF");
  if (elf == std::string::npos) GTEST_SKIP() << "the image holds PTX only (TILEJIT_CUBIN_TOOL=driver)";
  value.replace(elf, 4, "BAD!");
  cache.put(image_key, "vector_add damaged by a test", value);

  auto kernel = device.load(request);
  EXPECT_FALSE(kernel->report().from_disk_cache);
  EXPECT_NE((**cache.get(image_key)).find("\x7f" "ELF"), std::string::npos) << "the entry was not replaced";
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 3.0f;
  std::vector<float> out = run_vector_add(device, *kernel, x, Dim3{});
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], x[i] + x[i]) << "at " << i;
}

TEST_F(CudaDeviceTest, DriverErrorsNameTheCall) {
  Device& device = Device::cuda(0);
  try {
    device.allocate(size_t{1} << 62);
    ADD_FAILURE() << "allocated 4 EiB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA driver: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tilejit
