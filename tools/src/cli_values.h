#pragma once
// The command line's values, checked in one place before anything is read or run: no option takes an empty
// value (`-o ''`, `--set ''`), and every number an option takes is a count or a limit, so it must be finite
// and above zero (a whole number >= 1 for counts such as -j and --tasks). The walk covers tpusim's own options
// and those of the subcommand given, so an option added later is checked without a line of its own.
#include <CLI/CLI.hpp>

#include "tpusim/core/diagnostics.h"

namespace tpusim::tools {

// Reports every bad value into `diags`, located by the option as written ("--jobs -1").
void check_command_line(const CLI::App& app, Diagnostics& diags);

}  // namespace tpusim::tools
