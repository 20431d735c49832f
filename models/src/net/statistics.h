#pragma once
// Statistics of the network: per collective instruction (executions, first start, last end, longest run on
// one chip), gathered while the run goes; per link and DCN NIC (bytes, busy, queueing, chunks) from the
// transport's link model at the end. write() turns them into SimResult::network (links, dcn,
// collectives, link_model, ici_transfers, in_step_faults).
#include <cstdint>
#include <vector>

#include "../ticks.h"
#include "tpusim/models/sim_result.h"

namespace tpusim::models::net {

class Transport;
class CollectiveEngine;

class NetStatistics {
 public:
  using Entry = std::uint32_t;

  // Registers collective instruction `instr` of `program`, run under plan `plan`; entries are reported in the
  // order they are added.
  [[nodiscard]] Entry add_collective(std::size_t program, std::uint32_t instr, std::uint32_t plan);
  // One chip ran the collective of `entry` from `start` to `end` with plan `plan` (with timed faults, the one
  // chosen when its first chip started it, CollectiveEngine::plan_now: reported instead of the one planned at
  // elaboration).
  void collective_completed(Entry entry, Tick start, Tick end, std::uint32_t plan);

  // Fills `n`: links, DCN NICs, collectives, the link model name, the transfer count and the timed faults; `end`
  // is the step's end.
  void write(NetworkUsage& n, Tick end, const Transport& transport, const CollectiveEngine& engine) const;

 private:
  struct Collective {
    std::uint32_t program = 0, instr = 0, plan = 0;
    std::uint32_t planned = 0;  // the plan made at elaboration (`plan`: the one run)
    std::uint64_t executions = 0;
    Tick first_start = kNever, last_end = 0, longest = 0;
  };
  std::vector<Collective> collectives_;
};

}  // namespace tpusim::models::net
