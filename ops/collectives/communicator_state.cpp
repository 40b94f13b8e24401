#include "ops/collectives/communicator_state.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "dsl/error.h"
#include "dsl/log.h"
#include "ops/collectives/arguments.h"
#include "ops/collectives/teardown.h"

namespace tilejit::ops {

Communicator::State::State(std::unique_ptr<RankBackend> backend_, CommunicatorOptions options_)
    : backend(std::move(backend_)), options(options_) {}

Communicator Communicator::State::handle(std::unique_ptr<RankBackend> backend, const CommunicatorOptions& options) {
  return Communicator(std::make_shared<State>(std::move(backend), options));
}

Communicator::State::~State() {
  try {
    // Packing kernels may still read or write scratch memory on their streams.
    if (!scratch_by_stream.empty()) backend->device().synchronize();
    begin_destroy();
    group_communicators.clear();  // their own destructors hand them over
    if (!backend->destroy_finished()) finish_destroy_later(std::move(backend), options.timeout);
  } catch (const std::exception& e) {
    if (!backend) return;  // handed over: the teardown frees it
    log::warn("{}: destroy failed, aborted instead: {}", backend->describe(), e.what());
    backend->abort("destroy failed");
  }
}

RankBackend& Communicator::State::live(const char* op) {
  if (destroyed) fail("{}: {} was destroyed", op, backend->describe());
  return *backend;
}

void Communicator::State::abort(const std::string& reason) {
  std::vector<std::shared_ptr<State>> made;
  {
    std::lock_guard lock(mutex);
    if (abort_reason.empty()) abort_reason = reason;
    for (auto& [groups, group] : group_communicators) made.push_back(group);
    for (auto& child : children)
      if (auto alive = child.lock()) made.push_back(alive);
  }
  backend->abort(reason);
  for (auto& state : made) state->abort(reason);
}

void Communicator::State::begin_destroy() {
  if (destroyed.exchange(true)) return;
  for (auto& group : groups()) group->begin_destroy();
  backend->begin_destroy();
}

bool Communicator::State::destroy_finished() {
  bool finished = backend->destroy_finished();
  for (auto& group : groups()) finished = group->destroy_finished() && finished;
  return finished;
}

void Communicator::State::destroy() {
  const auto started = std::chrono::steady_clock::now();
  try {
    begin_destroy();
    while (!destroy_finished()) {
      if (std::chrono::steady_clock::now() - started >= options.timeout)
        fail("destroy: {}: the other ranks did not destroy their communicators within {} ms (every rank must)",
             backend->describe(), options.timeout.count());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const Error& e) {
    abort(e.what());
    throw;
  }
}

void Communicator::State::adopt(const std::shared_ptr<State>& child) {
  std::string aborted;
  {
    std::lock_guard lock(mutex);
    std::erase_if(children, [](const std::weak_ptr<State>& c) { return c.expired(); });
    children.push_back(child);
    aborted = abort_reason;
  }
  if (!aborted.empty()) child->abort(aborted);  // made while this one was being aborted
}

void Communicator::State::add_group(const RankGroups& groups, const std::shared_ptr<State>& group) {
  std::string aborted;
  {
    std::lock_guard lock(mutex);
    group_communicators.emplace(groups, group);
    aborted = abort_reason;
  }
  if (!aborted.empty()) group->abort(aborted);
}

void Communicator::State::synchronize(Stream& stream) {
  RankBackend& rank = live("synchronize");
  try {
    rank.synchronize(stream, [&] { check_group_errors(); });
    check_async_errors();
  } catch (const Error& e) {
    abort(e.what());
    throw;
  }
}

void Communicator::State::check_async_errors() {
  live("check_async_error").check_async_error();
  check_group_errors();
}

void Communicator::State::check_group_errors() {
  for (auto& group : groups()) group->live("check_async_error").check_async_error();
}

std::vector<std::shared_ptr<Communicator::State>> Communicator::State::groups() {
  std::lock_guard lock(mutex);
  std::vector<std::shared_ptr<State>> made;
  for (auto& [members, group] : group_communicators) made.push_back(group);
  return made;
}

GroupView group_place(Communicator::State& state, const RankGroups& groups, const char* op) {
  RankBackend& backend = state.live(op);
  const int world = backend.size();
  check_groups(groups, world, op);
  if (groups.empty()) return GroupView{&state, world, backend.rank()};
  std::vector<int> in_rank_order(static_cast<size_t>(world));
  std::iota(in_rank_order.begin(), in_rank_order.end(), 0);
  if (groups.size() == 1 && groups[0] == in_rank_order) return GroupView{&state, world, backend.rank()};
  for (const std::vector<int>& group : groups)
    for (size_t p = 0; p < group.size(); ++p)
      if (group[p] == backend.rank()) return GroupView{nullptr, static_cast<int>(group.size()), static_cast<int>(p)};
  fail("{}: rank {} is in none of the groups", op, backend.rank());  // check_groups rules this out
}

GroupView group_of(Communicator::State& state, const RankGroups& groups, const char* op) {
  GroupView view = group_place(state, groups, op);
  if (view.group) return view;
  std::shared_ptr<Communicator::State> group;
  {
    std::lock_guard lock(state.mutex);
    auto it = state.group_communicators.find(groups);
    if (it != state.group_communicators.end()) group = it->second;
  }
  if (!group) {
    // Colored by the group's index, ranked by position: the group communicator's rank r is
    // position r of the list.
    RankBackend& backend = state.live(op);
    auto mine = std::find_if(groups.begin(), groups.end(), [&](const std::vector<int>& members) {
      return std::find(members.begin(), members.end(), backend.rank()) != members.end();
    });
    const int color = static_cast<int>(mine - groups.begin());
    std::unique_ptr<RankBackend> split = backend.split(color, view.position);
    // Ranks that passed other groups made other splits.
    if (!split || split->rank() != view.position || split->size() != view.size)
      fail("{}: {} passed groups {}, which place it at position {} of {}, but the ranks' split gave it {}: every "
           "rank must pass the same groups",
           op, backend.describe(), fmt::format("{}", groups), view.position, view.size,
           split ? fmt::format("rank {} of {}", split->rank(), split->size()) : std::string("no communicator"));
    group = std::make_shared<Communicator::State>(std::move(split), state.options);
    state.add_group(groups, group);
  }
  view.group = group.get();
  return view;
}

void* scratch(Communicator::State& state, size_t bytes, Stream& stream) {
  auto it = state.scratch_by_stream.find(stream.handle());
  if (it != state.scratch_by_stream.end() && static_cast<size_t>(it->second.bytes()) >= bytes) return it->second.data();
  if (it != state.scratch_by_stream.end()) {
    state.synchronize(stream);  // the old buffer may still be in use on the stream
    state.scratch_by_stream.erase(it);
  }
  Tensor buffer = Tensor::empty(state.backend->device(), DType::i8, {static_cast<int64_t>(bytes)});
  void* data = buffer.data();
  state.scratch_by_stream.emplace(stream.handle(), std::move(buffer));
  return data;
}

Stream& stream_for(Communicator::State& state, Stream* stream, const char* op) {
  Device& device = state.backend->device();
  if (!stream) return device.default_stream();
  if (&stream->device() != &device)
    fail("{}: the stream is on {}, but the communicator ({}) is on {}", op, stream->device().info().name,
         state.backend->describe(), device.info().name);
  return *stream;
}

}  // namespace tilejit::ops
