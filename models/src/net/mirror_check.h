#pragma once
// What the interconnect asks of mirrored chips (mirror/mirroring.h, which implements it): which chips are
// mirrors of which representative, the VPU port every chip's reductions reserve through, who made an HBM
// charge, and the checks that what the network does to a mirror is what it does to its representative. The
// interface lives with the network so that the network does not include the mirroring, which sits above it
// (models/README.md, "Layers").
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../ticks.h"
#include "ici/chip_port.h"

namespace tpusim::models::net {

class MirrorCheck {
 public:
  // A member of a class that made an HBM charge, with the ICI slot it made it from.
  struct Charger {
    std::uint32_t chip;
    std::uint32_t slot;
  };

  virtual ~MirrorCheck() = default;
  // Chips of the pod, mirrored or not.
  [[nodiscard]] virtual std::uint32_t chip_count() const = 0;
  [[nodiscard]] virtual bool mirrored(std::uint32_t chip) const = 0;
  // A mirror that diverged from its representative (the run is failing): the network starts nothing more on it.
  [[nodiscard]] virtual bool frozen(std::uint32_t chip) const = 0;
  // The mirrors of representative `rep` (empty for a chip that is not one).
  [[nodiscard]] virtual const std::vector<std::uint32_t>& mirrors(std::uint32_t rep) const = 0;
  // The VPU port the interconnect reserves chip `chip`'s reductions through (representatives and mirrors).
  [[nodiscard]] virtual ChipPort& vpu(std::uint32_t chip) = 0;
  // The members that made the HBM charge `token` of representative `rep`'s class, once the representative's
  // HBM has moved it (called once per charge).
  [[nodiscard]] virtual std::vector<Charger> charge_done(std::uint32_t rep, std::uint32_t token) = 0;
  // The network acts at `now` (called first at each of its entry points): what reached the class members at
  // an earlier tick is compared once that tick is over.
  virtual void advance(Tick now) = 0;
  // Instruction `instr` of `chip`, started at `started`, completed at `now` (from outside the chip's own start).
  virtual void completed(std::uint32_t chip, std::uint32_t instr, Tick started, Tick now) = 0;
  // The network acts on `chip` at `now` from outside the chip's own activation (a completion, a reservation).
  virtual void input(std::uint32_t chip, Tick now) = 0;
  // Mirror `mirror` took (`taken`) the completion its representative took: instruction, start and finish ticks.
  virtual void check_take(std::uint32_t mirror, bool taken, std::uint32_t instr, Tick started, Tick done,
                          std::uint32_t rep_instr, Tick rep_started, Tick rep_done) = 0;
  // A mirror's ICI unit is full when its representative starts `instr` at `now` (the mirror is not started).
  virtual void unit_full(std::uint32_t mirror, std::uint32_t instr, Tick now) = 0;
  // Every mirror took and reserved what its representative did; called after the run (`busy`: a chip's ICI
  // unit still holds an instruction).
  virtual void check_end(const std::function<bool(std::uint32_t)>& busy) = 0;
  // Reports that `chip` received something its representative did not, in a way no finer classes can follow;
  // the first report fails the run.
  virtual void mismatch(std::uint32_t chip, const std::string& what) = 0;

 protected:
  MirrorCheck() = default;
  MirrorCheck(const MirrorCheck&) = default;
  MirrorCheck& operator=(const MirrorCheck&) = default;
};

}  // namespace tpusim::models::net
