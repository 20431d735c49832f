#pragma once
// The checks every command makes before it does work, in the order they can fail:
//   check_topology    the pod and chip fit together
//   guard_topology    the pod's chips and links against the memory limit
//   guard_lowering    what lowering the model will emit (or reading the program file) against the limit
//   check_programs    a program that cannot run here is bad input (exit 2, at its file and line): a
//                     collective its algorithm cannot run on these axes, a VMEM free no allocation covers,
//                     a TensorCore the chip lacks, the chips of a group running different collectives over
//                     it (roles that differ), a send and recv that do not pair (bytes, one missing, a peer
//                     outside the slice), a step longer than the simulator can count
//   guard_simulation  chips x programs in memory, and the cycle-level MXU reference's work, against limits
//   guard_fault_rates the random faults a job's fault_rates expect over job.duration, against what a job can
//                     meet and the memory limit
// A refusal (ResourceRefused, exit 2) states the estimate, the limit and the way out; nothing has been
// allocated for the work yet.
#include <stdexcept>
#include <string>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

struct Limits {
  double max_memory = 0;     // bytes
  double max_pe_cycles = 0;  // fidelity.mxu: cycle
  std::string memory_source;  // how max_memory was chosen, for messages

  // Half the machine's physical memory (and of the address-space limit, if one is set), and 3e10 PE-cycles
  // (about 5 minutes of the cycle reference).
  [[nodiscard]] static Limits defaults();
};

inline constexpr double kDefaultMaxPeCycles = 3e10;

// Limits from the command line: `max_memory` a size ("8 GiB"; empty: the default). Throws ConfigError naming
// the flag for a malformed one.
[[nodiscard]] Limits limits_from(const std::string& max_memory, double max_pe_cycles);

// The limit flags the command line gave (`--max-memory 8GiB`, `--max-pe-cycles 1e9`), none for a default: a
// study (sweep, calibration, layout search) passes them on to every run it starts and checks its points with the
// same limits.
[[nodiscard]] std::vector<std::string> limit_flags(const std::string& max_memory, double max_pe_cycles);

// A study's limits: what its pre-run check uses, and the flags its runs get.
struct StudyLimits {
  Limits limits = Limits::defaults();
  std::vector<std::string> flags;
};

// A run refused before it starts because it would exceed a limit; what() has the estimate and the way out.
class ResourceRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void guard_topology(const PodSpec& pod, const Limits& limits);
// Builds the pod's topology to check that the pod and chip fit together (axes against ICI ports, cube
// divisibility, twist rules); a mismatch is bad input (ConfigError at the pod's shape), reported before anything
// runs.
[[nodiscard]] Topology check_topology(const Scenario& scenario);
void guard_lowering(const Scenario& scenario, const Limits& limits);
void check_programs(const Scenario& scenario, const ir::ProgramSet& programs, const Topology& topology);
void guard_simulation(const Scenario& scenario, const ir::ProgramSet& programs, const Limits& limits);
// Under job.recovery: reroute, which keeps failed cables down until a restart: timed link faults that cut a chip
// off from the torus (every cable of it down) are bad input at the fault that cuts the last one (the chip has
// failed, which the plan must say with a chip_down fault), and timed link faults that split a pod into two
// parts are bad input at the fault that splits it, naming the parts and the cables between them. The other
// policies repair each cable at the restart its detection starts.
void check_fault_cuts(const Scenario& scenario, const Topology& topology);
// A job's random fault rates (every kind's components on `topology`, as the job draws them) over `length`
// (job.duration, or for a job given in steps its healthy length once the step is simulated:
// models::healthy_job_length): refused when they expect far more faults than a job meets
// (models::kMaxJobFaults), or when the faults met would hold more memory than the limit.
void guard_fault_rates(const Scenario& scenario, const Topology& topology, Seconds length, const Limits& limits);
// The most faults a job may meet under the memory limit (each is kept and written out), at most
// models::kMaxJobFaults: the job stops with an error past it (models::run_job's `max_faults`).
[[nodiscard]] std::size_t max_job_faults(const Limits& limits);

// The estimated peak memory of a run (topology, programs, simulation), for `validate`'s report.
[[nodiscard]] double estimated_run_bytes(const Scenario& scenario, const ir::ProgramSet& programs);

}  // namespace tpusim::tools
