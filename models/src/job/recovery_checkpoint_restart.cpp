// job.recovery: checkpoint_restart. The failed part is repaired (job.repair), the job relaunched on the same
// slice (job.restart), the last checkpoint read back (state / storage bandwidth), and the steps since it run
// again.
#include "recovery_policy.h"

namespace tpusim::models::job {
namespace {

class CheckpointRestartPolicy final : public RecoveryPolicy {
 public:
  Recovery recover(const RecoveryContext& ctx, const ConcreteFault&) override {
    return restart_after_repair(ctx, "checkpoint_restart");
  }
};

}  // namespace

std::unique_ptr<RecoveryPolicy> make_checkpoint_restart_policy() {
  return std::make_unique<CheckpointRestartPolicy>();
}

}  // namespace tpusim::models::job
