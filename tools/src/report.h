#pragma once
// Report writers: summary.json (the documented, versioned contract in docs/summary-format.md), per-chip CSV,
// and the table on stdout. They format; they compute nothing that the simulation did not measure.
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/src/op_classes.h"
#include "tpusim/core/scenario.h"
#include "tools/src/memory_in_use.h"
#include "tpusim/kernels/memory_plan.h"

namespace tpusim::tools {

struct Spread {
  double mean = 0, min = 0, max = 0;
};

struct UnitReport {
  std::string name;  // "mxu", "vpu", "dma", "hbm", ...
  Spread busy_s;
  Spread utilization;
  std::uint64_t bytes = 0;
  std::uint64_t instructions = 0;
  // Means over chips (see models::UnitUsage): nothing in flight with the next instruction waiting, by reason;
  // busy with the next instruction waiting for a slot; idle.
  double stalled_s = 0;
  std::vector<std::pair<std::string, double>> stalled_by_s;  // reasons with a non-zero time
  double queue_slots_s = 0;
  double idle_s = 0;
  bool listed_when_unused = true;  // the table lists it when no instruction ran on it (models::HwUnitInfo)
};

// A statistic a block declared of its own (models::BlockStat): summary.json "blocks", the table's last rows.
struct BlockStatRow {
  std::string block;
  std::string key;  // its name with its unit's suffix: "energy_j"
  double total = 0;
  Spread per_chip;
};

struct ChipRow {
  std::uint32_t chip = 0;
  double finish_s = 0;
  std::map<std::string, double> busy_s;       // per unit kind
  std::map<std::string, double> utilization;  // per unit kind
  std::vector<std::pair<std::string, double>> breakdown_s;  // compute, memory_stall, host_stall, idle
};

struct LinkRow {
  std::uint32_t link = 0;
  std::uint32_t src = 0, dst = 0;
  int axis = 0, direction = 0;
  std::string kind;  // electrical / optical
  double bytes = 0, busy_s = 0, utilization = 0, queueing_s = 0;
};

struct CollectiveRow {
  std::uint32_t program = 0, instruction = 0;
  std::string op, algorithm;
  int participants = 0;
  std::uint64_t steps = 0;
  double bytes_per_chip = 0;
  double time_s = 0, ideal_s = 0;
  double algorithm_bandwidth = 0, bus_bandwidth = 0;  // bytes/s
};

// The step's figures, against which the metrics (MFU, throughput) are computed.
struct StepFigures {
  double step_time_s = 0;
  double model_flops = 0;     // per step, all chips
  double hardware_flops = 0;  // per step, all chips
  double peak_flops_per_s = 0;  // all chips
  long long chips = 0;
  double examples_per_step = 0;  // 0 when it does not apply (raw GEMM)
  double tokens_per_step = 0;    // transformers: tokens whose loss or next token the step computes (all chips)
  StepKind step = StepKind::train;
};

// Whole models: the per-chip HBM plan and what was held over the step.
struct MemoryReport {
  std::optional<kernels::MemoryPlan> plan;
  // HBM held over the step (memory_in_use.h), by the pipeline stage whose peak is highest. Neither keeps its
  // change list (the trace's counters take it); the stages keep no slices.
  std::optional<MemoryInUse> in_use;
  std::vector<MemoryInUse> in_use_by_stage;  // every stage's, in stage order (pipelines only)
};

// Where the step's time went: by op class, by op, and the exposed communication.
struct TimeReport {
  std::vector<OpClassTime> op_classes;  // per-op-class breakdown (op_classes.h)
  std::vector<OpTime> ops;              // every op, longest attributed time first (op_classes.h)
  double hbm_bandwidth = 0;             // one chip's, nominal: what an op's "bound by" compares with
  double op_idle_s = 0;                 // nothing in flight, same weighting as op_classes
  // Exposed communication by collective kind (op_classes.h: the collectives' share of the time ICI was the
  // highest tier in flight), same weighting as op_classes; empty without collectives.
  std::vector<std::pair<std::string, double>> exposed_collectives_s;
  std::vector<std::pair<std::string, double>> breakdown_s;  // mean over chips, in a fixed order
};

// The interconnect (empty when the run has no ICI traffic) and, multislice only, the DCN: host NICs, bytes
// sent over them, utilization over the 2 x nics NIC directions; with an oversubscribed fabric, the pods'
// uplinks and their utilization over the 2 x uplinks directions.
struct NetworkReport {
  std::string link_model;
  Spread link_utilization;
  std::vector<LinkRow> links;
  std::size_t dcn_nics = 0;
  double dcn_bytes = 0;
  Spread dcn_utilization;
  std::size_t dcn_uplinks = 0;
  Spread dcn_uplink_utilization;
  std::vector<CollectiveRow> collectives;
};

// Everything a run measured, in report form.
struct RunReport {
  StepFigures figures;
  // Whole models: the device mesh as placed on the torus ("fsdp 2 on y, tensor 2 on x") and the sharding
  // rules in force, defaults included ("batch, embed over fsdp; heads, kv_heads, mlp, vocab over tensor").
  std::string mesh, sharding;
  MemoryReport memory;
  TimeReport time;
  std::vector<UnitReport> units;
  std::vector<BlockStatRow> block_stats;
  Spread mxu_array_utilization;  // over every MXU array of every chip (models::SimResult)
  std::vector<ChipRow> chip_rows;
  std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
  std::uint64_t instructions = 0;   // per program
  std::size_t programs = 0;
  std::vector<std::string> notes;   // e.g. "input-bound: the TPU waited for the host 40% of the step"
  NetworkReport network;
};

[[nodiscard]] nlohmann::ordered_json summary_json(const Scenario& scenario, const RunReport& report);
// Chip-to-chip spread (chip_spread.cpp): the slowest and fastest chip's finish, and why the slowest is slow:
// the breakdown category in which it exceeds the mean over chips the most.
[[nodiscard]] nlohmann::ordered_json chip_spread_json(const RunReport& report);
void write_chips_csv(const RunReport& report, std::ostream& out);
void write_links_csv(const RunReport& report, std::ostream& out);
// ops.csv: every op of the step (TimeReport::ops) with its time, FLOPs, bytes, achieved rates and bound.
void write_ops_csv(const RunReport& report, std::ostream& out);
// What limits an op (docs/summary-format.md, "top_ops"): mxu, hbm or latency for a matmul, vpu or hbm for a
// vector op, else the unit it runs on.
[[nodiscard]] std::string op_bound_by(const RunReport& report, const OpTime& op);
void print_table(const Scenario& scenario, const RunReport& report, std::ostream& out);

// Builds a nested JSON object from dotted keys with string values; integers, booleans and integer lists
// become JSON numbers, booleans and arrays, everything else (quantities with units) stays a string.
[[nodiscard]] nlohmann::ordered_json nest_rendered(const std::vector<std::pair<std::string, std::string>>& flat);

}  // namespace tpusim::tools
