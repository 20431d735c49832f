// job.recovery: spare_cube (pods with optical switches: v4, v5p). The cube holding the failed chip, host or
// port is switched out: on every OCS the circuits of its two face ports are remapped to a spare cube's ports
// (the OcsFabric really remaps them; all OCS reconfigure in parallel, so the swap takes one
// pod.ocs_reconfiguration), the job relaunches on the new slice (job.restart) and reads back the last
// checkpoint. The new slice has the same shape, links and circuits between neighbouring cubes, so its step is
// the healthy step. With no spare left the job restarts after repair.
#include "../net/ocs.h"
#include "recovery_policy.h"

namespace tpusim::models::job {
namespace {

class SpareCubePolicy final : public RecoveryPolicy {
 public:
  SpareCubePolicy(const Scenario& s, const Topology& topo)
      : spares_(s.job.spare_cubes), fabric_(topo, s.pod.ocs_reconfiguration, s.job.spare_cubes) {}

  Recovery recover(const RecoveryContext& ctx, const ConcreteFault& fault) override {
    if (fault.cube < 0 || fabric_.ports() == 0) {
      return restart_after_repair(ctx, "checkpoint_restart (the pod has no optical switches)");
    }
    if (used_ >= spares_) return restart_after_repair(ctx, "checkpoint_restart (no spare cube left)");
    const Tick up = swap(ctx.topo, fault, used_);
    ++used_;
    Recovery r;
    r.how = "spare_cube";
    r.swapped = true;
    r.stages.reconfiguration = Seconds(static_cast<double>(up) / kTicksPerSecond);
    r.stages.restart = ctx.scenario.job.restart;
    r.stages.restore = ctx.costs.checkpoint_restore;
    return r;
  }
  int spare_cubes_left() const override { return spares_ - used_; }
  std::uint64_t ocs_remaps() const override { return fabric_.remaps(); }

 private:
  Tick swap(const Topology& topo, const ConcreteFault& fault, int s) {
    return fabric_.swap_in_spare(topo.coord(fault.chip).pod, fault.cube, s, 0);
  }

  int spares_;
  int used_ = 0;
  net::OcsFabric fabric_;
};

}  // namespace

std::unique_ptr<RecoveryPolicy> make_spare_cube_policy(const Scenario& s, const Topology& topo) {
  return std::make_unique<SpareCubePolicy>(s, topo);
}

}  // namespace tpusim::models::job
