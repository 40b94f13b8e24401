// The tilejit command line's subcommands, one file each. Each `add_*` registers its
// subcommand on the app and returns a function that runs it once parsed (exit status).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace tilejit::tools {

using Command = std::function<int()>;

Command add_cache_command(CLI::App& app);  // tools/cache_command.cpp: cache ls | stats | clear
Command add_info_command(CLI::App& app);   // tools/info_command.cpp
Command add_run_command(CLI::App& app);    // tools/run_command.cpp
Command add_tune_command(CLI::App& app);   // tools/tune_command.cpp
// tools/cache_pack_command.cpp: cache pack | import | verify, under `cache`.
Command add_cache_pack_commands(CLI::App& cache);

}  // namespace tilejit::tools
