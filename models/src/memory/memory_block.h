#pragma once
// A memory as a TLM-2.0 target (VMEM, CMEM, HBM, host memory over PCIe; protocol in transfer.h). Any number of
// engines bind to its socket. A request first waits out the memory's access latency, then its bytes are
// served by one of the memory's bandwidth schedulers (scheduler.h); the response goes back on the backward
// path of the socket it came in on. The memory kinds differ only in how they take a transfer (admit()):
// which scheduler, which latency, how many bytes of their time, at most which share of the rate.
#include <cstdint>
#include <memory>
#include <vector>

#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "block/block.h"
#include "memory/scheduler.h"
#include "memory/transfer.h"

namespace tpusim::models {

class MemoryBlock : public Block, public MemoryTarget, private TagSink {
 public:
  using Socket = tlm_utils::multi_passthrough_target_socket<MemoryBlock, 32, tlm::tlm_base_protocol_types, 0,
                                                              sc_core::SC_ZERO_OR_MORE_BOUND>;
  Socket socket;  // every engine that reaches this memory binds here

  // `memory` is the IR's name for it; `nominal` its peak bandwidth (an engine sends a transfer between two
  // memories to the slower one, see dma/dma.cpp).
  MemoryBlock(const sc_core::sc_module_name& name, const ChipContext& chip, BlockKind kind, const std::string& block,
              int instance, ir::Memory memory, BytesPerSecond nominal);

  [[nodiscard]] ir::Memory memory() const override { return memory_; }
  [[nodiscard]] BytesPerSecond nominal_bandwidth() const override { return nominal_; }
  [[nodiscard]] int memory_instance() const override { return instance(); }
  [[nodiscard]] TargetSocket& target_socket() override { return socket; }
  // Called for every transfer this memory serves (before admit()) and for those an engine sent to the other,
  // slower end; a memory that reports traffic counts its bytes here. VMEM and CMEM report none.
  void count_transfer(const Transfer& /*t*/) override {}

  // The forward path for requests from the block's own module (the host's own work), answered through `bw`.
  [[nodiscard]] tlm::tlm_fw_transport_if<>& local_port(tlm::tlm_bw_transport_if<>& bw);

  void advance(Tick now) override;
  [[nodiscard]] Tick next_event(Tick now) const override;

  // Bytes moved for something that is not one of the chip's engines (a collective's DMAs over ICI,
  // ici/chip_port.h): `read` bytes out and `written` bytes in from `now` (the memory advanced to `now`, inside
  // the chip's activation), on scheduler 0 as a transfer of engine `engine` with issue order `order`, at most
  // `cap` of the rate; a transfer that reads and writes pays the turnaround by itself, as a copy does. Once
  // moved, `token` is listed in charges_done() (the caller empties it).
  void charge(Tick now, std::uint8_t engine, std::uint64_t order, std::uint64_t read, std::uint64_t written,
              double cap, std::uint32_t token);
  [[nodiscard]] std::vector<std::uint32_t>& charges_done() { return charges_done_; }
  [[nodiscard]] std::uint64_t charged_read() const { return charged_read_; }
  [[nodiscard]] std::uint64_t charged_written() const { return charged_written_; }

 protected:
  struct Admission {
    std::size_t scheduler = 0;  // index from add_scheduler()
    Tick latency = 0;           // before the bytes are served
    double volume = 0;          // bytes of the memory's time
    double cap = 1.0;           // at most this share of the scheduler's rate
    FlowDirection direction = FlowDirection::read;
  };
  // How this memory takes one transfer. Called once per request, when it arrives.
  virtual Admission admit(const tlm::tlm_generic_payload& gp, const Transfer& t) = 0;
  // The plain admission: the transfer's whole volume on scheduler 0 after `latency`, uncapped, reading or
  // writing as its command says.
  [[nodiscard]] static Admission plain(const tlm::tlm_generic_payload& gp, const Transfer& t, Tick latency);

  std::size_t add_scheduler(MemoryScheduler kind, double bytes_per_second, double turnaround = 0.0);
  [[nodiscard]] const BandwidthScheduler& scheduler(std::size_t i) const { return *schedulers_[i]; }

 private:
  static constexpr int kLocalSocket = -1;
  struct Entry {
    tlm::tlm_generic_payload* gp = nullptr;  // null: a charge (charge()), whose token is `socket`
    int socket = 0;
    Tick ready = 0;
    Admission admission;
    std::uint8_t engine = 0;
    std::uint64_t order = 0;
  };
  class LocalPort final : public tlm::tlm_fw_transport_if<> {
   public:
    explicit LocalPort(MemoryBlock& memory) : memory_(memory) {}
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override {
      return memory_.nb_transport_fw(kLocalSocket, gp, phase, delay);
    }
    void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }

   private:
    MemoryBlock& memory_;
  };

  // A free slot of entries_ (reused, or a new one).
  std::uint32_t take_entry();
  tlm::tlm_sync_enum nb_transport_fw(int socket_id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void serve(std::uint32_t entry, Tick now);  // latency over: onto the scheduler, or done if nothing to move
  void done(std::uint32_t tag) override;
  void respond(std::uint32_t entry);

  const ChipContext& chip_;  // its `now`: the tick a request arrives at
  ir::Memory memory_;
  BytesPerSecond nominal_;
  std::vector<std::unique_ptr<BandwidthScheduler>> schedulers_;
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> waiting_;  // entries in their latency, in arrival order
  LocalPort local_{*this};
  tlm::tlm_bw_transport_if<>* local_bw_ = nullptr;
  std::vector<std::uint32_t> charges_done_;
  std::uint64_t charged_read_ = 0;
  std::uint64_t charged_written_ = 0;
};

}  // namespace tpusim::models
