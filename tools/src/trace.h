#pragma once
// Timeline output: collects the instructions of selected chips as they complete and writes them in the Chrome
// trace-event format, which Perfetto (ui.perfetto.dev) and chrome://tracing open. One process per chip, one
// thread per (TensorCore, unit) queue.
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::tools {

// Parses a chip list such as "0-3,8,12-13" for a pod of pod_chips chips; errors go to diags under the key
// "--trace-chips". A chip, or a range's first chip, beyond the pod is refused; a range ending beyond it keeps
// the pod's chips within it (the default 0-3 traces the one chip of a 1-chip pod).
[[nodiscard]] std::set<std::uint32_t> parse_chip_list(const std::string& text, std::size_t pod_chips,
                                                      Diagnostics& diags);

// An event beside the instructions (a fault on its track): an instant event at `start` when `instant`, else a
// span [start, end]. `pid` is a chip's, or one past the chips for a process of its own named `process`.
struct TraceMark {
  std::uint32_t pid = 0;
  std::string process;  // the process's name when no instruction named it ("chip N")
  std::string track;    // the thread's name, unique within the process
  std::string name;
  Seconds start, end;
  bool instant = false;
  std::vector<std::pair<std::string, double>> args;
};

class TraceRecorder {
 public:
  // Each chip keeps its first limit / chips spans (at least 1); later ones are dropped (and counted) so a huge
  // run cannot exhaust memory. A share per chip, not the first `limit` of all, keeps the trace independent of
  // how the chips' completions interleave (a chip may run ahead of the others: models/src/chip/chip.h).
  TraceRecorder(std::set<std::uint32_t> chips, std::size_t limit);
  void record(const models::TraceSpan& span);
  // With `marks`, each on a track of its own after the instructions' (tid kMarkTrackBase + its track's order).
  void write(const ir::ProgramSet& programs, std::ostream& out, const std::vector<TraceMark>& marks = {},
             const std::string& written_by = "") const;
  static constexpr int kMarkTrackBase = 2000;
  // An SVG timeline of the lowest traced chip: one lane per (TensorCore, unit) queue, busy spans as bars.
  // Spans closer than half a pixel merge into one bar, so the file stays small for long runs.
  void write_timeline_svg(const std::string& title, std::ostream& out) const;
  // A counter track "HBM in use" (GB) on each listed chip that is traced (a pipeline stage's first chip): the
  // running sum of its `changes` (time in s, bytes added or freed; memory_in_use.h).
  void set_hbm_in_use(std::vector<std::pair<std::uint32_t, std::vector<std::pair<double, double>>>> per_chip);
  [[nodiscard]] std::size_t dropped() const { return dropped_; }
  [[nodiscard]] const std::vector<models::TraceSpan>& spans() const { return spans_; }
  [[nodiscard]] const std::set<std::uint32_t>& chips() const { return chips_; }
  [[nodiscard]] std::size_t per_chip_limit() const { return per_chip_; }

 private:
  using json_events = nlohmann::ordered_json;
  struct PlacedSlice {  // an instruction's slice as written: its chip, track and extent (seconds)
    std::uint32_t chip;
    int tid;
    double start, end;
    std::string label;
  };
  struct BlockSpan {  // a (block, phase)'s instructions on one chip: from the first's start to the last's end
    double start = 0, end = 0;
    std::size_t instructions = 0;
  };
  // Each chip's "step" span and its "layers <phase>" tracks (trace.cpp says how spans take lanes).
  void add_step_and_blocks(json_events& events, const std::map<std::uint32_t, std::pair<double, double>>& step_extent,
                           const std::map<std::uint32_t, std::size_t>& traced_on,
                           const std::map<std::tuple<std::uint32_t, int, std::string>, BlockSpan>& blocks) const;
  // Flow events from each collective's earliest slice to its slices on the other traced chips.
  using CollectiveSlices = std::map<std::pair<std::uint32_t, std::string>, std::vector<PlacedSlice>>;
  static void add_collective_flows(json_events& events, const CollectiveSlices& collectives);

  std::set<std::uint32_t> chips_;
  std::size_t per_chip_;
  std::map<std::uint32_t, std::size_t> kept_;  // spans kept per chip
  std::vector<models::TraceSpan> spans_;
  std::map<std::uint32_t, std::vector<std::pair<double, double>>> hbm_in_use_;  // chip -> changes
  std::map<std::uint32_t, std::size_t> dropped_on_;  // spans dropped per chip
  std::size_t dropped_ = 0;
};

}  // namespace tpusim::tools
