#pragma once
// InStepCuts: the timed faults of one step as the transport applies them (SimOptions::timed_links and
// timed_chips): the cables and chips failing, in tick order, the chips stopped so far, the lost transfers
// waiting for their fault's detection to be sent again, and what each fault did (InStepFault). The transport
// (transport.h) owns the transfers and the links; this keeps the fault side's state and counts.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "../ticks.h"
#include "link_model.h"
#include "tpusim/models/sim_options.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

class InStepCuts {
 public:
  struct Cut {  // a timed fault, in ticks
    LinkId link;
    Tick at = 0, detected = 0;
    std::int64_t chip = -1;  // a chip stopping (all its cables), else -1
  };

  InStepCuts(const Topology& topo, const std::vector<TimedLinkFault>& timed, InFlightPolicy in_flight,
             const std::vector<TimedChipFault>& timed_chips);

  [[nodiscard]] bool empty() const { return timed_.empty(); }
  [[nodiscard]] InFlightPolicy in_flight() const { return in_flight_; }
  // The tick of the next fault or resend, kNever when none is left.
  [[nodiscard]] Tick next_action() const;
  // The next fault falls at `at`.
  [[nodiscard]] bool fault_due(Tick at) const { return applied_ < timed_.size() && timed_[applied_].at == at; }
  // Takes the next fault (fault_due): marks its chip stopped, or counts its cable; returns its index.
  std::size_t apply_next();
  [[nodiscard]] const Cut& cut(std::size_t k) const { return timed_[k]; }
  // The next resend falls at `at`: takes it.
  [[nodiscard]] std::optional<TransferId> take_resend(Tick at);
  // Cut transfer `id` of fault k is lost: it is sent again at the fault's detection.
  void resend_at_detection(std::size_t k, TransferId id);
  // Cut transfer `id` of fault k is being sent again; its delivery sets the fault's resent_done.
  void resending(std::size_t k, TransferId id) { resent_.emplace_back(id, k); }

  [[nodiscard]] bool any_dead() const { return !dead_.empty(); }
  [[nodiscard]] bool dead(std::uint32_t chip) const { return !dead_.empty() && dead_[chip]; }
  // A transfer from `src` to `dst`, one of them stopped, is dropped with `bytes` never delivered; counted
  // on the stopped chip's fault.
  void drop(std::uint32_t src, std::uint32_t dst, std::uint64_t bytes);
  // Notes the delivery, by `now`, of the resent transfers among delivered[from ..).
  void note_resent(const std::vector<TransferId>& delivered, std::size_t from, Tick now);

  [[nodiscard]] InStepFault& stats(std::size_t k) { return stats_[k]; }
  [[nodiscard]] const std::vector<InStepFault>& stats() const { return stats_; }
  // Cables of the timed faults the routes go around so far (not chips): under retransmit from each fault's
  // tick, under lose from its detection (ICI routes are static until the runtime learns of the failure).
  [[nodiscard]] std::uint32_t cables_failed() const { return cables_failed_; }

  // Under lose: fault k cut `channels` (both directions of its cables), which the routes still use until its
  // detection; a transfer started over one of them in the meantime is lost (unseen_on), as the ones in flight.
  void cut_unseen(std::size_t k, const std::vector<std::uint32_t>& channels);
  // The fault whose unseen cut the path crosses, or none.
  [[nodiscard]] std::optional<std::size_t> unseen_on(const std::uint32_t* path, std::uint32_t hops) const;
  // Under lose: the next applied fault is detected at `at`. Takes it (its cut is seen: the routes go around it
  // from now) and returns its index.
  [[nodiscard]] bool detection_due(Tick at) const;
  std::size_t detect_next();

 private:
  struct Resend {  // a lost transfer sent again in full at `at`
    Tick at = 0;
    TransferId id = 0;
  };

  std::vector<Cut> timed_;               // by tick
  std::uint32_t applied_ = 0;            // timed_[0 .. applied_) have failed
  std::uint32_t detected_ = 0;           // lose: timed_[0 .. detected_) are known to the routes
  std::vector<std::pair<std::uint32_t, std::size_t>> unseen_;  // lose: (channel, fault) cut, not yet detected
  std::uint32_t cables_failed_ = 0;      // of which cable faults (not chips)
  std::vector<bool> dead_;               // [chip]: stopped (timed chip faults), empty without any
  std::vector<std::size_t> dead_fault_;  // [chip]: its timed_ entry, for the dropped counts
  InFlightPolicy in_flight_ = InFlightPolicy::retransmit;
  std::vector<Resend> resends_;     // lost transfers waiting for their detection, by tick
  std::vector<InStepFault> stats_;  // [timed fault]
  // Cut transfers sent again and not yet delivered: (transfer, timed fault), for InStepFault::resent_done.
  std::vector<std::pair<TransferId, std::size_t>> resent_;
};

}  // namespace tpusim::models::net
