// The CUDA side of the runtime. Without a GPU: the two-level kernel cache (a warm start with
// a new cache object, like a new process, neither traces nor compiles), one entry per
// specialization, corrupted entries recompiled, each PTX -> cubin tool, binary identities,
// and the clear error when there is no driver. The CUDA device itself is tested on a GPU in
// tests/gpu/cuda_device_test.cpp.
#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/ptxas.h"
#include "codegen/target.h"
#include "dsl/error.h"
#include "dsl/kernel.h"
#include "runtime/binary_identity.h"
#include "runtime/cuda/cubin_compiler.h"
#include "runtime/cuda/cuda_compile.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/kernel_cache.h"
#include "tests/scoped_env.h"

namespace tilejit {
namespace {

namespace fs = std::filesystem;
using namespace tilejit::dsl;
using cuda::compile_cuda_kernel;
using cuda::CudaKernelImage;
using testing_util::ScopedEnv;

// How many times add_one's body has been traced in this process (tracing runs on the
// calling thread, and these tests call from one).
int traces = 0;

// out[i] = x[i] + 1; counts its traces.
const Kernel& add_one() {
  static const Kernel kernel = define_kernel(
      "tj_test_add_one", {"x", "out", "n"}, {{"BLOCK", 128}},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
        ++traces;
        Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
        Tile mask = offs < n;
        store(out + offs, load(x + offs, mask) + 1.0, mask);
      });
  return kernel;
}

class CudaCompileTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tilejit_cuda_compile_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    if (cuda::cubin_tool() == "driver") GTEST_SKIP() << "neither nvJitLink nor ptxas is installed: no cubin to check";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A new KernelCache on the test's directory: what a new process would see.
  KernelCache new_cache() const { return KernelCache(CacheOptions{dir_.string(), true}); }

  CudaKernelImage compile(KernelCache& cache, const Constants& constants, const std::vector<ir::ArgFacts>& facts = {},
                          const std::string& arch = "sm_90a") {
    KernelRequest request{&add_one(), &constants, facts};
    return compile_cuda_kernel(request, codegen::find_target(arch), cache);
  }

  fs::path dir_;
};

bool is_elf(const std::string& bytes) { return bytes.rfind("\x7f" "ELF", 0) == 0; }

TEST_F(CudaCompileTest, WarmStartNeitherTracesNorCompiles) {
  Constants constants = add_one().constants();
  int before = traces;
  KernelCache cold = new_cache();
  CudaKernelImage first = compile(cold, constants);
  EXPECT_EQ(traces, before + 1);
  EXPECT_EQ(first.report.binary_format, "cubin");
  EXPECT_TRUE(is_elf(first.cubin));
  EXPECT_NE(first.ptx.find(".entry tj_test_add_one"), std::string::npos);
  EXPECT_EQ(first.report.name, "tj_test_add_one");
  EXPECT_EQ(first.report.arch, "sm_90a");
  EXPECT_EQ(first.report.num_threads, 128);
  EXPECT_GE(first.report.registers, 0);
  EXPECT_GE(first.report.spill_bytes, 0);
  EXPECT_FALSE(first.report.from_disk_cache);

  KernelCache warm = new_cache();
  CudaKernelImage second = compile(warm, constants);
  EXPECT_EQ(traces, before + 1) << "a warm start traced the kernel";
  EXPECT_TRUE(second.report.from_disk_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);
  EXPECT_EQ(second.report.name, first.report.name);
  EXPECT_EQ(second.report.registers, first.report.registers);
  EXPECT_EQ(second.report.spill_bytes, first.report.spill_bytes);
  EXPECT_EQ(second.report.num_threads, first.report.num_threads);
  EXPECT_EQ(second.report.shared_bytes, first.report.shared_bytes);

  // One launch entry and one image entry, labelled for people; the reports name both, the
  // launch entry first, whether they stored them or found them.
  std::vector<std::string> labels;
  std::map<std::string, std::string> label_of;
  for (auto& entry : warm.list()) labels.push_back(entry.label), label_of[entry.key] = entry.label;
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, (std::vector<std::string>{"tj_test_add_one sm_90a cubin", "tj_test_add_one sm_90a launch"}));
  ASSERT_EQ(first.report.cache_entries.size(), 2u);
  EXPECT_EQ(label_of[first.report.cache_entries[0]], "tj_test_add_one sm_90a launch");
  EXPECT_EQ(label_of[first.report.cache_entries[1]], "tj_test_add_one sm_90a cubin");
  EXPECT_EQ(second.report.cache_entries, first.report.cache_entries);
}

// A kernel in clusters of two CTAs sharing a descriptor's blocks: what its launches need (the
// cluster, the tensor map's box of half a block) comes back with a warm start's image.
TEST_F(CudaCompileTest, AWarmStartKeepsTheClusterAndTheDescriptorBoxes) {
  static const Kernel kernel = define_kernel(
      "tj_test_cluster_copy", {"src", "out"}, {{"cluster_x", 2}},
      [](const Constants&, TensorDesc<bf16> src, Ptr<bf16> out) {
        Tile block = desc_load(src, {program_id(0) / 2 * 16, 0}, ClusterShared{0});  // (16, 64)
        Tile rows = program_id(0) * 16 + arange(0, 16);
        store(out + expand_dims(rows, 1) * 64 + expand_dims(arange(0, 64), 0), block);
      });
  Constants constants = kernel.constants();
  std::vector<ir::ArgFacts> facts(2);
  facts[0].block = {16, 64};
  KernelRequest request{&kernel, &constants, facts};
  KernelCache cold = new_cache();
  CudaKernelImage first = compile_cuda_kernel(request, codegen::find_target("sm_90a"), cold);
  EXPECT_EQ(first.report.cluster, (Dim3{2, 1, 1}));
  EXPECT_EQ(first.report.descriptor_row_slices, std::vector<int>{2});
  EXPECT_NE(first.ptx.find(".reqnctapercluster 2, 1, 1"), std::string::npos);

  KernelCache warm = new_cache();
  CudaKernelImage second = compile_cuda_kernel(request, codegen::find_target("sm_90a"), warm);
  EXPECT_TRUE(second.report.from_disk_cache);
  EXPECT_EQ(second.report.cluster, first.report.cluster);
  EXPECT_EQ(second.report.descriptor_row_slices, first.report.descriptor_row_slices);
}

// A descriptor's rank and block are part of the launch key: a kernel traced for blocks of a
// rank-2 tensor is never served for a rank-3 one (which takes two more parameters) or for
// another block, from the memory or the disk.
TEST_F(CudaCompileTest, EachDescriptorRankAndBlockHasItsOwnEntry) {
  static const Kernel kernel = define_kernel(
      "tj_test_any_rank_copy", {"src", "out"}, {}, [](const Constants&, TensorDesc<bf16> src, Ptr<bf16> out) {
        ++traces;
        std::vector<Operand> at(src.shape().size(), 0);
        ir::Shape tile = src.type().block_tile();
        store(out + expand_dims(arange(0, tile[0]), 1) * tile[1] + expand_dims(arange(0, tile[1]), 0),
              desc_load(src, at));
      });
  Constants constants = kernel.constants();
  KernelCache cache = new_cache();
  std::vector<std::string> ptx;
  for (ir::Shape block : {ir::Shape{16, 64}, ir::Shape{1, 16, 64}, ir::Shape{32, 64}}) {
    std::vector<ir::ArgFacts> facts(2);
    facts[0].block = block;
    KernelRequest request{&kernel, &constants, facts};
    int before = traces;
    CudaKernelImage image = compile_cuda_kernel(request, codegen::find_target("sm_90a"), cache);
    EXPECT_EQ(traces, before + 1) << "block " << ir::shape_str(block) << " was served another block's kernel";
    ptx.push_back(image.ptx);
  }
  EXPECT_NE(ptx[0].find("cp.async.bulk.tensor.2d"), std::string::npos);
  EXPECT_NE(ptx[1].find("cp.async.bulk.tensor.3d"), std::string::npos);
}

// Entries written by another tilejit or LLVM version are never read: a version change
// traces and compiles again, and each version finds its own entries.
TEST_F(CudaCompileTest, AnotherVersionNeverReadsTheseEntries) {
  Constants constants = add_one().constants();
  KernelRequest request{&add_one(), &constants, {}};
  const codegen::Target& target = codegen::find_target("sm_90a");
  cuda::ToolchainVersions now = cuda::ToolchainVersions::current();
  cuda::ToolchainVersions next_tilejit{now.tilejit + ".next", now.llvm}, next_llvm{now.tilejit, now.llvm + ".next"};
  KernelCache cache = new_cache();
  compile_cuda_kernel(request, target, cache, now);
  for (const auto& other : {next_tilejit, next_llvm}) {
    int before = traces;
    KernelCache fresh = new_cache();
    EXPECT_FALSE(compile_cuda_kernel(request, target, fresh, other).report.from_disk_cache);
    EXPECT_EQ(traces, before + 1) << "another version reused an entry";
  }
  KernelCache again = new_cache();
  for (const auto& version : {now, next_tilejit, next_llvm})
    EXPECT_TRUE(compile_cuda_kernel(request, target, again, version).report.from_disk_cache);
}

TEST_F(CudaCompileTest, EachSpecializationIsItsOwnEntry) {
  Constants base = add_one().constants();
  Constants wide = add_one().constants({{"BLOCK", 256}});
  std::vector<ir::ArgFacts> aligned = add_one().aligned_facts();
  struct Case {
    const char* what;
    const Constants* constants;
    std::vector<ir::ArgFacts> facts;
    const char* arch;
  };
  std::vector<Case> cases = {{"base", &base, {}, "sm_90a"},
                             {"BLOCK=256", &wide, {}, "sm_90a"},
                             {"aligned facts", &base, aligned, "sm_90a"},
                             {"sm_80", &base, {}, "sm_80"}};
  std::vector<std::string> cubins;
  for (auto& c : cases) {
    KernelCache cache = new_cache();
    int before = traces;
    CudaKernelImage image = compile(cache, *c.constants, c.facts, c.arch);
    EXPECT_EQ(traces, before + 1) << c.what << " was served another specialization's entry";
    EXPECT_FALSE(image.report.from_disk_cache) << c.what;
    EXPECT_EQ(image.report.arch, c.arch) << c.what;
    // A launch entry and an image entry more: the traced IR differs too.
    EXPECT_EQ(cache.list().size(), 2 * (cubins.size() + 1)) << c.what;
    cubins.push_back(image.cubin);
  }

  // Every one of them is now a warm start.
  int before = traces;
  for (size_t i = 0; i < cases.size(); ++i) {
    KernelCache cache = new_cache();
    CudaKernelImage image = compile(cache, *cases[i].constants, cases[i].facts, cases[i].arch);
    EXPECT_TRUE(image.report.from_disk_cache) << cases[i].what;
    EXPECT_EQ(image.cubin, cubins[i]) << cases[i].what;
  }
  EXPECT_EQ(traces, before);
}

// out[i] = x[i] * factor, `factor` captured: one lambda type for every factor.
Kernel scale_kernel(float factor) {
  return define_kernel("tj_test_scale", {"x", "out", "n"}, {{"BLOCK", 128}},
                       [factor](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
                         ++traces;
                         Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
                         Tile mask = offs < n;
                         store(out + offs, load(x + offs, mask) * static_cast<double>(factor), mask);
                       });
}

// The f32 constant as PTX writes it (0f40400000 for 3).
std::string ptx_float(float value) { return fmt::format("0f{:08X}", std::bit_cast<uint32_t>(value)); }

CudaKernelImage compile_kernel(const Kernel& kernel, KernelCache& cache) {
  Constants constants = kernel.constants();
  return compile_cuda_kernel(KernelRequest{&kernel, &constants, {}}, codegen::find_target("sm_90a"), cache);
}

// Kernels made by one lambda share its code and name; what the lambda captured tells them
// apart. Undescribed, the warm start traces (the image is found by its IR); described, as ops
// describe theirs, it traces nothing and still never serves another capture's image.
TEST_F(CudaCompileTest, KernelsOfOneLambdaAreToldApartByWhatItCaptured) {
  for (bool described : {false, true}) {
    SCOPED_TRACE(described ? "captures described" : "captures unknown");
    Kernel by_three = scale_kernel(3), by_five = scale_kernel(5);
    EXPECT_EQ(by_three.code_anchor(), nullptr);
    if (described) by_three.describe_captures("factor=3"), by_five.describe_captures("factor=5");
    EXPECT_EQ(by_three.code_anchor() != nullptr, described);
    KernelCache cold = new_cache();
    compile_kernel(by_three, cold);
    for (int start = 0; start < 2; ++start) {  // a cold start, then a warm one
      KernelCache cache = new_cache();
      int before = traces;
      CudaKernelImage image = compile_kernel(by_five, cache);
      EXPECT_NE(image.ptx.find(ptx_float(5)), std::string::npos) << "start " << start << " served factor 3's image";
      EXPECT_EQ(image.ptx.find(ptx_float(3)), std::string::npos) << "start " << start;
      EXPECT_EQ(traces, before + (start == 1 && described ? 0 : 1)) << "start " << start;
    }
  }
}

// Two functions of one signature given the same kernel name: each is its own code.
void scale_by_three(const Constants& c, Ptr<f32> x, Ptr<f32> out) {
  Tile offs = arange(0, c["BLOCK"]);
  store(out + offs, load(x + offs) * 3.0);
}
void scale_by_five(const Constants& c, Ptr<f32> x, Ptr<f32> out) {
  Tile offs = arange(0, c["BLOCK"]);
  store(out + offs, load(x + offs) * 5.0);
}

TEST_F(CudaCompileTest, FunctionsOfOneSignatureAndNameAreToldApart) {
  Kernel by_three = define_kernel("tj_test_scale_fn", {"x", "out"}, {{"BLOCK", 128}}, scale_by_three);
  Kernel by_five = define_kernel("tj_test_scale_fn", {"x", "out"}, {{"BLOCK", 128}}, scale_by_five);
  ASSERT_NE(by_three.code_anchor(), nullptr);
  ASSERT_NE(by_five.code_anchor(), nullptr);
  for (int start = 0; start < 2; ++start) {  // a cold start, then a warm one
    KernelCache first = new_cache();
    EXPECT_NE(compile_kernel(by_three, first).ptx.find(ptx_float(3)), std::string::npos) << "start " << start;
    KernelCache second = new_cache();
    EXPECT_NE(compile_kernel(by_five, second).ptx.find(ptx_float(5)), std::string::npos) << "start " << start;
  }
}

TEST_F(CudaCompileTest, ACorruptedImageIsCompiledAgain) {
  Constants constants = add_one().constants();
  KernelCache cold = new_cache();
  CudaKernelImage original = compile(cold, constants);

  // Replace the image with bytes that are a valid cache entry but not an image.
  KernelCache tamper = new_cache();
  int images = 0;
  for (auto& entry : tamper.list())
    if (entry.label.ends_with(" cubin")) {
      tamper.put(entry.key, entry.label, "not a kernel image");
      ++images;
    }
  ASSERT_EQ(images, 1);

  int before = traces;
  KernelCache after = new_cache();
  CudaKernelImage recompiled = compile(after, constants);
  EXPECT_EQ(traces, before + 1);
  EXPECT_FALSE(recompiled.report.from_disk_cache);
  EXPECT_EQ(recompiled.cubin, original.cubin);

  // The repaired entry serves the next start without a trace.
  KernelCache next = new_cache();
  EXPECT_TRUE(compile(next, constants).report.from_disk_cache);
  EXPECT_EQ(traces, before + 1);
}

// Damages the cubin inside the image entry `key` of `cache`, which stays a well-formed image:
// its ELF magic, as a newer toolkit's or another GPU's binary would look wrong to the driver.
void damage_cubin(KernelCache& cache, const std::string& key) {
  std::string value(**cache.get(key));
  size_t elf = value.find("\x7f" "ELF");
  ASSERT_NE(elf, std::string::npos);
  value.replace(elf, 4, "BAD!");
  cache.put(key, "tj_test_add_one sm_90a cubin", value);
}

// What the device does when the driver refuses an image the cache served: the recompile
// reads nothing from the cache and replaces the entries, so the next start is served the
// new image.
TEST_F(CudaCompileTest, ARecompileReplacesTheCachedImage) {
  Constants constants = add_one().constants();
  KernelCache cold = new_cache();
  CudaKernelImage original = compile(cold, constants);

  KernelCache tamper = new_cache();
  damage_cubin(tamper, original.report.cache_entries.back());

  KernelCache served = new_cache();
  CudaKernelImage damaged = compile(served, constants);
  EXPECT_TRUE(damaged.report.from_disk_cache);
  EXPECT_FALSE(is_elf(damaged.cubin));

  int before = traces;
  CudaKernelImage recompiled = cuda::recompile_cuda_kernel(
      KernelRequest{&add_one(), &constants, {}}, codegen::find_target("sm_90a"), served);
  EXPECT_EQ(traces, before + 1);
  EXPECT_FALSE(recompiled.report.from_disk_cache);
  EXPECT_EQ(recompiled.cubin, original.cubin);
  EXPECT_EQ(recompiled.report.cache_entries, original.report.cache_entries);

  // The same cache object and a new one (a later process) are both served the new image.
  KernelCache next = new_cache();
  for (KernelCache* cache : {&served, &next}) {
    CudaKernelImage image = compile(*cache, constants);
    EXPECT_TRUE(image.report.from_disk_cache);
    EXPECT_EQ(image.cubin, original.cubin);
  }
  EXPECT_EQ(traces, before + 1);
}

// A pack is read-only: the recompile's image shadows the pack's in the local directory.
TEST_F(CudaCompileTest, ARecompileShadowsAPacksImage) {
  Constants constants = add_one().constants();
  fs::path pack_dir = dir_ / "pack";
  fs::create_directories(pack_dir);
  KernelCache packed(CacheOptions{pack_dir.string(), true});
  CudaKernelImage original = compile(packed, constants);
  damage_cubin(packed, original.report.cache_entries.back());
  fs::path pack_path = dir_ / "damaged.tjpack";
  write_cache_pack(packed, PackManifest::current("sm_90a", "test"), pack_path.string());

  KernelCache local = new_cache();
  local.attach_pack(CachePack::open(pack_path.string(), PackRequirements::for_arch("sm_90a")));
  EXPECT_FALSE(is_elf(compile(local, constants).cubin));  // the pack's damaged image
  cuda::recompile_cuda_kernel(KernelRequest{&add_one(), &constants, {}}, codegen::find_target("sm_90a"), local);

  KernelCache next = new_cache();
  next.attach_pack(CachePack::open(pack_path.string(), PackRequirements::for_arch("sm_90a")));
  CudaKernelImage image = compile(next, constants);
  EXPECT_EQ(image.cubin, original.cubin);
  EXPECT_TRUE(image.report.from_disk_cache);
  EXPECT_EQ(next.stats().prebuilt_hits, 0);
}

TEST(CudaDriver, ImageRejectionsAreToldFromDeviceFailures) {
  for (CUresult r : {CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_INVALID_PTX,
                     CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_NOT_FOUND})
    EXPECT_TRUE(cuda::rejects_module_image(r)) << static_cast<int>(r);
  for (CUresult r : {CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_INVALID_CONTEXT,
                     CUDA_ERROR_LAUNCH_FAILED})
    EXPECT_FALSE(cuda::rejects_module_image(r)) << static_cast<int>(r);
}

TEST_F(CudaCompileTest, ACorruptedLaunchEntryTracesAgainButReusesTheImage) {
  Constants constants = add_one().constants();
  KernelCache cold = new_cache();
  CudaKernelImage original = compile(cold, constants);

  KernelCache tamper = new_cache();
  for (auto& entry : tamper.list())
    if (entry.label.ends_with(" launch")) tamper.put(entry.key, entry.label, "../../not-a-key");

  int before = traces;
  KernelCache after = new_cache();
  CudaKernelImage image = compile(after, constants);
  EXPECT_EQ(traces, before + 1);  // the launch level missed ...
  EXPECT_TRUE(image.report.from_disk_cache);  // ... the IR level did not
  EXPECT_EQ(image.cubin, original.cubin);
}

TEST_F(CudaCompileTest, EachCubinToolGivesItsOwnEntry) {
  Constants constants = add_one().constants();
  std::vector<std::string> tools = {"driver"};
  if (codegen::find_ptxas()) tools.push_back("ptxas");
  if (cuda::nvjitlink_load_error().empty()) tools.push_back("nvjitlink");
  for (auto& tool : tools) {
    ScopedEnv env("TILEJIT_CUBIN_TOOL", tool.c_str());
    KernelCache cache = new_cache();
    int before = traces;
    CudaKernelImage image = compile(cache, constants);
    EXPECT_EQ(traces, before + 1) << tool << " was served another tool's entry";
    if (tool == "driver") {
      EXPECT_EQ(image.report.binary_format, "ptx");
      EXPECT_TRUE(image.cubin.empty());
      EXPECT_EQ(image.report.registers, -1);
    } else {
      EXPECT_EQ(image.report.binary_format, "cubin") << tool;
      EXPECT_TRUE(is_elf(image.cubin)) << tool;
      EXPECT_GE(image.report.registers, 0) << tool;
      EXPECT_GE(image.report.spill_bytes, 0) << tool;
    }
    KernelCache warm = new_cache();
    EXPECT_TRUE(compile(warm, constants).report.from_disk_cache) << tool;
  }
}

// A small, valid PTX program for the tool tests, from the compiler.
std::string add_one_ptx() {
  Constants constants = add_one().constants();
  ScopedEnv env("TILEJIT_CUBIN_TOOL", "driver");
  KernelCache memory_only(CacheOptions{"", true});
  KernelRequest request{&add_one(), &constants, {}};
  return compile_cuda_kernel(request, codegen::find_target("sm_90a"), memory_only).ptx;
}

void expect_tool_compiles(const std::string& tool) {
  cuda::CubinResult result = cuda::compile_cubin(add_one_ptx(), "sm_90a", tool);
  EXPECT_EQ(result.tool, tool);
  EXPECT_EQ(result.format, "cubin");
  EXPECT_TRUE(is_elf(result.bytes));
  EXPECT_GE(result.registers, 0) << result.log;
  EXPECT_EQ(result.spill_bytes, 0) << result.log;

  try {
    cuda::compile_cubin(".version 8.0\n.target sm_90a\n.address_size 64\nthis is not ptx\n", "sm_90a", tool);
    ADD_FAILURE() << tool << " accepted invalid PTX";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed to compile PTX for sm_90a"), std::string::npos) << e.what();
  }
}

TEST(CubinCompiler, Ptxas) {
  if (!codegen::find_ptxas()) GTEST_SKIP() << "ptxas is not installed";
  expect_tool_compiles("ptxas");
}

TEST(CubinCompiler, NvJitLink) {
  if (!cuda::nvjitlink_load_error().empty()) GTEST_SKIP() << cuda::nvjitlink_load_error();
  expect_tool_compiles("nvjitlink");
}

TEST(CubinCompiler, DriverKeepsThePtx) {
  std::string ptx = add_one_ptx();
  cuda::CubinResult result = cuda::compile_cubin(ptx, "sm_90a", "driver");
  EXPECT_EQ(result.format, "ptx");
  EXPECT_EQ(result.bytes, ptx);
  EXPECT_EQ(result.registers, -1);
}

TEST(CubinCompiler, ToolFromTheEnvironment) {
  {
    ScopedEnv env("TILEJIT_CUBIN_TOOL", "ptxas");
    EXPECT_EQ(cuda::cubin_tool(), "ptxas");
  }
  {
    ScopedEnv env("TILEJIT_CUBIN_TOOL", "nvcc");
    try {
      cuda::cubin_tool();
      ADD_FAILURE() << "an unknown tool was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("nvjitlink, ptxas, driver"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv env("TILEJIT_CUBIN_TOOL", "");
    std::string expected = cuda::nvjitlink_load_error().empty() ? "nvjitlink"
                           : codegen::find_ptxas()              ? "ptxas"
                                                                : "driver";
    EXPECT_EQ(cuda::cubin_tool(), expected);
  }
}

void function_in_this_binary() {}

TEST(BinaryIdentity, NamesTheBinaryByItsBuildId) {
  std::string self = binary_identity(reinterpret_cast<const void*>(&function_in_this_binary));
  EXPECT_TRUE(self.starts_with("build-id:")) << self;  // Debian's toolchain links with --build-id
  EXPECT_GT(self.size(), std::string("build-id:").size());
  EXPECT_EQ(binary_identity(add_one().code_anchor()), self);
  // Another object (the C library) has another identity.
  std::string libc = binary_identity(reinterpret_cast<const void*>(&::dlopen));
  EXPECT_FALSE(libc.empty());
  EXPECT_NE(libc, self);
  // Stable across calls.
  EXPECT_EQ(binary_identity(reinterpret_cast<const void*>(&function_in_this_binary)), self);
}

TEST(BinaryIdentity, UnknownAddressesHaveNone) {
  int on_stack = 0;
  EXPECT_EQ(binary_identity(nullptr), "");
  EXPECT_EQ(binary_identity(&on_stack), "");
  auto on_heap = std::make_unique<int>(0);
  EXPECT_EQ(binary_identity(on_heap.get()), "");
  EXPECT_EQ(code_identity(nullptr), "");
}

TEST(BinaryIdentity, CodeIdentityTellsFunctionsOfOneBinaryApart) {
  auto here = reinterpret_cast<const void*>(&function_in_this_binary);
  std::string a = code_identity(here);
  std::string b = code_identity(add_one().code_anchor());
  EXPECT_TRUE(a.starts_with(binary_identity(here) + "+0x")) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(code_identity(here), a);
}

TEST(CudaDriver, WithoutADriverTheErrorIsClear) {
  if (cuda_driver_available()) {
    EXPECT_GE(cuda_device_count(), 0);
    EXPECT_GT(cuda_driver_version(), 0);
    GTEST_SKIP() << "a CUDA driver is present (version " << cuda_driver_version() << ")";
  }
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_EQ(cuda_driver_version(), 0);
  // The library itself may load with no GPU behind it; then cuInit's failure is the message.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the outcome is kept: the same error twice
    try {
      cuda_device(0);
      ADD_FAILURE() << "a CUDA device without a driver";
    } catch (const Error& e) {
      std::string message = e.what();
      if (attempt == 0) std::printf("without a driver: %s\n", message.c_str());
      if (lib) {
        EXPECT_NE(message.find("CUDA driver: cuInit failed"), std::string::npos) << message;
      } else {
        EXPECT_NE(message.find("libcuda.so.1"), std::string::npos) << message;
        EXPECT_NE(message.find("Device::emu()"), std::string::npos) << message;
      }
    }
  }
  if (lib) ::dlclose(lib);
}

}  // namespace
}  // namespace tilejit
