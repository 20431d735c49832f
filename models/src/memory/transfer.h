#pragma once
// The protocol between engines (the DMA queues, the host's own work, the SparseCore) and memories (VMEM,
// CMEM, HBM, host memory over PCIe): TLM-2.0 base protocol, non-blocking transport, generic payload.
//
//   engine                                  memory
//   nb_transport_fw(gp, BEGIN_REQ)  ---->   waits out its access latency, then serves gp's bytes on its
//                                   <----   bandwidth scheduler; TLM_ACCEPTED (TLM_COMPLETED: nothing to
//                                           move and no latency, done at once)
//   ... once the bytes are served ...
//                                   <----   nb_transport_bw(gp, BEGIN_RESP) (which also ends the request)
//   TLM_COMPLETED                   ---->
//
// The non-blocking form fits a memory whose bandwidth is shared: when a request arrives its completion time is
// not known (later arrivals slow it down). Every call happens inside the chip's activation (block/block.h),
// at its tick (ChipContext::now), with a zero delay. The model is timing-only: the data pointer is null; the command is
// TLM_WRITE_COMMAND when the transfer writes the target memory from another memory, TLM_READ_COMMAND
// otherwise; the data length is the payload (capped at 4 GiB - 1; the extension has the whole count).
#include <cstdint>

#include <tlm>

#include "tpusim/core/units.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// What a memory's flow model needs beyond the generic payload.
struct Transfer : tlm::tlm_extension<Transfer> {
  ir::Memory src = ir::Memory::hbm;  // the instruction's two memories
  ir::Memory dst = ir::Memory::vmem;
  std::uint64_t bytes = 0;   // payload (statistics, HBM striping)
  double volume = 0;         // bytes of the memory's time it needs: bytes / the access pattern's efficiency
  std::uint8_t engine = 0;   // the issuing queue: the shared scheduler splits bandwidth between engines
  std::uint64_t order = 0;   // issue order within the engine (its transfers are served in this order)

  [[nodiscard]] tlm::tlm_extension_base* clone() const override { return new Transfer(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const Transfer&>(other); }
};

// Engine ids: the DMA descriptor queues take 0, 1, ... (one per TensorCore); these follow.
inline constexpr std::uint8_t kHostEngine = 255;
inline constexpr std::uint8_t kSparseCoreEngine = 254;
// The HBM traffic of the collective in ICI slot s (ici/chip_port.h) is engine kFirstIciEngine + s: below the
// fused streams' (memory/fused_stream.h), above the DMA queues' (a chip has far fewer TensorCores).
inline constexpr std::uint8_t kFirstIciEngine = 120;

// Fills `gp` for a transfer sent to memory `target` (its command, length and a fresh response status).
void prepare_transfer(tlm::tlm_generic_payload& gp, const Transfer& t, ir::Memory target);

// What an engine binds to for a path "engine -> memory": any module with a TLM target socket that answers the
// protocol above, and says which memory of the IR it is and its nominal bandwidth (an engine sends a
// transfer between two memories to the slower one, and has the faster one count it). MemoryBlock is the usual
// implementation; another memory model implements this and registers for the kind (the engines do not change).
class MemoryTarget {
 public:
  using TargetSocket =
      tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;
  virtual ~MemoryTarget() = default;
  [[nodiscard]] virtual ir::Memory memory() const = 0;
  [[nodiscard]] virtual BytesPerSecond nominal_bandwidth() const = 0;
  // The TensorCore a per-TensorCore memory (VMEM) belongs to; 0 for the others.
  [[nodiscard]] virtual int memory_instance() const = 0;
  [[nodiscard]] virtual TargetSocket& target_socket() = 0;
  // Counts `t`, a transfer that reads or writes this memory, in the memory's traffic statistics (HBM read and
  // written bytes, PCIe bytes). A memory counts every transfer sent to it; an engine calls this for a transfer
  // it sent to the other, slower end (which times it): its bytes count here too, and this memory serves
  // nothing for it (assumption: the faster end keeps up; dma/dma.cpp).
  virtual void count_transfer(const Transfer& t) = 0;
};

}  // namespace tpusim::models
