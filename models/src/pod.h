#pragma once
// The pod: the composition root of a simulation. It builds one ProgramIndex per program in use, the MXU
// dataflow model, and one Chip per chip of scenario.pod (each elaborating its blocks from the chip's
// composition with `registry`), wires them to the run's RunControl, and turns the chips' counters into a
// SimResult at the end. When a program in use has an ICI instruction it also builds the
// topology (topology/) and the Interconnect (net/), plans the collectives, and attaches every chip's ICI queue
// to it; otherwise the chips are independent and no topology is needed. With `mirroring` (mirror/mirroring.h)
// only each translation class's representative is a Chip; a mirror's statistics are its representative's.
#include <memory>
#include <vector>

#include <systemc>

#include "block/registry.h"
#include "chip/chip.h"
#include "mirror/mirroring.h"
#include "net/interconnect.h"
#include "program_index.h"
#include "run_control.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

class Pod : public sc_core::sc_module {
 public:
  // `registry` (normally filled by register_chip_blocks) must outlive the elaboration.
  Pod(const sc_core::sc_module_name& name, const Scenario& scenario, const ir::ProgramSet& programs,
      RunControl& control, const net::InterconnectOptions& network, const BlockRegistry& registry,
      const std::vector<ChipDegradation>& degraded_chips = {}, Mirroring* mirroring = nullptr);

  // The interconnect, or nullptr when no program uses ICI.
  [[nodiscard]] net::Interconnect* interconnect() { return interconnect_.get(); }

  // Statistics of the finished run (wall time and kernel counters are the caller's).
  // `end`: the step is at least that long (a run stopped at a chip fault's detection, its chips unfinished).
  [[nodiscard]] SimResult collect(Tick end = 0) const;
  // The simulated chips that did not finish and where the first of them stands (Chip::stuck); "" when none.
  [[nodiscard]] std::string stuck() const;

 private:
  const Scenario& scenario_;
  const ir::ProgramSet& programs_;
  ChipSpec chip_;  // scenario.chip with its composition, shared by every chip
  std::unique_ptr<const MxuDataflowModel> dataflow_;
  std::vector<std::unique_ptr<ProgramIndex>> indexes_;
  // Degraded chips (stragglers, slow HBM): their own spec and program index each.
  std::vector<std::unique_ptr<ChipSpec>> degraded_specs_;
  std::vector<std::unique_ptr<ProgramIndex>> degraded_indexes_;  // by program; built for programs some chip runs
  std::vector<std::unique_ptr<Chip>> chips_;  // [chip]; null for a mirrored chip
  Mirroring* mirroring_ = nullptr;
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<net::Interconnect> interconnect_;
};

}  // namespace tpusim::models
