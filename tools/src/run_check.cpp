#include "tools/src/run_check.h"

#include <fmt/format.h>

#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/kernels/sharding.h"
#include "tpusim/models/job_steps.h"

namespace tpusim::tools {

kernels::LoweredWorkload programs_for(const Scenario& s) {
  if (s.workload.program.empty()) return kernels::lower(s.workload, s.chip, s.pod);
  kernels::LoweredWorkload lowered;
  ir::ProgramSet& set = lowered.programs;
  set = ir::read_program_json(s.workload.program);
  const auto chips = static_cast<std::size_t>(s.pod.chip_count());
  if (!set.role_of_chip.empty() && set.role_of_chip.size() != chips) {
    Diagnostics diags;
    diags.error(SourceLoc{s.workload.program, 0, 0}, "workload.program",
                "the program file assigns roles to a different number of chips than the pod has",
                fmt::format("{} roles (pod {})", chips, s.pod.name), fmt::format("{} roles", set.role_of_chip.size()));
    throw ConfigError(diags.items());
  }
  return lowered;
}

CheckedRun check_run(const Scenario& s, const Limits& limits) {
  kernels::check_sharding(s.workload, s.pod);
  guard_topology(s.pod, limits);
  Topology topology = check_topology(s);
  check_fault_cuts(s, topology);
  Scenario step = models::job_step_scenario(s);
  guard_lowering(step, limits);
  kernels::LoweredWorkload lowered = programs_for(step);
  check_programs(step, lowered.programs, topology);
  guard_simulation(step, lowered.programs, limits);
  guard_fault_rates(s, topology, s.job.duration, limits);  // a job given in steps: by `run`, once its step is known
  return CheckedRun{std::move(topology), std::move(step), std::move(lowered)};
}

}  // namespace tpusim::tools
