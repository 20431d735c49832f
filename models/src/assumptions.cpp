#include "tpusim/models/assumptions.h"

#include <fmt/format.h>

#include "chip.h"
#include "net/interconnect.h"
#include "tensor_core.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

std::vector<Assumption> model_assumptions() {
  return {
      {"MXU weight load", "1 row per cycle (R cycles per R x C weight tile)", "models/src/mxu_weight_stationary.cpp",
       "the weight-load path of the MXU is not published; it bounds skinny GEMMs (e.g. v2's two MXUs load "
       "weights at about half its HBM rate)"},
      {"MXU accumulator width", fmt::format("{} B per partial sum", kMxuAccumulatorBytes),
       "models/include/tpusim/models/timing.h", "f32 (int32 for int8) accumulation, as XLA does on TPU"},
      {"matmuls in flight per TensorCore", fmt::format("{}", kMxuInstructionsInFlight), "models/src/tensor_core.h",
       "sequencer instruction buffer depth, not published; enough to stream back-to-back matmuls"},
      {"HBM stripe", format_bytes(Bytes(kHbmStripe)), "models/include/tpusim/models/timing.h",
       "address-interleaving granule across HBM channels (HBM2 32 B bursts x 8), not published for TPU"},
      {"PCIe DMA latency", format_time(kPcieLatency), "models/include/tpusim/models/timing.h",
       "typical PCIe Gen3 host DMA round trip, not published for TPU hosts"},
      {"on-chip copy latency", format_time(kOnChipCopyLatency), "models/include/tpusim/models/timing.h",
       "VMEM/CMEM copies cost tens of cycles, below what matters next to HBM latency"},
      {"host instructions in flight per chip", fmt::format("{}", kHostTransfersInFlight), "models/src/chip.h",
       "the host serves a chip's host work in program order; prefetch is expressed by the lowering"},
      {"ICI operations in flight per chip", fmt::format("{}", net::kIciOperationsInFlight), "models/src/net/ici_unit.h",
       "collectives, sends and recvs a chip's ICI unit runs at once, started in order; not published, enough for "
       "a layer's overlapped all-gather, reduce-scatter, pipeline transfers and gradient buckets"},
      {"DCN latency", format_time(net::kDcnLatency), "models/src/net/transport.h",
       "one way between hosts of different pods (NIC, a few switch hops, host stack); not published"},
  };
}

}  // namespace tpusim::models
