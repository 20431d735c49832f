#pragma once
// The tpusim subcommands. Each returns the process exit code: 0 success, 1 simulation failure, 2 bad input.
#include <string>
#include <vector>

#include "tools/src/preflight.h"

namespace tpusim::tools {

struct RunArgs {
  std::string scenario = "quickstart";
  std::string out_dir;  // default: out/<scenario name>
  std::vector<std::string> overrides;
  bool perf = false;    // print events/s, wall time and peak memory to stderr
  bool quiet = false;   // no table on stdout
  bool trace = false;   // write trace.json (Chrome trace format) for the chips in trace_chips
  std::string trace_chips = "0-3";
  Limits limits = Limits::defaults();
};

int run_command(const RunArgs& args);
int validate_command(const std::string& scenario, const std::vector<std::string>& overrides, const Limits& limits);
// `svg_path` (describe chip only): also draw the composed chip there.
// `overrides` (--set) apply to `describe scenario` only, as `run` applies them; elsewhere they are refused (exit 2).
int describe_command(const std::string& what, const std::string& name, const std::string& svg_path = {},
                     const std::vector<std::string>& overrides = {});
int lower_command(const std::string& scenario, const std::vector<std::string>& overrides, const std::string& out,
                  const Limits& limits);
int topo_command(const std::string& name, const std::string& dot_path, const std::string& svg_path,
                 const Limits& limits);

}  // namespace tpusim::tools
