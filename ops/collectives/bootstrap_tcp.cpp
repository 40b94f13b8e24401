// The unique id handed over by a TCP rendezvous. A joining rank sends a hello ("TJID", its
// rank, the world size it expects; big-endian 32-bit numbers) and rank 0 answers with a status,
// its world size and the id. Every wait is bounded by the deadline.
#include <arpa/inet.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "dsl/error.h"
#include "dsl/log.h"
#include "ops/collectives/bootstrap.h"

namespace tilejit::ops {
namespace {

using Clock = std::chrono::steady_clock;

// A hello: magic, rank, world size. An answer: magic, status, rank 0's world size, the id.
// The magic both ways keeps a process that is not a tilejit rank from passing for one.
constexpr char kMagic[4] = {'T', 'J', 'I', 'D'};
constexpr size_t kHelloBytes = 12;
constexpr size_t kAnswerBytes = 12 + std::tuple_size_v<decltype(UniqueId::bytes)>;
// How long rank 0 waits for a connection's hello: a connection that sends nothing (a port
// scanner, a health check) must not hold up the ranks queued behind it.
constexpr auto kHelloWait = std::chrono::seconds(2);
enum Status : uint32_t { accepted = 0, wrong_world_size = 1, wrong_rank = 2 };

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

// Waits until `fd` is readable; false at the deadline.
bool readable_before(int fd, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) fail("join_by_tcp: poll failed: {}", std::strerror(errno));
  }
}

void put_u32(uint8_t* at, uint32_t v) {
  v = htonl(v);
  std::memcpy(at, &v, 4);
}
uint32_t get_u32(const uint8_t* at) {
  uint32_t v;
  std::memcpy(&v, at, 4);
  return ntohl(v);
}

void send_all(int fd, const uint8_t* data, size_t bytes, const char* who) {
  while (bytes > 0) {
    ssize_t n = send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("join_by_tcp: {} could not send: {}", who, std::strerror(errno));
    data += n;
    bytes -= static_cast<size_t>(n);
  }
}

// False when the peer closed the connection or the deadline passed first.
bool receive_all(int fd, uint8_t* data, size_t bytes, Clock::time_point deadline) {
  while (bytes > 0) {
    if (!readable_before(fd, deadline)) return false;
    ssize_t n = recv(fd, data, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

Socket listen_on(int port) {
  Socket s(socket(AF_INET, SOCK_STREAM, 0));
  if (s.fd() < 0) fail("join_by_tcp: rank 0 cannot create a socket: {}", std::strerror(errno));
  int yes = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(s.fd(), SOMAXCONN) != 0)
    fail("join_by_tcp: rank 0 cannot listen on port {}: {}", port, std::strerror(errno));
  return s;
}

UniqueId serve_id(int port, int world_size, const UniqueId& id, Clock::time_point deadline,
                  std::chrono::milliseconds timeout) {
  if (world_size == 1) return id;
  Socket listener = listen_on(port);
  std::vector<bool> joined(static_cast<size_t>(world_size), false);
  joined[0] = true;
  for (int waiting = world_size - 1; waiting > 0;) {
    if (!readable_before(listener.fd(), deadline)) {
      std::vector<int> missing;
      for (int r = 0; r < world_size; ++r)
        if (!joined[static_cast<size_t>(r)]) missing.push_back(r);
      fail("join_by_tcp: rank 0 waited {} ms on port {}, but {} {} did not connect", timeout.count(), port,
           missing.size() == 1 ? "rank" : "ranks", fmt::join(missing, ", "));
    }
    Socket peer(accept(listener.fd(), nullptr, nullptr));
    if (peer.fd() < 0) continue;
    uint8_t hello[kHelloBytes];
    const Clock::time_point hello_deadline = std::min(deadline, Clock::now() + kHelloWait);
    if (!receive_all(peer.fd(), hello, kHelloBytes, hello_deadline) || std::memcmp(hello, kMagic, 4) != 0) {
      log::warn("join_by_tcp: rank 0 ignored a connection on port {} that is not a tilejit rank", port);
      continue;
    }
    const auto rank = static_cast<int>(get_u32(hello + 4));
    const auto their_world_size = static_cast<int>(get_u32(hello + 8));
    uint8_t answer[kAnswerBytes] = {};
    Status status = their_world_size != world_size                                         ? wrong_world_size
                    : rank <= 0 || rank >= world_size || joined[static_cast<size_t>(rank)] ? wrong_rank
                                                                                           : accepted;
    std::memcpy(answer, kMagic, 4);
    put_u32(answer + 4, status);
    put_u32(answer + 8, static_cast<uint32_t>(world_size));
    if (status == accepted) std::memcpy(answer + 12, id.bytes.data(), id.bytes.size());
    send_all(peer.fd(), answer, kAnswerBytes, "rank 0");
    if (status == wrong_world_size)
      fail("join_by_tcp: rank {} expects a world of {} ranks, but rank 0 has {}", rank, their_world_size, world_size);
    if (status == wrong_rank)
      fail("join_by_tcp: a process joined as rank {}, which is {} in a world of {} ranks", rank,
           rank > 0 && rank < world_size ? "taken already" : "not a rank to join", world_size);
    joined[static_cast<size_t>(rank)] = true;
    --waiting;
  }
  return id;
}

// A connected socket to address:port, retrying while rank 0 is not listening yet.
Socket connect_to(const std::string& address, int port, int rank, Clock::time_point deadline,
                  std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int r = getaddrinfo(address.c_str(), service.c_str(), &hints, &found); r != 0)
    fail("join_by_tcp: rank {} cannot resolve {}: {}", rank, address, gai_strerror(r));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
  std::string last_error;
  do {
    Socket s(socket(found->ai_family, found->ai_socktype, found->ai_protocol));
    if (s.fd() < 0) fail("join_by_tcp: rank {} cannot create a socket: {}", rank, std::strerror(errno));
    timeval attempt{1, 0};  // one connect attempt waits at most a second
    setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &attempt, sizeof(attempt));
    if (connect(s.fd(), found->ai_addr, found->ai_addrlen) == 0) return s;
    last_error = std::strerror(errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Clock::now() < deadline);
  fail("join_by_tcp: rank {} could not reach rank 0 at {}:{} within {} ms ({})", rank, address, port, timeout.count(),
       last_error);
}

UniqueId fetch_id(const std::string& address, int port, int rank, int world_size, Clock::time_point deadline,
                  std::chrono::milliseconds timeout) {
  Socket s = connect_to(address, port, rank, deadline, timeout);
  uint8_t hello[kHelloBytes];
  std::memcpy(hello, kMagic, 4);
  put_u32(hello + 4, static_cast<uint32_t>(rank));
  put_u32(hello + 8, static_cast<uint32_t>(world_size));
  const std::string who = fmt::format("rank {}", rank);
  send_all(s.fd(), hello, kHelloBytes, who.c_str());
  uint8_t answer[kAnswerBytes];
  if (!receive_all(s.fd(), answer, kAnswerBytes, deadline))
    fail("join_by_tcp: rank {} got no answer from rank 0 at {}:{} within {} ms", rank, address, port, timeout.count());
  if (std::memcmp(answer, kMagic, 4) != 0)
    fail("join_by_tcp: rank {} reached {}:{}, but what answers there is not rank 0 of a tilejit job", rank, address,
         port);
  const uint32_t status = get_u32(answer + 4);
  const auto their_world_size = static_cast<int>(get_u32(answer + 8));
  if (status == wrong_world_size)
    fail("join_by_tcp: rank {} expects a world of {} ranks, but rank 0 has {}", rank, world_size, their_world_size);
  if (status != accepted)
    fail("join_by_tcp: rank 0 refused rank {} (a world of {} ranks; is another process rank {} too?)", rank, world_size,
         rank);
  UniqueId id;
  std::memcpy(id.bytes.data(), answer + 12, id.bytes.size());
  return id;
}

}  // namespace

UniqueId exchange_id_by_tcp(const std::string& address, int port, int rank, int world_size,
                            const std::function<UniqueId()>& make_id, std::chrono::milliseconds timeout) {
  if (port <= 0 || port > 65535) fail("join_by_tcp: port {} is not a TCP port", port);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    fail("join_by_tcp: rank {} is not a rank of a world of {} ranks", rank, world_size);
  const Clock::time_point deadline = Clock::now() + timeout;
  if (rank == 0) return serve_id(port, world_size, make_id(), deadline, timeout);
  return fetch_id(address, port, rank, world_size, deadline, timeout);
}

}  // namespace tilejit::ops
