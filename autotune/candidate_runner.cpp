#include "autotune/candidate_runner.h"

#include <unistd.h>

#include "dsl/error.h"

namespace tilejit::autotune {

void check_problem_fits(std::string_view op, const ProblemShape& shape, long double device_bytes,
                        long double host_bytes, const DeviceInfo& device) {
  constexpr long double gib = 1024.0L * 1024 * 1024;
  if (device.memory_bytes > 0 && device_bytes > device.memory_bytes)
    fail("{} [{}]: its buffers need {:.1f} GiB on {}, which has {:.1f} GiB", op, shape.str(), device_bytes / gib,
         device.name, device.memory_bytes / gib);
  const long double host_memory = static_cast<long double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (host_memory > 0 && host_bytes > host_memory)
    fail("{} [{}]: its host reference needs {:.1f} GiB, and this machine has {:.1f} GiB", op, shape.str(),
         host_bytes / gib, host_memory / gib);
}

}  // namespace tilejit::autotune
