// `tilejit tune --op OP --shapes FILE [--device D] [--top-k N] [--repeats N] [--jobs N]`:
// tunes an op for every shape listed in FILE (one per line, "M=4096 N=4096 K=1024", '#'
// starts a comment) on one device, with a progress bar (done / total, ETA, best so far), into
// the tuning database in the kernel cache (TILEJIT_CACHE_DIR; `tilejit cache pack` ships it).
// Shapes tuned already, by a search at least as deep (--top-k), are skipped, and every trial
// is recorded as it is made, so a run stopped with Ctrl-C (exit status 130) resumes where it
// stopped when run again, and a deeper search times only the configs not timed before. With
// --plan it prints the configs each shape would time, with the cost model's estimates, and
// compiles, runs and records nothing.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/ranges.h>

#include "autotune/config_choice.h"
#include "autotune/device_runner.h"
#include "autotune/stopwatch.h"
#include "autotune/tuner.h"
#include "ops/tunable_ops.h"
#include "tools/commands.h"
#include "tools/progress_bar.h"

namespace tilejit::tools {
namespace {

using namespace tilejit::autotune;

constexpr int kInterruptedStatus = 130;  // what a shell reports for SIGINT

std::atomic<bool> interrupted{false};
extern "C" void request_stop(int) { interrupted = true; }

// The first Ctrl-C (or SIGTERM, as `timeout` and batch schedulers send) asks the tuner to stop
// after the trial in progress; a second one (the handler resets itself) ends the process at
// once.
class InterruptHandler {
 public:
  InterruptHandler() {
    struct sigaction action {};
    action.sa_handler = request_stop;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
  }
  ~InterruptHandler() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

std::vector<ProblemShape> read_shapes(const std::string& path, const TunableKernel& op) {
  std::ifstream in(path);
  if (!in) fail("cannot read the shapes file {}", path);
  std::vector<ProblemShape> shapes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      shapes.push_back(op.checked_shape(ProblemShape::parse(line)));
    } catch (const Error& e) {
      fail("{}:{}: {}", path, number, e.what());
    }
  }
  // A directory opens but does not read; a read error part way would drop the shapes after it.
  if (in.bad()) fail("cannot read the shapes file {}: {}", path, std::strerror(errno));
  if (shapes.empty())
    fail("the shapes file {} lists no shapes (one a line, with the dimensions {})", path, fmt::join(op.dims, " "));
  return shapes;
}

std::string describe_best(const std::optional<BestConfig>& best) {
  return best ? fmt::format("{:.4f} ms  {}", best->ms, best->config.str()) : "no config ran correctly";
}

struct Options {
  std::string op, shapes, device = "best";
  int top_k = 8, repeats = 0, jobs = 0;
  bool plan = false;
};

// The first top_k of each shape's ranking (rank_candidates), as a tuning would time them.
int print_plan(const TunableKernel& op, const std::vector<ProblemShape>& shapes, const DeviceInfo& device, int top_k) {
  for (const ProblemShape& requested : shapes) {
    const ProblemShape shape = op.checked_shape(requested);
    const Ranking ranking = rank_candidates(op, shape, device);
    const size_t shown = std::min(ranking.configs.size(), size_t(top_k));
    fmt::print("[{}]  a tuning on {} times these {} first ({} configs, {} pruned by constraints); the cost model's "
               "estimates:\n",
               shape.str(), device.name, shown, ranking.configs_in_space, ranking.pruned);
    for (size_t i = 0; i < shown; ++i) {
      const RankedConfig& r = ranking.configs[i];
      fmt::print("  {:>3}  {:10.4f} ms  {}{}\n", i + 1, r.estimate_ms, r.config.str(),
                 r.heuristic ? "  (the heuristic's)" : "");
    }
  }
  return 0;
}

int run_tune(const Options& o) {
  const TunableKernel& op = ops::find_tunable_op(o.op);
  std::vector<ProblemShape> shapes = read_shapes(o.shapes, op);
  Device& device = Device::by_name(o.device);
  if (o.plan) return print_plan(op, shapes, device.info(), o.top_k);
  TuningDatabase& db = TuningDatabase::global();
  TimingOptions timing = TimingOptions::for_device(device.info());
  if (o.repeats > 0) timing.repeats = o.repeats;

  fmt::print("tuning {} on {}: {} shape{}, the best {} of {} configs each by the cost model\n", op.name,
             device.info().name, shapes.size(), shapes.size() == 1 ? "" : "s", o.top_k, op.space.size());
  std::vector<ProblemShape> to_tune;
  for (const ProblemShape& shape : shapes) {
    auto best = db.best(TuningKey::of(op, shape, device.info()), shape);
    if (best && fits(op, best->config, shape) && best->top_k >= o.top_k)
      fmt::print("[{}]  already tuned: {}\n", shape.str(), describe_best(best));
    else
      to_tune.push_back(shape);
  }
  std::fflush(stdout);

  // The bar counts the candidates this run times: trials an earlier run recorded are reused at
  // no cost, and a shape with fewer configs left than top_k plans fewer.
  InterruptHandler handler;
  const int top_k = o.top_k;
  ProgressBar bar(stderr);
  int finished = 0;  // candidates of the shapes done so far
  bool all_ran = true;
  for (size_t i = 0; i < to_tune.size(); ++i) {
    const ProblemShape& shape = to_tune[i];
    const Stopwatch setting_up;
    auto runner = make_candidate_runner(op, shape, device, timing, std::random_device{}());
    const double setup_seconds = setting_up.seconds();
    TuneOptions options;
    options.top_k = top_k;
    options.compile_threads = o.jobs;
    options.should_stop = [] { return interrupted.load(); };
    const int later = static_cast<int>(to_tune.size() - i - 1) * top_k;
    int this_shape = 0;
    options.on_progress = [&](const TuneProgress& p) {
      this_shape = p.done - p.reused;
      std::string best = p.best ? fmt::format("best {:.4f} ms {}", p.best_ms, p.best->str()) : "no result yet";
      bar.update(finished + this_shape, finished + (p.total - p.reused) + later,
                 fmt::format("[{}] {}", shape.str(), best));
    };
    TuneResult r = tune(op, shape, *runner, db, options);
    finished += this_shape;
    bar.finish();
    if (r.interrupted) {
      fmt::print("interrupted: the trials so far are recorded; run the same command again to resume\n");
      return kInterruptedStatus;
    }
    fmt::print("[{}]  best {}  ({} timed, {} reused, {} rejected; {} of {} configs pruned by constraints; {:.1f} s "
               "making the problem, {:.1f} s building, {:.1f} s checking and timing)\n",
               shape.str(), describe_best(r.best), r.timed, r.reused, r.rejected, r.pruned, r.configs, setup_seconds,
               r.build_seconds, r.measure_seconds);
    std::fflush(stdout);
    all_ran = all_ran && r.best.has_value();
  }
  KernelCache& cache = KernelCache::global();
  fmt::print("tuning database: {}\n",
             cache.on_disk() ? cache.directory() : "memory only (results end with this process)");
  if (int64_t lost = db.unstored_writes(); lost > 0) {
    fmt::print(stderr, "tilejit tune: {} of this run's results could not be written to {} (see the warnings above)\n",
               lost, cache.directory());
    return 1;
  }
  return all_ran ? 0 : 1;
}

}  // namespace

Command add_tune_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "Tune an op for the shapes in a file, into the tuning database");
  auto o = std::make_shared<Options>();
  cmd->add_option("--op", o->op, "The op to tune (a registered example kernel)")->required();
  cmd->add_option("--shapes", o->shapes, "File with one shape a line, e.g. 'M=4096 N=4096 K=1024'")->required();
  cmd->add_option("--device", o->device, "cuda, cuda:N, emu or best (the GPU if there is one)")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Configs timed per shape, the best by the cost model")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", o->repeats, "Timed launches per config (default: 25 on a GPU, 3 in the emulator)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", o->jobs, "Host threads compiling candidates (default: one per core)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--plan", o->plan,
                "Print the configs each shape would time, with the cost model's estimates; compile and run nothing");
  return [cmd, o] { return cmd->parsed() ? run_tune(*o) : -1; };
}

}  // namespace tilejit::tools
