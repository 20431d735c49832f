#pragma once
// Logging by module path ("pod.chip3.hbm") on spdlog, to stderr. Levels are set by longest matching prefix
// from a spec such as "warn" or "info,pod.chip0=debug,pod.chip0.hbm=trace". A disabled level costs one branch.
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "tpusim/core/diagnostics.h"

namespace tpusim {

// Parses and installs a level spec; bad input goes to diags (key "--log-level").
void configure_logging(const std::string& spec, Diagnostics& diags);

// The logger for a module path, created on first use with the level its longest matching prefix sets.
[[nodiscard]] std::shared_ptr<spdlog::logger> logger_for(const std::string& module_path);

}  // namespace tpusim
