// Chip-to-chip spread of a run (report.h).
#include <map>

#include "tools/src/report.h"

namespace tpusim::tools {

nlohmann::ordered_json chip_spread_json(const RunReport& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (r.chip_rows.empty()) return j;
  const ChipRow* slowest = &r.chip_rows.front();
  const ChipRow* fastest = slowest;
  double mean_finish = 0;
  std::map<std::string, double> mean;
  for (const ChipRow& c : r.chip_rows) {
    if (c.finish_s > slowest->finish_s) slowest = &c;
    if (c.finish_s < fastest->finish_s) fastest = &c;
    mean_finish += c.finish_s;
    for (const auto& [k, v] : c.breakdown_s) mean[k] += v;
  }
  const auto n = static_cast<double>(r.chip_rows.size());
  mean_finish /= n;
  std::string why = "none";
  double extra = 0;
  for (const auto& [k, v] : slowest->breakdown_s) {
    if (k == "idle") continue;  // idle is what the others have instead
    const double over = v - mean[k] / n;
    if (over > extra) {
      extra = over;
      why = k;
    }
  }
  j["slowest_chip"] = slowest->chip;
  j["slowest_finish_s"] = slowest->finish_s;
  j["fastest_chip"] = fastest->chip;
  j["fastest_finish_s"] = fastest->finish_s;
  j["mean_finish_s"] = mean_finish;
  j["slowest_excess_in"] = why;
  j["slowest_excess_s"] = extra;
  return j;
}

}  // namespace tpusim::tools
