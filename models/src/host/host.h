#pragma once
// The host block (host.cpp): the host CPU's work for the chip and its PCIe link to host memory.

namespace tpusim::models {

// Assumption: the host serves one host instruction (launch, infeed, checkpoint, sync) of a chip at a time, in
// program order; prefetching is expressed by the lowering (the next step's infeed runs beside the step).
inline constexpr int kHostTransfersInFlight = 1;

}  // namespace tpusim::models
