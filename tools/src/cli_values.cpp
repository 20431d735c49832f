#include "tools/src/cli_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace tpusim::tools {

namespace {

// The option's name as its help lists it: the long form when it has one ("--jobs"), else the short one or the
// positional's name ("scenario").
std::string option_name(const CLI::Option& opt) {
  if (!opt.get_lnames().empty()) return "--" + opt.get_lnames().front();
  if (!opt.get_snames().empty()) return "-" + opt.get_snames().front();
  return opt.get_name(true, false);
}

void check_option(const CLI::Option& opt, Diagnostics& diags) {
  if (opt.count() == 0 || opt.get_type_size_max() == 0) return;  // not given, or a flag (no value)
  const std::string name = option_name(opt);
  const std::string type = opt.get_type_name();
  const bool whole = type == "INT" || type == "UINT";
  const bool number = whole || type == "FLOAT" || type == "NUMBER";
  for (const std::string& value : opt.results()) {
    const SourceLoc where{fmt::format("{} '{}'", name, value)};
    if (value.find_first_not_of(" \t") == std::string::npos) {
      diags.error(where, "", "empty value", fmt::format("a value after {}", name), "nothing",
                  "leave the option out for its default");
      continue;
    }
    if (!number) continue;
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const bool parsed = end != value.c_str() && *end == '\0' && errno == 0;
    if (whole) {
      if (!parsed || v < 1 || v != std::floor(v)) {
        diags.error(where, "", "invalid value", "a whole number >= 1", fmt::format("'{}'", value));
      }
    } else if (!parsed || !std::isfinite(v) || v <= 0) {
      diags.error(where, "", "invalid value", "a finite number > 0, e.g. 3e10", fmt::format("'{}'", value));
    }
  }
}

}  // namespace

void check_command_line(const CLI::App& app, Diagnostics& diags) {
  for (const CLI::Option* opt : app.get_options()) check_option(*opt, diags);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return s->parsed(); })) {
    check_command_line(*sub, diags);
  }
}

}  // namespace tpusim::tools
