// job.recovery: fail. The baseline: the job stops when the fault is detected; work since the last checkpoint
// is lost.
#include "recovery_policy.h"

namespace tpusim::models::job {
namespace {

class FailPolicy final : public RecoveryPolicy {
 public:
  Recovery recover(const RecoveryContext&, const ConcreteFault&) override {
    Recovery r;
    r.how = "failed";
    r.ends_job = true;
    return r;
  }
};

}  // namespace

std::unique_ptr<RecoveryPolicy> make_fail_policy() { return std::make_unique<FailPolicy>(); }

}  // namespace tpusim::models::job
