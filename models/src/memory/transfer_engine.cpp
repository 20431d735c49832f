#include "memory/transfer_engine.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

TransferEngine::TransferEngine(int window, std::uint8_t id) : window_(static_cast<std::size_t>(window)), id_(id) {
  if (window < 1) throw std::invalid_argument("transfer engine window must be at least 1");
}

void TransferEngine::issue(Tick now, std::uint32_t instr, tlm::tlm_fw_transport_if<>* target, ir::Memory memory,
                           Transfer t, Tick delay) {
  if (full()) throw std::logic_error("transfer engine issued beyond its window");
  if (ring_ == nullptr) ring_ = std::make_unique<Slot[]>(window_);
  Slot& s = slot(count_);
  ++count_;
  t.engine = id_;
  t.order = issued_++;
  *s.gp.get_extension<Transfer>() = t;
  s.instr = instr;
  s.issued = now;
  s.ready = now + delay;
  s.target = target;
  s.memory = memory;
  s.phase = Phase::delay;
  if (delay == 0) send(s);
}

void TransferEngine::send(Slot& s) {
  if (s.target == nullptr) {  // the engine's own work only
    s.phase = Phase::done;
    return;
  }
  s.phase = Phase::memory;
  prepare_transfer(s.gp, *s.gp.get_extension<Transfer>(), s.memory);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  if (s.target->nb_transport_fw(s.gp, phase, delay) == tlm::TLM_COMPLETED) s.phase = Phase::done;
}

void TransferEngine::start_ready(Tick now) {
  for (std::size_t i = 0; i < count_; ++i) {
    Slot& s = slot(i);
    if (s.phase == Phase::delay && s.ready <= now) send(s);
  }
}

void TransferEngine::on_response(const tlm::tlm_generic_payload& gp) {
  for (std::size_t i = 0; i < count_; ++i) {
    Slot& s = slot(i);
    if (&s.gp == &gp) {
      s.phase = Phase::done;
      return;
    }
  }
  throw std::logic_error("transfer engine: a response for a payload it does not have in flight");
}

Tick TransferEngine::next_event() const {
  Tick next = kNever;
  for (std::size_t i = 0; i < count_; ++i) {
    const Slot& s = slot(i);
    if (s.phase == Phase::delay) next = std::min(next, s.ready);
  }
  return next;
}

}  // namespace tpusim::models
