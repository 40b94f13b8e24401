#include "runtime/cuda/cuda_compile.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "codegen/compiler.h"
#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/binary_identity.h"
#include "runtime/cuda/cubin_compiler.h"
#include "runtime/kernel_dump.h"
#include "runtime/version.h"

namespace tilejit::cuda {
namespace {

// The cached image: a magic line, then fields in a fixed order, integers as 8 bytes little
// endian, strings as their length then their bytes. The cache checks that an entry is whole;
// this format only has to recognise a value it did not write (another version's).
constexpr std::string_view kImageMagic = "tilejit cuda image 2\n";

void put_int(std::string& out, int64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>(static_cast<uint64_t>(value) >> (8 * i));
}

void put_string(std::string& out, std::string_view s) {
  put_int(out, static_cast<int64_t>(s.size()));
  out += s;
}

class ImageReader {
 public:
  explicit ImageReader(std::string_view data) : data_(data) {}

  bool read_int(int64_t& value) {
    if (data_.size() < 8) return false;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[i])) << (8 * i);
    data_.remove_prefix(8);
    value = static_cast<int64_t>(v);
    return true;
  }
  bool read_int(int& value) {
    int64_t v = 0;
    if (!read_int(v) || v < INT32_MIN || v > INT32_MAX) return false;
    value = static_cast<int>(v);
    return true;
  }
  bool read_uint32(uint32_t& value) {
    int64_t v = 0;
    if (!read_int(v) || v < 0 || v > UINT32_MAX) return false;
    value = static_cast<uint32_t>(v);
    return true;
  }
  bool read_ints(std::vector<int>& values) {
    int64_t n = 0;
    if (!read_int(n) || n < 0 || static_cast<uint64_t>(n) > data_.size() / 8) return false;
    values.resize(static_cast<size_t>(n));
    for (int& v : values)
      if (!read_int(v)) return false;
    return true;
  }
  bool read_string(std::string& s) {
    int64_t n = 0;
    if (!read_int(n) || n < 0 || static_cast<uint64_t>(n) > data_.size()) return false;
    s.assign(data_.substr(0, n));
    data_.remove_prefix(n);
    return true;
  }
  bool skip_magic() {
    if (!data_.starts_with(kImageMagic)) return false;
    data_.remove_prefix(kImageMagic.size());
    return true;
  }
  bool at_end() const { return data_.empty(); }

 private:
  std::string_view data_;
};

std::string serialize(const CudaKernelImage& image) {
  const KernelReport& r = image.report;
  std::string out(kImageMagic);
  put_string(out, r.name);
  put_string(out, r.arch);
  put_string(out, r.binary_format);
  put_int(out, r.num_threads);
  put_int(out, r.shared_bytes);
  put_int(out, r.registers);
  put_int(out, r.spill_bytes);
  for (uint32_t d : {r.cluster.x, r.cluster.y, r.cluster.z}) put_int(out, d);
  put_int(out, static_cast<int64_t>(r.descriptor_row_slices.size()));
  for (int slices : r.descriptor_row_slices) put_int(out, slices);
  put_string(out, image.ptx);
  put_string(out, image.cubin);
  return out;
}

std::optional<CudaKernelImage> deserialize(std::string_view data) {
  CudaKernelImage image;
  KernelReport& r = image.report;
  ImageReader in(data);
  bool ok = in.skip_magic() && in.read_string(r.name) && in.read_string(r.arch) && in.read_string(r.binary_format) &&
            in.read_int(r.num_threads) && in.read_int(r.shared_bytes) && in.read_int(r.registers) &&
            in.read_int(r.spill_bytes) && in.read_uint32(r.cluster.x) && in.read_uint32(r.cluster.y) &&
            in.read_uint32(r.cluster.z) && in.read_ints(r.descriptor_row_slices) && in.read_string(image.ptx) && in.read_string(image.cubin) && in.at_end();
  auto positive = [](const std::vector<int>& v) { return std::all_of(v.begin(), v.end(), [](int x) { return x > 0; }); };
  bool consistent = !r.name.empty() && !image.ptx.empty() && r.num_threads > 0 && r.cluster.x > 0 && r.cluster.y > 0 &&
                    r.cluster.z > 0 && positive(r.descriptor_row_slices) &&
                    ((r.binary_format == "cubin" && !image.cubin.empty()) ||
                     (r.binary_format == "ptx" && image.cubin.empty()));
  if (!ok || !consistent) return std::nullopt;
  return image;
}

bool is_cache_key(std::string_view s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The image stored under `key`; a value that is not one is reported and treated as a miss.
std::optional<CudaKernelImage> find_image(KernelCache& cache, const std::string& key) {
  auto value = cache.get(key);
  if (!value) return std::nullopt;
  auto image = deserialize(**value);
  if (!image) {
    log::warn("kernel cache: entry {} is not a CUDA kernel image; compiling again", key);
    return std::nullopt;
  }
  image->report.from_disk_cache = true;
  return image;
}

std::string constants_string(const dsl::Constants& constants) {
  std::string out;
  for (auto& [name, value] : constants.values) out += fmt::format("{}={};", name, value);
  return out;
}

// Per parameter: its name and type (kernels one function traces may take different
// parameters, and a body may ask which it has), its facts (`=1`, `%divisibility`), and a
// descriptor's block, which holds its rank. No facts means none hold.
std::string facts_string(const dsl::Kernel& kernel, const std::vector<ir::ArgFacts>& facts) {
  std::string out;
  const std::vector<ir::Param>& params = kernel.params();
  for (size_t i = 0; i < params.size(); ++i) {
    ir::ArgFacts f = i < facts.size() ? facts[i] : ir::ArgFacts{};
    out += fmt::format("{} {}:{}%{}{};", params[i].name, params[i].type.str(), f.equals_one ? "=1" : "",
                       f.divisibility, f.block.empty() ? "" : "/" + ir::shape_str(f.block));
  }
  return out;
}

CudaKernelImage build_image(const ir::Function& fn, const codegen::Target& target,
                            const codegen::CompileOptions& options, const std::string& tool) {
  codegen::CompiledKernel compiled = codegen::compile_to_ptx(fn, target, options);
  CubinResult binary = compile_cubin(compiled.ptx, target.arch, tool);
  CudaKernelImage image;
  KernelReport& r = image.report;
  r.name = compiled.name;
  r.arch = target.arch;
  r.num_threads = compiled.num_warps * 32;
  r.shared_bytes = compiled.shared_bytes;
  record_launch_needs(r, fn);
  r.registers = binary.registers;
  r.spill_bytes = binary.spill_bytes;
  r.binary_format = binary.format;
  image.ptx = std::move(compiled.ptx);
  if (binary.format == "cubin") image.cubin = std::move(binary.bytes);
  log::info("compiled {} for {} with {}: {} registers, {} bytes spilled", r.name, r.arch, tool, r.registers,
            r.spill_bytes);
  return image;
}

// Both entry points: `read_cache` false compiles whatever the cache holds and replaces it.
CudaKernelImage compile_through_cache(const KernelRequest& request, const codegen::Target& target, KernelCache& cache,
                                      const ToolchainVersions& versions, bool read_cache) {
  TJ_CHECK(request.kernel && request.constants);
  const dsl::Kernel& kernel = *request.kernel;
  const codegen::CompileOptions options;
  const std::string tool = requested_cubin_tool();  // resolved only when a compile is needed
  const std::string option_text = fmt::format("O{}", options.opt_level);

  std::string launch_key;
  std::string missed_ir_key;  // an IR key the launch level pointed at that held no image
  auto found_by = [&](CudaKernelImage image, const std::string& ir_key) {
    if (!launch_key.empty()) image.report.cache_entries.push_back(launch_key);
    image.report.cache_entries.push_back(ir_key);
    return image;
  };
  if (std::string code = code_identity(kernel.code_anchor()); !code.empty()) {
    launch_key = cache_key({"launch", code, kernel.name(), kernel.captures(), constants_string(*request.constants),
                            facts_string(kernel, request.facts), target.arch, target.ptx_feature, option_text,
                            versions.tilejit, versions.llvm, tool});
    if (auto ir_key = read_cache ? cache.get(launch_key) : std::nullopt) {
      // The value names another entry; anything but a key is treated as a miss.
      if (is_cache_key(**ir_key)) {
        if (auto image = find_image(cache, **ir_key)) return found_by(std::move(*image), std::string(**ir_key));
        missed_ir_key = **ir_key;
      } else {
        log::warn("kernel cache: entry {} is not a kernel key; tracing again", launch_key);
      }
    }
  }

  auto fn = kernel.trace(*request.constants, request.facts);
  std::string ir_key = cache_key(
      {"kernel", fn->str(), target.arch, target.ptx_feature, option_text, versions.tilejit, versions.llvm, tool});
  std::optional<CudaKernelImage> image;
  if (read_cache && ir_key != missed_ir_key) image = find_image(cache, ir_key);
  if (!image) {
    dump_kernel_if_requested(*fn, target);
    image = build_image(*fn, target, options, cubin_tool());
    cache.put(ir_key, fmt::format("{} {} {}", kernel.name(), target.arch, image->report.binary_format),
              serialize(*image));
  }
  if (!launch_key.empty()) cache.put(launch_key, fmt::format("{} {} launch", kernel.name(), target.arch), ir_key);
  return found_by(std::move(*image), ir_key);
}

}  // namespace

ToolchainVersions ToolchainVersions::current() { return {tilejit_version(), codegen::llvm_version()}; }

CudaKernelImage compile_cuda_kernel(const KernelRequest& request, const codegen::Target& target, KernelCache& cache,
                                    const ToolchainVersions& versions) {
  return compile_through_cache(request, target, cache, versions, true);
}

CudaKernelImage recompile_cuda_kernel(const KernelRequest& request, const codegen::Target& target, KernelCache& cache,
                                      const ToolchainVersions& versions) {
  return compile_through_cache(request, target, cache, versions, false);
}

}  // namespace tilejit::cuda
