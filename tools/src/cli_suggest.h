#pragma once
// Did-you-mean for the command line: after CLI11 refused the arguments, the closest subcommand to a mistyped
// one, or the closest option of the chosen subcommand (or of tpusim itself) to a mistyped option, by the edit
// distance the scenario errors use (core/diagnostics.h).
#include <string>

#include <CLI/CLI.hpp>

namespace tpusim::tools {

// One line per mistyped word: a first word that is no subcommand ("tpusim: 'rnu' is not a subcommand; did you
// mean 'run'?", or the list of subcommands when none is close), an option that CLI11's error `message` names
// and that is close to a known one. Empty when there is none.
[[nodiscard]] std::string cli_suggestions(const CLI::App& app, int argc, const char* const* argv,
                                          const std::string& message);

// CLI11's "Could not convert: --jobs = 1.5" as tpusim's other command-line errors say it ("--jobs '1.5': error:
// invalid value", expected a whole number, found '1.5'): every option CLI11 converts to a number counts something.
[[nodiscard]] std::string conversion_error(const std::string& message);

}  // namespace tpusim::tools
