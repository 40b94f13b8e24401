#include "ops/common/op_kernels.h"

#include <map>
#include <memory>
#include <mutex>

namespace tilejit::ops {

const JitKernel& op_kernel(const std::string& key, const std::function<dsl::Kernel()>& make) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<JitKernel>, std::less<>> kernels;
  std::lock_guard lock(mutex);
  auto it = kernels.find(key);
  if (it == kernels.end()) it = kernels.emplace(key, std::make_unique<JitKernel>(make())).first;
  return *it->second;
}

Stream& op_stream(const Tensor& t, Stream* stream) { return stream ? *stream : t.device().default_stream(); }

}  // namespace tilejit::ops
