#pragma once
// A recovery policy: what the job does once a fault that stops a component is detected (job.recovery, one
// file per policy, registered in recovery_registry.cpp). Contract: recover() is called once per such fault, in
// time order, and returns what the recovery costs and how the job goes on; a policy may keep state across
// calls (spare cubes left, the OCS port maps). It never sees YAML and never throws for a fault it cannot
// handle: it says so in `how` and falls back to a restart after repair.
#include <memory>
#include <string>

#include "tpusim/models/job.h"

namespace tpusim::models::job {

struct RecoveryContext {
  const Scenario& scenario;
  const Topology& topo;
  const JobCosts& costs;
};

struct Recovery {
  std::string how;              // shown in the timeline
  bool ends_job = false;        // the job stops at detection
  bool rollback = true;         // resume from the last checkpoint: the work since is lost
  bool lasting = false;         // the fault stays (rerouted around): later steps run with it
  bool swapped = false;         // the fault's cube was switched out for a spare at the detection (spare_cube)
  RecoveryStages stages;
};

class RecoveryPolicy {
 public:
  virtual ~RecoveryPolicy() = default;
  [[nodiscard]] virtual Recovery recover(const RecoveryContext& ctx, const ConcreteFault& fault) = 0;
  [[nodiscard]] virtual int spare_cubes_left() const { return 0; }
  [[nodiscard]] virtual std::uint64_t ocs_remaps() const { return 0; }
};

// Restart on the same slice after repair, from the last checkpoint (the fallback of the other policies).
[[nodiscard]] Recovery restart_after_repair(const RecoveryContext& ctx, std::string how);

[[nodiscard]] std::unique_ptr<RecoveryPolicy> make_fail_policy();
[[nodiscard]] std::unique_ptr<RecoveryPolicy> make_checkpoint_restart_policy();
[[nodiscard]] std::unique_ptr<RecoveryPolicy> make_reroute_policy();
[[nodiscard]] std::unique_ptr<RecoveryPolicy> make_spare_cube_policy(const Scenario& s, const Topology& topo);

// The policy job.recovery names.
[[nodiscard]] std::unique_ptr<RecoveryPolicy> make_recovery_policy(const Scenario& s, const Topology& topo);

}  // namespace tpusim::models::job
