#pragma once
// An in-order transfer engine: one descriptor queue of the DMA engine, or (with a window of one) the host's
// own work queue.
//
// It starts its queue's transfers in program order, keeps at most `window` of them issued and not retired
// (chip.dma.outstanding descriptors), and retires them in issue order: a transfer that finishes before an
// older one waits for it. Retiring in order keeps the queue's completion count a prefix count, which the
// chip's dependency scheme relies on; the cost is that a dependent of a short transfer can see it late when
// it overtook a long one (rare in tiled programs, whose transfers are similar in size).
//
// A transfer is a TLM request to a memory (memory/transfer.h): sent at issue, or after `delay` ticks of the
// engine's own work (the host's input pipeline, a launch); the memory answers when it has moved the bytes.
// Each slot owns its generic payload and Transfer extension, so nothing is allocated per transfer. The slots
// are allocated at the first issue: a pod builds every engine of every chip, most of which a run never uses
// (models/README.md, "What elaboration costs").
#include <cstdint>
#include <memory>

#include <tlm>

#include "memory/transfer.h"
#include "ticks.h"

namespace tpusim::models {

class TransferEngine {
 public:
  // `id` is the engine id the memories share their bandwidth by (memory/transfer.h).
  TransferEngine(int window, std::uint8_t id);

  [[nodiscard]] bool full() const { return count_ == window_; }
  [[nodiscard]] bool busy() const { return count_ > 0; }
  [[nodiscard]] std::uint8_t id() const { return id_; }

  // Issues `t` (its engine and order are filled in here) of instruction `instr` to `target`, the memory
  // `memory`, after `delay` ticks of the engine's own work. With no target the work is the delay alone.
  void issue(Tick now, std::uint32_t instr, tlm::tlm_fw_transport_if<>* target, ir::Memory memory, Transfer t,
             Tick delay = 0);
  // Sends the requests whose delay has ended by `now`.
  void start_ready(Tick now);
  // The memory's answer (BEGIN_RESP on the backward path) for one of this engine's payloads.
  void on_response(const tlm::tlm_generic_payload& gp);

  // Retires finished transfers from the head, in issue order; calls retire(instr, issued_at) for each.
  // Returns whether any retired.
  template <class Retire>
  bool retire(Retire&& retire);

  // The earliest tick at which a delay ends; kNever if none is pending.
  [[nodiscard]] Tick next_event() const;

  void account(Tick now) { busy_.advance(now, busy()); }
  [[nodiscard]] Tick busy_ticks() const { return busy_.total(); }

 private:
  enum class Phase : std::uint8_t { delay, memory, done };
  struct Slot {
    Slot() { gp.set_extension(new Transfer); }  // the payload owns (and deletes) its extension
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    std::uint32_t instr = 0;
    Phase phase = Phase::done;
    Tick issued = 0;
    Tick ready = 0;
    tlm::tlm_fw_transport_if<>* target = nullptr;
    ir::Memory memory = ir::Memory::hbm;
    tlm::tlm_generic_payload gp;
  };
  void send(Slot& s);
  [[nodiscard]] Slot& slot(std::size_t i) const { return ring_[(head_ + i) % window_]; }

  std::unique_ptr<Slot[]> ring_;  // window_ slots, allocated at the first issue
  std::size_t window_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::uint64_t issued_ = 0;
  std::uint8_t id_;
  BusyTime busy_;
};

template <class Retire>
bool TransferEngine::retire(Retire&& retire) {
  bool any = false;
  while (count_ > 0 && ring_[head_].phase == Phase::done) {
    retire(ring_[head_].instr, ring_[head_].issued);
    head_ = (head_ + 1) % window_;
    --count_;
    any = true;
  }
  return any;
}

}  // namespace tpusim::models
