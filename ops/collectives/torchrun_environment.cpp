// The variables torchrun sets for each process it starts, read into a TorchrunEnvironment.
#include <cstdlib>
#include <string>

#include "dsl/error.h"
#include "ops/collectives/bootstrap.h"

namespace tilejit::ops {
namespace {

constexpr const char* kHint = "torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT";

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

int integer_variable(const char* name, int lowest) {
  const char* value = variable(name);
  if (!value) fail("join_from_environment: {} is not set ({})", name, kHint);
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (*end != '\0' || parsed < lowest || parsed > 1'000'000)
    fail("join_from_environment: {}='{}' is not an integer of {} or more", name, value, lowest);
  return static_cast<int>(parsed);
}

}  // namespace

TorchrunEnvironment read_torchrun_environment() {
  TorchrunEnvironment env;
  env.rank = integer_variable("RANK", 0);
  env.world_size = integer_variable("WORLD_SIZE", 1);
  if (env.rank >= env.world_size)
    fail("join_from_environment: RANK={} is not a rank of WORLD_SIZE={}", env.rank, env.world_size);
  env.local_rank = variable("LOCAL_RANK") ? integer_variable("LOCAL_RANK", 0) : 0;
  const char* address = variable("MASTER_ADDR");
  if (!address) fail("join_from_environment: MASTER_ADDR is not set ({})", kHint);
  env.address = address;
  // torchrun's own store listens on MASTER_PORT, so the rendezvous takes the next port.
  env.port = variable("TILEJIT_RENDEZVOUS_PORT") ? integer_variable("TILEJIT_RENDEZVOUS_PORT", 1)
                                                 : integer_variable("MASTER_PORT", 1) + 1;
  if (env.port > 65535) fail("join_from_environment: rendezvous port {} is not a TCP port", env.port);
  return env;
}

}  // namespace tilejit::ops
