#include "autotune/bucket_config.h"

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "autotune/config_choice.h"
#include "dsl/error.h"
#include "dsl/log.h"

namespace tilejit::autotune {
namespace {

std::optional<Config> bucket_answer(const TunableKernel& op, const ProblemShape& shape, Device& device) {
  using Key = std::tuple<const Device*, const TunableKernel*, std::string>;
  using Answer = std::shared_future<std::optional<Config>>;
  static std::mutex mutex;
  static std::map<Key, Answer> answers;
  const Key key{&device, &op, op.bucketing.bucket(shape).str()};
  std::unique_lock lock(mutex);
  if (auto it = answers.find(key); it != answers.end()) {
    Answer answer = it->second;
    lock.unlock();
    return answer.get();
  }
  std::promise<std::optional<Config>> promise;
  Answer answer = answers.emplace(key, promise.get_future().share()).first->second;
  lock.unlock();
  try {
    ConfigChoice choice = choose_config(op, shape, device);
    promise.set_value(choice.source == ConfigSource::heuristic ? std::nullopt : std::optional<Config>(choice.config));
  } catch (const Error& e) {
    // Tuning on first use that cannot run (no memory for its problem, say) must not fail the
    // call: the bucket takes the heuristic for this process.
    log::warn("{} {} [{}]: no tuned config ({}); using the heuristic", op.name, op.dtypes, shape.str(), e.what());
    promise.set_value(std::nullopt);
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard relock(mutex);
    answers.erase(key);  // the next call tries again
    throw;
  }
  return answer.get();
}

}  // namespace

std::optional<Config> tuned_bucket_config(const TunableKernel& op, const ProblemShape& shape, Device& device) {
  std::optional<Config> config = bucket_answer(op, shape, device);
  if (config && op.space.violated(*config, shape)) return std::nullopt;
  return config;
}

}  // namespace tilejit::autotune
