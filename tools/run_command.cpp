// `tilejit run KERNEL [--device cuda|emu] [--set NAME=VALUE ...]`: runs a registered kernel
// or a library op (ops/library_runs.h) with random inputs, checks it against its C++ reference, prints device, error and time;
// the exit status is 1 when the result is wrong.
#include "ops/kernels/example_runs.h"
#include "ops/library_runs.h"
#include "tools/commands.h"
#include "tools/settings.h"

namespace tilejit::tools {

Command add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a registered kernel on random inputs and check it against its reference");
  struct Options {
    std::string kernel, device = "best";
    std::vector<std::string> settings;
    uint64_t seed = 0;
  };
  auto options = std::make_shared<Options>();
  cmd->add_option("kernel", options->kernel, "Registered kernel or library op")->required();
  cmd->add_option("--device", options->device, "cuda, cuda:N, emu, emu:ARCH or best (the GPU if there is one)")->capture_default_str();
  cmd->add_option("--set", options->settings, "A kernel's constant, or an op's problem dimension: NAME=VALUE (repeatable)");
  cmd->add_option("--seed", options->seed, "Random seed (default: fresh)");
  return [cmd, options]() {
    if (!cmd->parsed()) return -1;
    ops::ExampleOptions run_options{parse_settings(options->settings), options->seed, false};
    Device& device = Device::by_name(options->device);
    const ops::LibraryRun* op = ops::find_library_run(options->kernel);
    ops::ExampleRun r = op ? op->run(device, run_options) : ops::run_example(options->kernel, device, run_options);
    fmt::print("{}\n", ops::describe(r));
    return r.ok ? 0 : 1;
  };
}

}  // namespace tilejit::tools
