// The recovery policies, registered explicitly (no static initialisation), one line each.
#include "recovery_policy.h"

namespace tpusim::models::job {

std::unique_ptr<RecoveryPolicy> make_recovery_policy(const Scenario& s, const Topology& topo) {
  switch (s.job.recovery) {
    case RecoveryPolicyKind::fail: return make_fail_policy();
    case RecoveryPolicyKind::checkpoint_restart: return make_checkpoint_restart_policy();
    case RecoveryPolicyKind::reroute: return make_reroute_policy();
    case RecoveryPolicyKind::spare_cube: return make_spare_cube_policy(s, topo);
  }
  return make_checkpoint_restart_policy();
}

Recovery restart_after_repair(const RecoveryContext& ctx, std::string how) {
  Recovery r;
  r.how = std::move(how);
  r.stages.repair = ctx.scenario.job.repair;
  r.stages.restart = ctx.scenario.job.restart;
  r.stages.restore = ctx.costs.checkpoint_restore;
  return r;
}

}  // namespace tpusim::models::job
