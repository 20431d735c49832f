#pragma once
// The pod's interconnect: the composition root of the network and its one SystemC process. It builds the
// pieces, each with its own contract and file:
//   transport.h          links (chunked or flow), routes and their cache, DCN NICs
//   collective_engine.h  collective plans, their steps and reductions, SPMD matching
//   point_to_point.h     send / recv matching, remote DMA puts
//   statistics.h         per-collective and per-link statistics for SimResult::network
//   ici_unit.h           each chip's ICI unit as the chip sees it (what runs, what completed)
// and dispatches the chips' ICI instructions (collective, send, recv, remote put; a chip reaches it as its
// NetworkPort, ici/network_port.h) to the engines, and the transport's deliveries back to the engine that sent
// them. Derivations and assumptions: README.md.
//
// Timing: ONE SC_METHOD and one sc_event for the whole pod. The link model keeps every chunk and flow in its
// own time-ordered queue and the collective engine its reductions in a small timer heap; the process advances
// both to the current time and re-arms its event at the earliest next time. Chips enter through start() (from
// their own activation; it first brings the network up to that time) and are woken with a delta notification
// when their ICI instruction completes. So the kernel holds at most one pending event for the whole network
// plus one per chip, whatever the traffic. A reduction reserves the chip's VPU (ici/chip_port.h) without waking it;
// a step's HBM traffic is charged to the chip (which wakes to take it) and reported back from its activation.
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "../run_control.h"
#include "../ticks.h"
#include "collective_engine.h"
#include "ici/network_port.h"
#include "ici_unit.h"
#include "mirror_check.h"
#include "point_to_point.h"
#include "statistics.h"
#include "transport.h"
#include "tpusim/models/sim_options.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/topology/routing.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

// What the network is built with besides the scenario.
struct InterconnectOptions {
  CollectivePlanner planner = default_collective_planner();
  // Failed links and chips seen by the `fault_aware` router. Test-only entry until the scenario's `faults`
  // input exists: the faults hold for the whole run. Non-empty with fidelity.routing = dor is rejected
  // (std::invalid_argument), since DOR would send traffic over the failed links.
  FaultSet faults;
  std::vector<LinkDegradation> degraded;  // links slower for the whole run (tpusim/models/sim_options.h)
  std::vector<TimedLinkFault> timed;      // cables failing inside the step (tpusim/models/sim_options.h)
  std::vector<TimedChipFault> timed_chips;  // chips stopping inside the step (their cables fail, their sends drop)
  bool end_at_stop = false;                 // the run ends at the first stop (SimOptions::end_at_stop)
  InFlightPolicy in_flight = InFlightPolicy::retransmit;
};

class Interconnect : public sc_core::sc_module, public NetworkPort {
 public:
  SC_HAS_PROCESS(Interconnect);
  // `programs` and `topo` must outlive the module. Plans every distinct collective instruction of the programs
  // in use once and routes every send the plans make (throws what the planner throws; SimulationError for a
  // DCN step on a pod without DCN bandwidth, a send/recv to the chip itself or along an axis the pod lacks,
  // and a destination the router cannot reach; std::invalid_argument for faults under DOR routing).
  Interconnect(const sc_core::sc_module_name& name, const Topology& topo, const Scenario& scenario,
               const ir::ProgramSet& programs, const InterconnectOptions& options, RunControl& control);

  // Wiring, by the pod: the event that wakes chip `chip` when an ICI instruction completes, and the chip's
  // VPUs and HBM, which its collectives' reductions reserve and their steps' traffic loads.
  void attach_chip(std::uint32_t chip, sc_core::sc_event& wake, ChipPort& port) {
    units_.attach(chip, &wake);
    collectives_.attach_chip(chip, port);
    p2p_.attach_chip(chip, port);
  }
  // Mirrored chips (mirror_check.h, mirror/mirroring.h): a representative's ICI instructions start on its
  // mirrors too, a mirror has no wake, every chip's reductions reserve through `mirroring`, and what reaches a
  // mirror is checked against its representative. Call before attach_chip for the representatives;
  // `mirroring` must outlive the module.
  void mirror(MirrorCheck& mirroring);

  // NetworkPort: the ICI unit of chip `chip` (ici_unit.h), called from the chip's process at `now`. It keeps up
  // to kIciOperationsInFlight instructions in flight, started in queue order, each completing on its own.
  [[nodiscard]] bool busy(std::uint32_t chip) const override { return units_.busy(chip); }
  [[nodiscard]] bool full(std::uint32_t chip) const override { return units_.full(chip); }
  // `instr` is a collective, send, recv or remote put.
  void start(std::uint32_t chip, std::uint32_t instr, Tick now) override;
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started) override {
    if (mirroring_ == nullptr) return units_.take_completed(chip, instr, started);
    return take_mirrored(chip, instr, started);
  }
  // With mirroring, for every member of the chip's class that made the charge.
  void hbm_done(std::uint32_t chip, std::uint32_t token, Tick now) override;
  // Mirroring: every ICI unit is empty (the run has ended; reports to the Mirroring).
  void check_mirrors_end();

  [[nodiscard]] const char* link_model_name() const { return transport_.link_model_name(); }
  [[nodiscard]] const char* router_name() const { return transport_.router_name(); }

  // Fills `n` (links, DCN, collectives, the link model name); `end` is the step's end.
  void collect(NetworkUsage& n, Tick end) const { stats_.write(n, end, transport_, collectives_); }
  // Bytes the remote puts delivered to `chip` wrote into its HBM (PointToPoint::put_written), mirrors included.
  [[nodiscard]] std::uint64_t put_written(std::uint32_t chip) const { return p2p_.put_written(chip); }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffU;
  // What an ICI instruction of a program runs as: a collective plan (and its statistics entry) or a
  // point-to-point target.
  struct Dispatch {
    std::uint32_t plan = kNone;
    NetStatistics::Entry entry = 0;
    TargetId target = kNone;
  };

  void run();
  void start_one(std::uint32_t chip, std::uint32_t instr, Tick now);
  bool take_mirrored(std::uint32_t chip, std::uint32_t& instr, Tick& started);
  // Brings the links, deliveries and reductions up to `now`, including everything they trigger at `now`.
  void sync(Tick now);
  void arm(Tick now);

  const ir::ProgramSet& programs_;
  RunControl& control_;
  Transport transport_;
  IciUnits units_;
  NetStatistics stats_;
  CollectiveEngine collectives_;
  PointToPoint p2p_;
  std::vector<std::vector<Dispatch>> dispatch_;  // [program][instr], for programs with ICI instructions
  std::vector<TransferId> delivered_;
  sc_core::sc_event event_;
  MirrorCheck* mirroring_ = nullptr;
};

}  // namespace tpusim::models::net
