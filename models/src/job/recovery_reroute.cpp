// job.recovery: reroute. A failed link or OCS port is routed around in place: the routes are recomputed on
// the surviving graph and the collectives re-planned (fidelity.routing fault_aware), the transfers in flight
// on it are lost until the detection or retransmitted at once (job.in_flight; the step in flight simulated
// with the fault at its tick, JobCosts::step_hit), and the job goes on without losing the work since the
// checkpoint (only what the step in flight did before the fault); later steps run at the step time simulated
// with the link failed (JobCosts::step_with). A failed chip or host cannot be routed around (its shard of the
// work is gone): the job restarts after repair; so does a cable that cuts chips off (the timeline asks again
// for them as a failed chip).
#include "recovery_policy.h"

namespace tpusim::models::job {
namespace {

class ReroutePolicy final : public RecoveryPolicy {
 public:
  Recovery recover(const RecoveryContext& ctx, const ConcreteFault& fault) override {
    if (fault_stops_cable(fault.spec.kind)) {
      Recovery r;
      r.how = "reroute";
      r.rollback = false;
      r.lasting = true;
      return r;
    }
    return restart_after_repair(ctx, "checkpoint_restart (a failed chip or host cannot be routed around)");
  }
};

}  // namespace

std::unique_ptr<RecoveryPolicy> make_reroute_policy() { return std::make_unique<ReroutePolicy>(); }

}  // namespace tpusim::models::job
