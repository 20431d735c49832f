#include "tpusim/core/logging.h"

#include <map>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tpusim {
namespace {

struct LevelTable {
  std::mutex mu;
  spdlog::level::level_enum fallback = spdlog::level::warn;
  std::map<std::string, spdlog::level::level_enum> by_prefix;
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
};

// The logging set-up is process-wide by nature (spdlog keeps a registry too); it holds configuration only,
// never simulation state.
LevelTable& levels() {
  static LevelTable t;
  return t;
}

spdlog::level::level_enum level_for(const LevelTable& t, const std::string& path) {
  spdlog::level::level_enum best = t.fallback;
  std::size_t best_len = 0;
  for (const auto& [prefix, level] : t.by_prefix) {
    const bool match = path == prefix || (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
                                          path[prefix.size()] == '.');
    if (match && prefix.size() >= best_len) {
      best = level;
      best_len = prefix.size();
    }
  }
  return best;
}

bool parse_level(const std::string& text, spdlog::level::level_enum& out) {
  static const std::map<std::string, spdlog::level::level_enum> kNames{
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  const auto it = kNames.find(text);
  if (it == kNames.end()) return false;
  out = it->second;
  return true;
}

}  // namespace

void configure_logging(const std::string& spec, Diagnostics& diags) {
  LevelTable& t = levels();
  std::lock_guard<std::mutex> lock(t.mu);
  std::size_t start = 0;
  while (start <= spec.size()) {
    const auto comma = spec.find(',', start);
    const std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      const auto eq = item.find('=');
      const std::string level_text = eq == std::string::npos ? item : item.substr(eq + 1);
      spdlog::level::level_enum level{};
      if (!parse_level(level_text, level)) {
        diags.error(SourceLoc{"--log-level", 0, 0}, "--log-level", "unknown log level",
                    "trace, debug, info, warn, error or off", level_text,
                    suggestion(level_text, {"trace", "debug", "info", "warn", "error", "off"}));
      } else if (eq == std::string::npos) {
        t.fallback = level;
      } else {
        t.by_prefix[item.substr(0, eq)] = level;
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  spdlog::apply_all([&t](const std::shared_ptr<spdlog::logger>& l) { l->set_level(level_for(t, l->name())); });
}

std::shared_ptr<spdlog::logger> logger_for(const std::string& module_path) {
  LevelTable& t = levels();
  std::lock_guard<std::mutex> lock(t.mu);
  if (auto existing = spdlog::get(module_path)) return existing;
  auto logger = std::make_shared<spdlog::logger>(module_path, t.sink);
  logger->set_level(level_for(t, module_path));
  logger->set_pattern("[%n] %l: %v");
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace tpusim
