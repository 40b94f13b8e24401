// The kernels tilejit registers by name: the examples the command line lists, emits and
// (once a device is attached) runs.
#pragma once

#include <string>
#include <vector>

#include "dsl/kernel.h"

namespace tilejit::ops {

struct RegisteredKernel {
  dsl::Kernel kernel;
  std::string summary;  // one line for `tilejit list`
};

// Every registered kernel, in a stable order.
const std::vector<RegisteredKernel>& registered_kernels();
std::vector<std::string> registered_kernel_names();
// The kernel called `name`; throws tilejit::Error naming the registered ones otherwise.
const RegisteredKernel& find_kernel(const std::string& name);

}  // namespace tilejit::ops
