#include "pod.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "elaboration_heap.h"
#include "host/step_jitter.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::models {

RunControl::RunControl(std::function<void(double)> progress, std::function<void(const TraceSpan&)> trace,
                       std::uint32_t chips, std::uint64_t clock_check_interval)
    : progress_(std::move(progress)),
      trace_(std::move(trace)),
      last_report_(std::chrono::steady_clock::now()),
      clock_check_interval_(std::max<std::uint64_t>(1, clock_check_interval)),
      unfinished_(chips) {}

void RunControl::on_activation(Tick now) {
  ++activations_;
  throw_if_interrupted();
  if (!progress_ || activations_ % clock_check_interval_ != 0) return;
  const auto wall = std::chrono::steady_clock::now();
  if (wall - last_report_ < std::chrono::seconds(1)) return;
  last_report_ = wall;
  progress_(to_seconds(now).value());
}

void RunControl::fail(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
}

Pod::Pod(const sc_core::sc_module_name& name, const Scenario& scenario, const ir::ProgramSet& programs,
         RunControl& control, const net::InterconnectOptions& network, const BlockRegistry& registry,
         const std::vector<ChipDegradation>& degraded_chips, Mirroring* mirroring)
    : sc_core::sc_module(name),
      scenario_(scenario),
      programs_(programs),
      chip_(standard_composition(scenario.chip)),
      dataflow_(make_mxu_dataflow(scenario.chip.mxu.dataflow)) {
  const long long chips = scenario.pod.chip_count();
  if (programs.programs.empty()) throw std::invalid_argument("no program to simulate");
  if (!programs.role_of_chip.empty() && static_cast<long long>(programs.role_of_chip.size()) != chips) {
    throw std::invalid_argument(fmt::format("the program set assigns roles to {} chips, the pod has {}",
                                            programs.role_of_chip.size(), chips));
  }
  mirroring_ = mirroring;
  indexes_.resize(programs.programs.size());
  chips_.reserve(static_cast<std::size_t>(chips));
  std::size_t heap_before_chip1 = 0;
  for (long long c = 0; c < chips; ++c) {
    // The heap the chips still to build need, mapped at once (elaboration_heap.h): what chip 1 took (chip 0 also
    // built its program's index), plus 1/16 for chips that differ.
    if (c == 1) heap_before_chip1 = heap_in_use();
    if (c == 2 && mirroring == nullptr) {
      const std::size_t now = heap_in_use();
      const std::size_t per_chip = now > heap_before_chip1 ? now - heap_before_chip1 : 0;
      (void)prefault_heap(per_chip * static_cast<std::size_t>(chips - 2) / 16 * 17);
    }
    const auto id = static_cast<std::uint32_t>(c);
    if (mirroring != nullptr && mirroring->mirrored(id)) {
      chips_.push_back(nullptr);
      continue;
    }
    const std::size_t role = programs.role_of_chip.empty() ? 0 : programs.role_of_chip[id];
    if (role >= programs.programs.size()) {
      throw std::invalid_argument(fmt::format("chip {} runs program {}, which does not exist", id, role));
    }
    if (!indexes_[role]) {
      indexes_[role] = std::make_unique<ProgramIndex>(programs.programs[role], chip_, id);
    }
    const std::string chip_name = "chip" + std::to_string(id);
    const auto degraded = std::find_if(degraded_chips.begin(), degraded_chips.end(),
                                       [id](const ChipDegradation& d) { return d.chip.value() == id; });
    if (degraded != degraded_chips.end()) {
      // A straggler's clock (and the VMEM at the core clock) and a degraded HBM's rate, for this chip alone.
      ChipSpec spec = scenario.chip;
      spec.clock = Hertz(spec.clock.value() * degraded->clock_fraction);
      spec.vmem.bandwidth = BytesPerSecond(spec.vmem.bandwidth.value() * degraded->clock_fraction);
      spec.hbm.bandwidth = BytesPerSecond(spec.hbm.bandwidth.value() * degraded->hbm_bandwidth_fraction);
      degraded_specs_.push_back(std::make_unique<ChipSpec>(standard_composition(spec)));
      degraded_indexes_.push_back(std::make_unique<ProgramIndex>(programs.programs[role], *degraded_specs_.back(), id));
      chips_.push_back(std::make_unique<Chip>(chip_name.c_str(), id, *degraded_specs_.back(),
                                              *degraded_indexes_.back(), *dataflow_, scenario.fidelity.mxu, control,
                                              registry));
      continue;
    }
    chips_.push_back(std::make_unique<Chip>(chip_name.c_str(), id, chip_, *indexes_[role], *dataflow_,
                                            scenario.fidelity.mxu, control, registry));
  }
  for (const TimedChipFault& f : network.timed_chips) chips_.at(f.chip.value())->stop_at(to_ticks(f.at));
  if (uses_ici(programs)) {
    topology_ = std::make_unique<Topology>(build_topology(scenario.pod, scenario.chip));
    interconnect_ = std::make_unique<net::Interconnect>("ici", *topology_, scenario, programs, network, control);
    if (mirroring != nullptr) interconnect_->mirror(*mirroring);
    for (std::uint32_t c = 0; c < chips_.size(); ++c) {
      if (!chips_[c]) continue;
      if (mirroring != nullptr) {
        mirroring->attach_representative(c, *chips_[c]);
        interconnect_->attach_chip(c, chips_[c]->wake(), mirroring->vpu(c));
      } else {
        interconnect_->attach_chip(c, chips_[c]->wake(), *chips_[c]);
      }
      chips_[c]->attach_ici(*interconnect_);
    }
  }
}

namespace {

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  for (double v : values) {
    s.mean += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean /= static_cast<double>(values.size());
  return s;
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// Adds the per-unit statistics of the chips' counters to `r`, whose step_time must be set: stalls
// (UnitUsage::stalled, stalled_by, queue_slots, idle), the MXU and VPU VMEM operand bytes (UnitUsage::bytes)
// and the spread of per-array MXU utilization (SimResult::mxu_array_utilization).
void add_unit_stall_stats(const std::vector<ChipCounters>& chips, const ChipSpec& spec, SimResult& r) {
  const double n = chips.empty() ? 1.0 : static_cast<double>(chips.size());
  const std::size_t kinds = hw_units().size();
  std::array<double, kMaxHwUnits> busy{}, slots{};
  std::array<std::array<double, kStallReasons>, kMaxHwUnits> stalled{};
  std::array<bool, kMaxHwUnits> queued{};
  std::vector<double> array_utilization;
  for (const ChipCounters& c : chips) {
    // An array's utilization: its rated MACs / (rows x cols x clock cycles of the step): against its dtype's peak.
    const double capacity = static_cast<double>(spec.mxu.rows) * spec.mxu.cols * r.step_time.value() *
                            spec.clock.value();
    for (double macs : c.array_macs) array_utilization.push_back(capacity > 0 ? macs / capacity : 0.0);
    for (std::size_t u = 0; u < kinds; ++u) {
      const auto& instances = c.units[u].instances;
      if (instances.empty()) continue;
      queued[u] = true;
      const double share = 1.0 / (static_cast<double>(instances.size()) * n);  // mean over instances and chips
      for (const UnitTimes& t : instances) {
        busy[u] += to_seconds(t.busy).value() * share;
        slots[u] += to_seconds(t.queue_slots).value() * share;
        for (std::size_t k = 0; k < kStallReasons; ++k) stalled[u][k] += to_seconds(t.stalled[k]).value() * share;
      }
    }
  }
  if (!array_utilization.empty()) {
    Spread& s = r.mxu_array_utilization;
    s.min = *std::min_element(array_utilization.begin(), array_utilization.end());
    s.max = *std::max_element(array_utilization.begin(), array_utilization.end());
    double sum = 0;
    for (double v : array_utilization) sum += v;
    s.mean = sum / static_cast<double>(array_utilization.size());
  }
  const double step = r.step_time.value();
  for (std::size_t u = 0; u < kinds; ++u) {
    UnitUsage& usage = r.units[u];
    double total = 0;
    for (std::size_t k = 0; k < kStallReasons; ++k) {
      usage.stalled_by[k] = Seconds(stalled[u][k]);
      total += stalled[u][k];
    }
    usage.stalled = Seconds(total);
    usage.queue_slots = Seconds(slots[u]);
    const double in_flight = queued[u] ? busy[u] : usage.busy.value();
    usage.idle = Seconds(std::max(0.0, step - in_flight - total));
  }
}

// The statistics the chips' blocks declared, each summed over chips and spread over them.
std::vector<BlockStat> declared_stats(const std::vector<ChipCounters>& chips) {
  std::vector<BlockStat> out;
  std::vector<std::vector<double>> per_chip;
  for (std::size_t c = 0; c < chips.size(); ++c) {
    for (const DeclaredStat& d : chips[c].declared) {
      std::size_t i = 0;
      while (i < out.size() && (out[i].block != d.block || out[i].name != d.name)) ++i;
      if (i == out.size()) {
        out.push_back(BlockStat{d.block, d.name, d.unit, 0, {}});
        per_chip.emplace_back(chips.size(), 0.0);
      }
      out[i].total += d.value;
      per_chip[i][c] += d.value;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].per_chip = spread_of(per_chip[i]);
  return out;
}

}  // namespace

std::string Pod::stuck() const {
  std::size_t unfinished = 0, simulated = 0;
  std::string first;
  for (std::size_t c = 0; c < chips_.size(); ++c) {
    if (!chips_[c]) continue;
    ++simulated;
    if (chips_[c]->finished()) continue;
    if (unfinished++ == 0) first = fmt::format("chip {}: {}", c, chips_[c]->stuck());
  }
  if (unfinished == 0) return "";
  return fmt::format("{} of {} chips did not finish; {}", unfinished, simulated, first);
}

SimResult Pod::collect(Tick end) const {
  const ChipSpec& spec = scenario_.chip;
  SimResult r;
  std::vector<ChipCounters> counters;
  counters.reserve(chips_.size());
  Tick step = end;
  for (std::size_t c = 0; c < chips_.size(); ++c) {
    // A mirrored chip's statistics are its representative's (built before it: a lower id).
    if (!chips_[c]) {
      counters.push_back(counters[mirroring_->representative(static_cast<std::uint32_t>(c))]);
    } else {
      counters.push_back(chips_[c]->collect());
    }
    step = std::max(step, counters.back().finish);
  }
  // A remote put's write into its destination's HBM, which nothing on the destination runs (after the copies
  // above: each chip, mirrors included, adds the puts the network delivered to it).
  if (interconnect_) {
    for (std::size_t c = 0; c < chips_.size(); ++c) {
      counters[c].traffic.hbm_written += interconnect_->put_written(static_cast<std::uint32_t>(c));
    }
  }
  // A step whose chips communicate across hosts waits for the slowest host (host/step_jitter.h): every chip
  // idles that long after the last one finishes. Not for a step a chip fault stopped.
  if (end == 0 && interconnect_ && topology_) {
    const std::uint64_t hosts = topology_->host_count();
    step += to_ticks(host_sync_wait(hosts, scenario_.pod.host_jitter, to_seconds(step),
                                    static_cast<std::uint64_t>(scenario_.seed)));
  }
  r.step_time = to_seconds(step);
  r.cost.chips_simulated = chips_.size();
  r.peak_flops = spec.published.peak_bf16 * static_cast<double>(chips_.size());
  const double step_s = r.step_time.value();
  const double step_cycles = step_s * spec.clock.value();
  const double cores = spec.tensorcores;

  std::vector<double> program_model_flops(programs_.programs.size(), -1.0);
  std::vector<double> program_hardware_flops(programs_.programs.size(), -1.0);
  const std::size_t kinds = hw_units().size();
  std::array<std::vector<double>, kMaxHwUnits> utilization;
  std::array<double, kMaxHwUnits> busy_sum{};
  std::array<std::uint64_t, kMaxHwUnits> bytes{};
  std::uint64_t hbm_read = 0, hbm_written = 0;

  r.chips.reserve(chips_.size());
  for (std::size_t i = 0; i < chips_.size(); ++i) {
    const ChipCounters& c = counters[i];
    const std::size_t role = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[i];
    if (program_model_flops[role] < 0) {
      program_model_flops[role] = programs_.programs[role].model_flops();
      program_hardware_flops[role] = programs_.programs[role].hardware_flops();
    }
    r.model_flops += program_model_flops[role];
    r.hardware_flops += program_hardware_flops[role];

    ChipResult cr;
    cr.finish = to_seconds(c.finish);
    cr.breakdown.compute = to_seconds(c.time.compute);
    cr.breakdown.communication = to_seconds(c.time.communication);
    cr.breakdown.memory_stall = to_seconds(c.time.memory_stall);
    cr.breakdown.host_stall = to_seconds(c.time.host_stall);
    cr.breakdown.idle = to_seconds(c.time.idle + (step - c.finish));
    const auto set = [&](HwUnit u, Seconds busy, double util) {
      cr.busy[static_cast<std::size_t>(u)] = busy;
      cr.utilization[static_cast<std::size_t>(u)] = util;
      busy_sum[static_cast<std::size_t>(u)] += busy.value();
      utilization[static_cast<std::size_t>(u)].push_back(util);
    };
    for (const HwUnitInfo& info : hw_units()) {
      const Tick ticks = c.unit(info.unit).busy;
      const Seconds busy = info.per_core ? to_seconds(ticks) / cores : to_seconds(ticks);
      double utilization = 0;
      switch (info.utilization) {
        case HwUnitInfo::Utilization::rated_macs:
          utilization = ratio(c.rated_macs, static_cast<double>(spec.mxu.rows) * spec.mxu.cols * spec.mxu.per_core *
                                                cores * step_cycles);
          break;
        case HwUnitInfo::Utilization::busy_time: utilization = ratio(busy.value(), step_s); break;
        case HwUnitInfo::Utilization::hbm_bytes:
          utilization = ratio(static_cast<double>(c.traffic.hbm_read + c.traffic.hbm_written),
                              spec.hbm.bandwidth.value() * step_s);
          break;
      }
      set(info.unit, busy, utilization);
    }
    cr.vmem_peak = Bytes(c.vmem_peak);
    r.chips.push_back(cr);

    r.breakdown.compute += cr.breakdown.compute;
    r.breakdown.communication += cr.breakdown.communication;
    r.breakdown.memory_stall += cr.breakdown.memory_stall;
    r.breakdown.host_stall += cr.breakdown.host_stall;
    r.breakdown.idle += cr.breakdown.idle;
    const bool mirrored = !chips_[i];
    for (std::size_t u = 0; u < c.executed.size(); ++u) {
      r.instructions_per_unit[u] += c.executed[u];
      (mirrored ? r.cost.instructions_mirrored : r.cost.instructions_executed) += c.executed[u];
    }
    hbm_read += c.traffic.hbm_read;
    hbm_written += c.traffic.hbm_written;
    for (std::size_t u = 0; u < kinds; ++u) bytes[u] += c.units[u].bytes;
  }
  const double n = chips_.empty() ? 1.0 : static_cast<double>(chips_.size());
  r.breakdown.compute = r.breakdown.compute / n;
  r.breakdown.communication = r.breakdown.communication / n;
  r.breakdown.memory_stall = r.breakdown.memory_stall / n;
  r.breakdown.host_stall = r.breakdown.host_stall / n;
  r.breakdown.idle = r.breakdown.idle / n;
  bytes[static_cast<std::size_t>(HwUnit::hbm)] = hbm_read + hbm_written;  // what HBM's utilization counts
  for (std::size_t u = 0; u < kinds; ++u) {
    r.units[u].busy = Seconds(busy_sum[u] / n);
    r.units[u].utilization = spread_of(utilization[u]);
    r.units[u].bytes = Bytes(bytes[u]);
  }
  r.traffic.hbm_read = Bytes(hbm_read);
  r.traffic.hbm_written = Bytes(hbm_written);
  r.traffic.dma_bytes = r.unit(HwUnit::dma).bytes;
  r.traffic.host_bytes = r.unit(HwUnit::host).bytes;
  r.traffic.sparsecore_bytes = r.unit(HwUnit::sparsecore).bytes;
  add_unit_stall_stats(counters, spec, r);
  r.block_stats = declared_stats(counters);
  if (interconnect_) interconnect_->collect(r.network, step);
  return r;
}

}  // namespace tpusim::models
