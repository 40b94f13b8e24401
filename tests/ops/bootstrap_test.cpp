// Handing rank 0's unique id to the other ranks before they join an NCCL communicator: through
// a file and through a TCP rendezvous (ranks played by threads, arbitrary ids, so no NCCL is
// needed), torchrun's environment, and NCCL's own ids where the library is present.
#include "ops/collectives/bootstrap.h"

#include <gmock/gmock.h>

#include <cstdio>
#include <thread>

#include "runtime/nccl/nccl_comm.h"
#include "tests/error_message.h"
#include "tests/ops/collectives_test_util.h"
#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tjcoll {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using tilejit::testing_util::error_of;
using tilejit::testing_util::ScopedEnv;
using tilejit::testing_util::TempDirectory;
using namespace std::chrono_literals;

UniqueId made_up_id(Rng& rng) {
  UniqueId id;
  for (auto& b : id.bytes) b = static_cast<uint8_t>(rng.integer(0, 255));
  return id;
}

// Every rank of `world` runs `exchange` on its own thread (rank 0 last, after `rank0_delay`);
// returns the ids the ranks got, or their errors.
struct Outcome {
  std::vector<UniqueId> ids;
  std::vector<std::string> errors;
};
Outcome exchange_on_threads(int world, std::chrono::milliseconds rank0_delay,
                            const std::function<UniqueId(int rank)>& exchange) {
  Outcome out{std::vector<UniqueId>(static_cast<size_t>(world)), std::vector<std::string>(static_cast<size_t>(world))};
  std::vector<std::thread> threads;
  for (int r = world - 1; r >= 0; --r) {
    if (r == 0) std::this_thread::sleep_for(rank0_delay);
    threads.emplace_back([&, r] {
      out.errors[static_cast<size_t>(r)] = error_of([&] { out.ids[static_cast<size_t>(r)] = exchange(r); });
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// A TCP connection to the local port, or -1 while nothing listens there.
int connect_locally(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  close(fd);
  return -1;
}

// A server on `port` that is not rank 0: it answers one connection with zeros.
void serve_zeros_once(int port) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int yes = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  int peer = accept(listener, nullptr, nullptr);
  char hello[12];  // read first: closing with unread data would reset the connection
  for (size_t got = 0; got < sizeof hello;) {
    ssize_t n = recv(peer, hello + got, sizeof hello - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  std::vector<char> zeros(256, 0);
  EXPECT_EQ(send(peer, zeros.data(), zeros.size(), MSG_NOSIGNAL), static_cast<ssize_t>(zeros.size()));
  close(peer);
  close(listener);
}

TEST(Bootstrap, ByFile) {
  TJ_SEEDED_RNG(rng);
  const UniqueId id = made_up_id(rng);
  TempDirectory dir;
  const std::string path = dir / "unique-id";
  Outcome out = exchange_on_threads(4, 100ms, [&](int rank) {
    return exchange_id_by_file(
        path, rank, 4, [&] { return id; }, 10s);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.errors[static_cast<size_t>(r)], "no error") << "rank " << r;
    EXPECT_EQ(out.ids[static_cast<size_t>(r)].bytes, id.bytes) << "rank " << r;
  }
}

TEST(Bootstrap, ByFileErrors) {
  TempDirectory dir;
  const std::string path = dir / "unique-id";
  EXPECT_THAT(error_of([&] { exchange_id_by_file(path, 1, 2, nullptr, 100ms); }),
              HasSubstr("join_by_file: rank 1 waited 100 ms for rank 0 to write " + path));
  exchange_id_by_file(
      path, 0, 2, [] { return UniqueId{}; }, 1s);
  EXPECT_THAT(error_of([&] { exchange_id_by_file(path, 2, 3, nullptr, 1s); }),
              HasSubstr("join_by_file: " + path + " is for a world of 2 ranks, but rank 2 expects 3"));
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("something else\n", f);
  std::fclose(f);
  EXPECT_THAT(error_of([&] { exchange_id_by_file(path, 1, 2, nullptr, 1s); }),
              HasSubstr("is not a tilejit unique id file (rank 1 read it)"));
}

TEST(Bootstrap, ByTcpWithRankZeroComingLast) {
  TJ_SEEDED_RNG(rng);
  const UniqueId id = made_up_id(rng);
  const int port = free_port();
  Outcome out = exchange_on_threads(4, 300ms, [&](int rank) {
    return exchange_id_by_tcp(
        "127.0.0.1", port, rank, 4, [&] { return id; }, 10s);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.errors[static_cast<size_t>(r)], "no error") << "rank " << r;
    EXPECT_EQ(out.ids[static_cast<size_t>(r)].bytes, id.bytes) << "rank " << r;
  }
}

TEST(Bootstrap, ByTcpWorldSizesMustAgree) {
  const int port = free_port();
  Outcome out = exchange_on_threads(2, 100ms, [&](int rank) {
    return exchange_id_by_tcp(
        "localhost", port, rank, rank == 0 ? 2 : 3, [] { return UniqueId{}; }, 10s);
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_THAT(out.errors[static_cast<size_t>(r)], HasSubstr("rank 1 expects a world of 3 ranks, but rank 0 has 2"))
        << "rank " << r;
}

TEST(Bootstrap, ByTcpTimesOutNamingWhoIsMissing) {
  const int port = free_port();
  // World of 3 where rank 2 never comes: rank 0 names it; rank 1 got its id.
  Outcome out = exchange_on_threads(2, 0ms, [&](int rank) {
    return exchange_id_by_tcp(
        "127.0.0.1", port, rank, 3, [] { return UniqueId{}; }, 500ms);
  });
  EXPECT_THAT(out.errors[0],
              HasSubstr(fmt::format("rank 0 waited 500 ms on port {}, but rank 2 did not connect", port)));
  EXPECT_EQ(out.errors[1], "no error");
  EXPECT_THAT(error_of([&] { exchange_id_by_tcp("127.0.0.1", free_port(), 1, 2, nullptr, 200ms); }),
              HasSubstr("join_by_tcp: rank 1 could not reach rank 0 at 127.0.0.1:"));
  EXPECT_THAT(error_of([&] { exchange_id_by_tcp("127.0.0.1", 70000, 1, 2, nullptr, 200ms); }),
              HasSubstr("port 70000 is not a TCP port"));
}

// A connection to rank 0 that sends nothing holds it up for a moment, not until the deadline:
// the ranks queued behind it get their ids. And a rank that reaches a server that is not
// rank 0 (here one that answers zeros) says so.
TEST(Bootstrap, ByTcpStrangersNeitherBlockNorPassForRankZero) {
  TJ_SEEDED_RNG(rng);
  const UniqueId id = made_up_id(rng);
  const int port = free_port();
  std::thread rank0([&] {
    EXPECT_EQ(error_of([&] { exchange_id_by_tcp("127.0.0.1", port, 0, 2, [&] { return id; }, 30s); }), "no error");
  });
  int silent = -1;
  for (auto start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < 10s;) {
    silent = connect_locally(port);
    if (silent >= 0) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(silent, 0);
  auto asked = std::chrono::steady_clock::now();
  UniqueId got = exchange_id_by_tcp("127.0.0.1", port, 1, 2, nullptr, 30s);
  EXPECT_EQ(got.bytes, id.bytes);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 10s) << "the silent connection held rank 0 up";
  rank0.join();
  ::close(silent);

  const int other_port = free_port();
  std::thread stranger([&] { serve_zeros_once(other_port); });
  EXPECT_THAT(error_of([&] { exchange_id_by_tcp("127.0.0.1", other_port, 1, 2, nullptr, 10s); }),
              HasSubstr("is not rank 0 of a tilejit job"));
  stranger.join();
}

TEST(Bootstrap, TorchrunEnvironment) {
  ScopedEnv rank("RANK", "3"), world("WORLD_SIZE", "8"), local_rank("LOCAL_RANK", "1"), address("MASTER_ADDR", "node0"),
      port("MASTER_PORT", "29500"), rendezvous_port("TILEJIT_RENDEZVOUS_PORT", nullptr);
  TorchrunEnvironment t = read_torchrun_environment();
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.address, "node0");
  EXPECT_EQ(t.port, 29501);  // torchrun's store holds 29500
  {
    ScopedEnv chosen("TILEJIT_RENDEZVOUS_PORT", "40000");
    EXPECT_EQ(read_torchrun_environment().port, 40000);
  }
  {
    ScopedEnv too_high("RANK", "8");
    EXPECT_THAT(error_of([] { read_torchrun_environment(); }), HasSubstr("RANK=8 is not a rank of WORLD_SIZE=8"));
  }
  {
    ScopedEnv not_a_number("RANK", "two");
    EXPECT_THAT(error_of([] { read_torchrun_environment(); }), HasSubstr("RANK='two' is not an integer of 0 or more"));
  }
  {
    ScopedEnv unset("RANK", nullptr);
    EXPECT_THAT(
        error_of([] { read_torchrun_environment(); }),
        AllOf(HasSubstr("RANK is not set"), HasSubstr("torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")));
  }
}

TEST(Bootstrap, NcclUniqueIdsAreFresh) {
  if (!tilejit::nccl::available()) GTEST_SKIP() << "no NCCL: " << tilejit::nccl::status();
  EXPECT_THAT(tilejit::nccl::status(), HasSubstr("NCCL 2."));
  UniqueId a = UniqueId::create(), b = UniqueId::create();
  EXPECT_NE(a.bytes, b.bytes);
}

}  // namespace
}  // namespace tjcoll
