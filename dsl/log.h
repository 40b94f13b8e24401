// Logging for tilejit: one small module, level from TILEJIT_LOG (error, warn, info, debug;
// default warn). Messages go to stderr as "tilejit: <level>: <text>".
#pragma once

#include <string>

#include <fmt/format.h>

namespace tilejit::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

Level level();  // read once from TILEJIT_LOG
void write(Level level, const std::string& message);

template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::warn) write(Level::warn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::info) write(Level::info, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::debug) write(Level::debug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tilejit::log
