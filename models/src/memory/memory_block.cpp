#include "memory/memory_block.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tpusim::models {

std::unique_ptr<BandwidthScheduler> make_shared_scheduler(double bytes_per_second, double turnaround);
std::unique_ptr<BandwidthScheduler> make_fifo_scheduler(double bytes_per_second);

std::unique_ptr<BandwidthScheduler> make_bandwidth_scheduler(MemoryScheduler kind, double bytes_per_second,
                                                             double turnaround) {
  switch (kind) {
    case MemoryScheduler::shared: return make_shared_scheduler(bytes_per_second, turnaround);
    case MemoryScheduler::fifo: return make_fifo_scheduler(bytes_per_second);
  }
  return make_shared_scheduler(bytes_per_second, turnaround);
}

void prepare_transfer(tlm::tlm_generic_payload& gp, const Transfer& t, ir::Memory target) {
  const bool writes = t.dst == target && t.src != target;
  gp.set_command(writes ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(0);
  gp.set_data_ptr(nullptr);
  const auto length = static_cast<unsigned int>(std::min<std::uint64_t>(t.bytes, std::numeric_limits<unsigned int>::max()));
  gp.set_data_length(length);
  gp.set_streaming_width(length);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_byte_enable_length(0);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

MemoryBlock::MemoryBlock(const sc_core::sc_module_name& name, const ChipContext& chip, BlockKind kind,
                         const std::string& block, int instance, ir::Memory memory, BytesPerSecond nominal)
    : Block(name, kind, block, instance), socket("socket"), chip_(chip), memory_(memory), nominal_(nominal) {
  socket.register_nb_transport_fw(this, &MemoryBlock::nb_transport_fw);
}

tlm::tlm_fw_transport_if<>& MemoryBlock::local_port(tlm::tlm_bw_transport_if<>& bw) {
  local_bw_ = &bw;
  return local_;
}

void MemoryBlock::LocalPort::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error("memories take non-blocking transfers only (memory/transfer.h)");
}

MemoryBlock::Admission MemoryBlock::plain(const tlm::tlm_generic_payload& gp, const Transfer& t, Tick latency) {
  Admission a;
  a.latency = latency;
  a.volume = t.volume;
  a.direction = gp.is_write() ? FlowDirection::write : FlowDirection::read;
  return a;
}

std::size_t MemoryBlock::add_scheduler(MemoryScheduler kind, double bytes_per_second, double turnaround) {
  schedulers_.push_back(make_bandwidth_scheduler(kind, bytes_per_second, turnaround));
  return schedulers_.size() - 1;
}

std::uint32_t MemoryBlock::take_entry() {
  if (!free_.empty()) {
    const std::uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }
  if (entries_.size() >= (1u << 24)) throw std::logic_error("memory: too many transfers in flight");
  entries_.emplace_back();
  return static_cast<std::uint32_t>(entries_.size() - 1);
}

tlm::tlm_sync_enum MemoryBlock::nb_transport_fw(int socket_id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                                sc_core::sc_time& /*delay*/) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error("memory: unexpected phase on the forward path");
  const Transfer* t = gp.get_extension<Transfer>();
  if (t == nullptr) throw std::logic_error("memory: a transfer without its Transfer extension");
  const Tick now = chip_.now;
  count_transfer(*t);
  const Admission a = admit(gp, *t);
  if (a.latency == 0 && a.volume <= 0) {  // nothing to wait for, nothing to move
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return tlm::TLM_COMPLETED;
  }
  const std::uint32_t index = take_entry();
  entries_[index] = Entry{&gp, socket_id, now + a.latency, a, t->engine, t->order};
  if (a.latency == 0) {
    serve(index, now);
  } else {
    waiting_.push_back(index);
  }
  return tlm::TLM_ACCEPTED;
}

void MemoryBlock::charge(Tick now, std::uint8_t engine, std::uint64_t order, std::uint64_t read,
                         std::uint64_t written, double cap, std::uint32_t token) {
  if (read + written == 0) throw std::logic_error("memory: a charge of no bytes");
  const std::uint32_t index = take_entry();
  Admission a;
  a.volume = static_cast<double>(read + written);
  a.cap = cap;
  a.direction = read > 0 && written > 0 ? FlowDirection::copy : read > 0 ? FlowDirection::read : FlowDirection::write;
  entries_[index] = Entry{nullptr, static_cast<int>(token), now, a, engine, order};
  charged_read_ += read;
  charged_written_ += written;
  serve(index, now);
}

void MemoryBlock::serve(std::uint32_t index, Tick now) {
  const Entry& e = entries_[index];
  if (e.admission.volume <= 0) {
    respond(index);
    return;
  }
  const std::uint32_t tag = (static_cast<std::uint32_t>(e.engine) << 24) | index;
  schedulers_[e.admission.scheduler]->add(now, tag, e.admission.volume, e.order, e.admission.direction,
                                          e.admission.cap);
}

void MemoryBlock::advance(Tick now) {
  for (auto& s : schedulers_) s->advance(now, *this);
  if (waiting_.empty()) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    const std::uint32_t index = waiting_[i];
    if (entries_[index].ready <= now) {
      serve(index, now);
    } else {
      waiting_[kept++] = index;
    }
  }
  waiting_.resize(kept);
}

Tick MemoryBlock::next_event(Tick /*now*/) const {
  Tick next = kNever;
  for (const auto& s : schedulers_) next = std::min(next, s->next_completion());
  for (const std::uint32_t index : waiting_) next = std::min(next, entries_[index].ready);
  return next;
}

void MemoryBlock::done(std::uint32_t tag) { respond(tag & 0xffffffu); }

void MemoryBlock::respond(std::uint32_t index) {
  if (entries_[index].gp == nullptr) {  // a charge
    charges_done_.push_back(static_cast<std::uint32_t>(entries_[index].socket));
    free_.push_back(index);
    return;
  }
  tlm::tlm_generic_payload& gp = *entries_[index].gp;
  const int socket_id = entries_[index].socket;
  free_.push_back(index);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  if (socket_id == kLocalSocket) {
    local_bw_->nb_transport_bw(gp, phase, delay);
  } else {
    socket[static_cast<unsigned>(socket_id)]->nb_transport_bw(gp, phase, delay);
  }
}

}  // namespace tpusim::models
