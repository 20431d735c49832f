#include "fused_stream.h"

#include <algorithm>
#include <stdexcept>

#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

// Each stream queue holds one fused instruction's two transfers (a unit runs one fused instruction at a time).
constexpr int kStreamWindow = 2;

double hbm_rate(const HbmSpec& hbm) {
  return hbm.bandwidth.value() * (hbm.efficiency > 0 ? hbm.efficiency : 1.0);
}

double per_step(std::uint64_t bytes, const ir::Instruction& ins) {
  return static_cast<double>(bytes) / std::max<std::uint32_t>(1, ins.grid_steps);
}

}  // namespace

FusedStreams::FusedStreams(int cores) {
  if (cores < 1 || kFirstEngineId + 2 * cores > 255) throw std::invalid_argument("fused streams: bad core count");
  for (int c = 0; c < cores; ++c) {
    for (int unit = 0; unit < 2; ++unit) {
      engines_.emplace_back(kStreamWindow, static_cast<std::uint8_t>(kFirstEngineId + 2 * c + unit));
    }
  }
}

Tick FusedStreams::head_ticks(const HbmSpec& hbm, const ir::Instruction& ins) {
  return to_ticks(hbm.latency + Seconds(per_step(ins.hbm_read, ins) / hbm_rate(hbm)));
}

Tick FusedStreams::tail_ticks(const HbmSpec& hbm, const ir::Instruction& ins) {
  return to_ticks(Seconds(per_step(ins.hbm_written, ins) / hbm_rate(hbm)));
}

void FusedStreams::start(Tick now, std::uint32_t instr, const ir::Instruction& ins, BandwidthServer& hbm,
                         const HbmSpec& spec) {
  const std::size_t unit = ins.kind == ir::OpKind::matmul ? 0 : 1;
  TransferEngine& engine = engines_.at(2 * static_cast<std::size_t>(ins.core) + unit);
  if (engine.busy()) throw std::logic_error("fused streams: a unit started a fused instruction before its last ended");
  const Tick latency = to_ticks(spec.latency);
  int transfers = 0;
  for (const auto& [bytes, direction] : {std::pair{ins.hbm_read, FlowDirection::read},
                                         std::pair{ins.hbm_written, FlowDirection::write}}) {
    if (bytes == 0) continue;
    const auto b = static_cast<double>(bytes);
    engine.issue(now, instr, hbm, latency, b, direction, hbm_channel_share(spec, b));
    ++transfers;
  }
  if (transfers > 0) pending_.emplace_back(instr, transfers);
}

bool FusedStreams::pending(std::uint32_t instr) const {
  return std::any_of(pending_.begin(), pending_.end(), [instr](const auto& p) { return p.first == instr; });
}

void FusedStreams::on_done(std::uint32_t tag) {
  engines_.at(TransferEngine::owner_of(tag) - kFirstEngineId).on_done(tag);
}

void FusedStreams::start_ready(Tick now) {
  for (TransferEngine& e : engines_) e.start_ready(now);
}

bool FusedStreams::retire() {
  bool finished = false;
  for (TransferEngine& e : engines_) {
    e.retire([&](std::uint32_t instr, Tick) {
      const auto it =
          std::find_if(pending_.begin(), pending_.end(), [instr](const auto& p) { return p.first == instr; });
      if (it != pending_.end() && --it->second == 0) {
        pending_.erase(it);
        finished = true;
      }
    });
  }
  return finished;
}

Tick FusedStreams::next_event() const {
  Tick next = kNever;
  for (const TransferEngine& e : engines_) next = std::min(next, e.next_event());
  return next;
}

}  // namespace tpusim::models
