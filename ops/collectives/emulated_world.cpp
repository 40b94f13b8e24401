#include "ops/collectives/emulated_world.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "dsl/error.h"

namespace tilejit::ops {
namespace {

// "rank 2" or "ranks 0, 3".
std::string name_ranks(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

// Empty when every part has the same call; else which ranks call what.
std::string describe_mismatch(const std::vector<EmulatedWorld::Part>& parts) {
  std::map<std::string, std::vector<int>> ranks_by_call;
  for (size_t r = 0; r < parts.size(); ++r) ranks_by_call[parts[r].call].push_back(static_cast<int>(r));
  if (ranks_by_call.size() == 1) return {};
  std::vector<std::string> lines;
  for (const auto& [call, ranks] : ranks_by_call)
    lines.push_back(fmt::format("{} {} {}", name_ranks(ranks), ranks.size() == 1 ? "calls" : "call", call));
  return fmt::format("the ranks' calls differ: {}", fmt::join(lines, "; "));
}

}  // namespace

EmulatedWorld::EmulatedWorld(int size, std::chrono::milliseconds timeout)
    : size_(size),
      timeout_(timeout),
      pending_(static_cast<size_t>(size)),
      arrived_(static_cast<size_t>(size)),
      finalizing_(static_cast<size_t>(size)) {}

std::vector<EmulatedWorld::Part> EmulatedWorld::arrive(int rank, Part part) {
  return run_round(rank, std::move(part), RoundKind::exchange).parts;
}

void EmulatedWorld::finish_exchange(int rank, const std::string& call) {
  run_round(rank, Part{call}, RoundKind::finish);
}

EmulatedWorld::Membership EmulatedWorld::split(int rank, int color, int key) {
  Part part{"split", nullptr, nullptr, color, key};
  return run_round(rank, std::move(part), RoundKind::split).memberships[static_cast<size_t>(rank)];
}

void EmulatedWorld::begin_finalize(int rank) {
  std::lock_guard lock(mutex_);
  finalizing_[static_cast<size_t>(rank)] = true;
}

bool EmulatedWorld::finalized() const {
  std::lock_guard lock(mutex_);
  return std::all_of(finalizing_.begin(), finalizing_.end(), [](bool f) { return f; }) || !abort_reason_.empty();
}

void EmulatedWorld::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (abort_reason_.empty()) abort_reason_ = reason;
  changed_.notify_all();
}

std::string EmulatedWorld::abort_reason() const {
  std::lock_guard lock(mutex_);
  return abort_reason_;
}

std::string EmulatedWorld::missing_ranks() const {
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r)
    if (!arrived_[static_cast<size_t>(r)]) missing.push_back(r);
  return name_ranks(missing);
}

EmulatedWorld::Round EmulatedWorld::run_round(int rank, Part part, RoundKind kind) {
  std::unique_lock lock(mutex_);
  const std::string call = part.call;
  const bool finishing = kind == RoundKind::finish;
  if (!finishing && !abort_reason_.empty()) fail("{}: the communicator was aborted: {}", call, abort_reason_);
  auto r = static_cast<size_t>(rank);
  if (arrived_[r])
    fail("{}: rank {} called twice in one round; each rank's calls must come from one thread at a time", call, rank);
  pending_[r] = std::move(part);
  arrived_[r] = true;
  const uint64_t generation = generation_;
  if (++arrivals_ == size_) {
    complete_round(kind);
  } else if (finishing) {
    changed_.wait(lock, [&] { return generation_ != generation; });
  } else {
    bool woken = changed_.wait_for(lock, timeout_, [&] { return generation_ != generation || !abort_reason_.empty(); });
    if (!woken) {
      abort_reason_ =
          fmt::format("{} of {} did not arrive at {} within {} ms", missing_ranks(), size_, call, timeout_.count());
      changed_.notify_all();
    }
  }
  if (generation_ == generation) fail("{}: the communicator was aborted: {}", call, abort_reason_);
  if (!completed_.mismatch.empty()) fail("{}: {}", call, completed_.mismatch);
  return completed_;
}

void EmulatedWorld::complete_round(RoundKind kind) {
  completed_.parts = pending_;
  completed_.mismatch = describe_mismatch(pending_);
  completed_.memberships.assign(static_cast<size_t>(size_), Membership{});
  if (kind == RoundKind::split && completed_.mismatch.empty()) {
    std::map<int, std::vector<int>> ranks_by_color;
    for (int r = 0; r < size_; ++r)
      if (pending_[static_cast<size_t>(r)].color >= 0)
        ranks_by_color[pending_[static_cast<size_t>(r)].color].push_back(r);
    for (auto& [color, ranks] : ranks_by_color) {
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        return pending_[static_cast<size_t>(a)].key < pending_[static_cast<size_t>(b)].key;
      });
      auto world = std::make_shared<EmulatedWorld>(static_cast<int>(ranks.size()), timeout_);
      for (size_t i = 0; i < ranks.size(); ++i)
        completed_.memberships[static_cast<size_t>(ranks[i])] = Membership{world, static_cast<int>(i)};
    }
  }
  std::fill(pending_.begin(), pending_.end(), Part{});
  std::fill(arrived_.begin(), arrived_.end(), false);
  arrivals_ = 0;
  ++generation_;
  changed_.notify_all();
}

}  // namespace tilejit::ops
