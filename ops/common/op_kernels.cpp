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
  if (it == kernels.end()) {
    dsl::Kernel kernel = make();
    kernel.describe_captures(key);
    it = kernels.emplace(key, std::make_unique<JitKernel>(std::move(kernel))).first;
  }
  return *it->second;
}

const JitKernel& op_kernel(const std::string& key, const NamedArguments& args,
                           const std::function<dsl::Kernel(std::vector<ir::Param>)>& make) {
  return op_kernel(key + "(" + args.signature() + ")", [&] { return make(args.params()); });
}

}  // namespace tilejit::ops
