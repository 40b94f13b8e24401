// The unique id handed over through a file: one line, "tilejit-unique-id <world size> <hex>".
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "dsl/error.h"
#include "ops/collectives/bootstrap.h"

namespace tilejit::ops {
namespace {

constexpr const char* kTag = "tilejit-unique-id";

std::string to_hex(const UniqueId& id) {
  std::string hex;
  for (uint8_t b : id.bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

void write_id_file(const std::string& path, int world_size, const UniqueId& id) {
  const std::string temporary = fmt::format("{}.{}.tmp", path, getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << kTag << ' ' << world_size << ' ' << to_hex(id) << '\n';
    out.close();
    if (!out) fail("join_by_file: rank 0 cannot write {}: {}", temporary, std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temporary.c_str());
    fail("join_by_file: rank 0 cannot rename {} to {}: {}", temporary, path, std::strerror(error));
  }
}

// The id in the file, or nothing while there is no file yet.
std::optional<UniqueId> read_id_file(const std::string& path, int rank, int world_size) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string tag, hex;
  int file_world_size = 0;
  in >> tag >> file_world_size >> hex;
  UniqueId id;
  if (tag != kTag || hex.size() != 2 * id.bytes.size() ||
      hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail("join_by_file: {} is not a tilejit unique id file (rank {} read it)", path, rank);
  if (file_world_size != world_size)
    fail("join_by_file: {} is for a world of {} ranks, but rank {} expects {}", path, file_world_size, rank,
         world_size);
  for (size_t i = 0; i < id.bytes.size(); ++i)
    id.bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return id;
}

}  // namespace

UniqueId exchange_id_by_file(const std::string& path, int rank, int world_size,
                             const std::function<UniqueId()>& make_id, std::chrono::milliseconds timeout) {
  if (rank == 0) {
    UniqueId id = make_id();
    write_id_file(path, world_size, id);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<UniqueId> id = read_id_file(path, rank, world_size)) return *id;
    if (std::chrono::steady_clock::now() >= deadline)
      fail("join_by_file: rank {} waited {} ms for rank 0 to write {}", rank, timeout.count(), path);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace tilejit::ops
