#pragma once
// The pod: the composition root of a simulation. It builds one ProgramIndex per program in use, the MXU
// dataflow model, and one Chip per chip of scenario.pod, wires them to the run's RunControl, and turns the
// chips' counters into a SimResult at the end. Chips are independent until the interconnect is modelled.
#include <memory>
#include <vector>

#include <systemc>

#include "chip.h"
#include "program_index.h"
#include "run_control.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

class Pod : public sc_core::sc_module {
 public:
  Pod(const sc_core::sc_module_name& name, const Scenario& scenario, const ir::ProgramSet& programs,
      RunControl& control);

  // Statistics of the finished run (wall time and kernel counters are the caller's).
  [[nodiscard]] SimResult collect() const;

 private:
  const Scenario& scenario_;
  const ir::ProgramSet& programs_;
  std::unique_ptr<const MxuDataflowModel> dataflow_;
  std::vector<std::unique_ptr<ProgramIndex>> indexes_;  // by program; built for programs some chip runs
  std::vector<std::unique_ptr<Chip>> chips_;
};

}  // namespace tpusim::models
