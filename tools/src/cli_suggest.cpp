#include "tools/src/cli_suggest.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "tpusim/core/diagnostics.h"

namespace tpusim::tools {
namespace {

// "--perf", "-q": every name of every option of `app`.
void option_names(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
}

// Whether option `name` of `app` (or of its parent) takes a value, so that the next word is not a subcommand.
bool takes_value(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->check_name(name)) return o->get_type_size() != 0;
  }
  return false;
}

}  // namespace

std::string cli_suggestions(const CLI::App& app, int argc, const char* const* argv, const std::string& message) {
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    subcommands.push_back(sub->get_name());
  }
  const auto named = [&](const std::string& word) { return message.find(word) != std::string::npos; };
  std::string out;
  const CLI::App* chosen = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      std::vector<std::string> names;
      option_names(app, names);
      if (chosen != nullptr) option_names(*chosen, names);
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        const bool value = name == arg && (takes_value(app, name) || (chosen != nullptr && takes_value(*chosen, name)));
        if (value) ++i;  // its value follows
        continue;
      }
      const std::string best = closest_match(name, names);
      if (!best.empty() && named(name)) {
        out += fmt::format("tpusim: '{}' is not an option of {}; did you mean '{}'?\n", name,
                           chosen != nullptr ? "tpusim " + chosen->get_name() : std::string("tpusim"), best);
      }
      if (chosen == nullptr && name == arg) break;  // the next word may be its value: no subcommand to tell
      continue;
    }
    if (chosen != nullptr) continue;  // a positional argument of the subcommand
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->check_name(arg)) chosen = sub;
    }
    if (chosen == nullptr) {  // CLI11 says only "A subcommand is required"
      out += fmt::format("tpusim: '{}' is not a subcommand; {}\n", arg, suggestion(arg, subcommands));
      break;  // the rest belongs to a subcommand we cannot tell
    }
  }
  return out;
}

std::string conversion_error(const std::string& message) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const std::size_t at = message.find(kPrefix), eq = message.find(" = ");
  if (at == std::string::npos || eq == std::string::npos || eq < at) return "tpusim: " + message;
  const std::string option = message.substr(at + kPrefix.size(), eq - at - kPrefix.size());
  const std::string value = message.substr(eq + 3);
  return Diagnostic{SourceLoc{fmt::format("{} '{}'", option, value), 0, 0}, "", "invalid value", "a whole number",
                    fmt::format("'{}'", value), ""}
      .str();
}

}  // namespace tpusim::tools
