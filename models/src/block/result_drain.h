#pragma once
// The seam between the MXU and the unit that drains its results (the path "mxu -> vpu"), so that neither block
// includes the other. The VPU (vpu/vpu.cpp) implements it: a matmul reserves result_pop_cycles (timing.h) of the
// VPU from its first results on, the pops delay the VPU's vector instructions and count in its busy time, and
// the matmul completes no earlier than its last pop. A collective's reductions reserve the same way
// (Chip::reserve_vpu, ici/chip_port.h).
#include <systemc>

#include "ticks.h"

namespace tpusim::models {

// What the MXU sees of the unit that drains its results (bound through an sc_port by the path mxu -> vpu).
class ResultDrain : public virtual sc_core::sc_interface {
 public:
  // Reserves `duration` ticks of pops for a matmul whose first results are ready at `earliest`; returns when
  // the last pop ends (the matmul cannot complete before).
  virtual Tick reserve_pops(Tick earliest, Tick duration) = 0;
};

}  // namespace tpusim::models
