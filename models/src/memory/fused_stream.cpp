#include "memory/fused_stream.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {
namespace {

// The stream's two transfers: reads, then writes (in the engine's issue order).
constexpr int kStreamWindow = 2;

double per_step(std::uint64_t bytes, const ir::Instruction& ins) {
  return static_cast<double>(bytes) / std::max<std::uint32_t>(1, ins.stream.grid_steps);
}

}  // namespace

FusedStream::FusedStream(int core, int unit)
    : engine_(kStreamWindow, static_cast<std::uint8_t>(kFirstStreamEngine + 2 * core + unit)) {
  if (core < 0 || kFirstStreamEngine + 2 * core + unit >= 254) throw std::invalid_argument("fused stream: bad core");
}

Tick FusedStream::head_ticks(const HbmSpec& hbm, const ir::Instruction& ins) {
  return to_ticks(hbm.latency + Seconds(per_step(ins.stream.hbm_read, ins) / hbm.achievable_bandwidth().value()));
}

Tick FusedStream::tail_ticks(const HbmSpec& hbm, const ir::Instruction& ins) {
  return to_ticks(Seconds(per_step(ins.stream.hbm_written, ins) / hbm.achievable_bandwidth().value()));
}

std::int64_t FusedStream::pipeline_floor_cycles(const ChipSpec& chip, const ir::Instruction& ins,
                                                std::int64_t compute_cycles) {
  if (ins.stream.buffers == 0 || ins.stream.grid_steps <= 1) return 0;
  const double clock = chip.clock.value();
  const double steps = ins.stream.grid_steps;
  const double drain = static_cast<double>(2 * chip.mxu.rows + chip.mxu.cols);
  const double latency = chip.hbm.latency.value() * clock;
  // The TensorCores run their shares of the fusion side by side, each loading its own step's tiles.
  const double loads = per_step(ins.stream.hbm_read, ins) * std::max(1, chip.tensorcores) /
                       chip.hbm.achievable_bandwidth().value() * clock;
  const double cycles = (steps * (drain + latency + loads) + static_cast<double>(compute_cycles)) /
                        static_cast<double>(ins.stream.buffers);
  return static_cast<std::int64_t>(std::ceil(cycles - 1e-9));
}

void FusedStream::start(Tick now, std::uint32_t instr, const ir::Instruction& ins, tlm::tlm_fw_transport_if<>* hbm) {
  if (busy()) throw std::logic_error("fused stream: a unit started a fused instruction before its last ended");
  instr_ = instr;
  auto send = [&](std::uint64_t bytes, ir::Memory src, ir::Memory dst) {
    if (bytes == 0) return;
    Transfer t;
    t.src = src;
    t.dst = dst;
    t.bytes = bytes;
    t.volume = static_cast<double>(bytes);
    engine_.issue(now, instr, hbm, ir::Memory::hbm, t);
  };
  send(ins.stream.hbm_read, ir::Memory::hbm, ir::Memory::vmem);
  send(ins.stream.hbm_written, ir::Memory::vmem, ir::Memory::hbm);
}

bool FusedStream::busy() {
  engine_.retire([](std::uint32_t, Tick) {});
  return engine_.busy();
}

}  // namespace tpusim::models
