#include "statistics.h"

#include <algorithm>
#include <limits>

#include "collective_engine.h"
#include "transport.h"

namespace tpusim::models::net {

NetStatistics::Entry NetStatistics::add_collective(std::size_t program, std::uint32_t instr, std::uint32_t plan) {
  Collective c;
  c.program = static_cast<std::uint32_t>(program);
  c.instr = instr;
  c.plan = plan;
  c.planned = plan;
  collectives_.push_back(c);
  return static_cast<Entry>(collectives_.size() - 1);
}

void NetStatistics::collective_completed(Entry entry, Tick start, Tick end, std::uint32_t plan) {
  Collective& c = collectives_[entry];
  c.plan = plan;
  ++c.executions;
  c.first_start = std::min(c.first_start, start);
  c.last_end = std::max(c.last_end, end);
  c.longest = std::max(c.longest, end - start);
}

void NetStatistics::write(NetworkUsage& n, Tick end, const Transport& transport, const CollectiveEngine& engine) const {
  const Topology& topo = transport.topology();
  const std::vector<ChannelStats> stats = transport.channel_stats(end);
  const double step_s = to_seconds(end).value();
  const auto usage = [&](std::size_t c, double bandwidth) {
    const ChannelStats& s = stats[c];
    LinkUsage u;
    u.bytes = Bytes(s.bytes);
    u.busy = to_seconds(s.busy);
    u.queueing = to_seconds(s.queueing);
    u.chunks = s.chunks;
    u.utilization = bandwidth > 0 && step_s > 0 ? static_cast<double>(s.bytes) / (bandwidth * step_s) : 0.0;
    return u;
  };
  n.link_model = transport.link_model_name();
  n.links.reserve(topo.link_count());
  double sum = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (std::size_t l = 0; l < topo.link_count(); ++l) {
    n.links.push_back(usage(l, topo.link(LinkId(static_cast<std::uint32_t>(l))).bandwidth.value()));
    const double u = n.links.back().utilization;
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  if (!n.links.empty()) n.link_utilization = Spread{sum / static_cast<double>(n.links.size()), lo, hi};
  if (topo.pods() > 1) {
    const double bw = topo.dcn_bandwidth_per_host().value();
    for (std::size_t h = 0; h < topo.host_count(); ++h) {
      n.dcn.egress.push_back(usage(transport.dcn_egress(h), bw));
      n.dcn.ingress.push_back(usage(transport.dcn_ingress(h), bw));
    }
    if (transport.has_uplinks()) {
      const double uplink = topo.dcn_uplink_bandwidth().value();
      for (int p = 0; p < topo.pods(); ++p) {
        n.dcn.uplink_egress.push_back(usage(transport.uplink_egress(p), uplink));
        n.dcn.uplink_ingress.push_back(usage(transport.uplink_ingress(p), uplink));
      }
    }
  }
  for (const Collective& st : collectives_) {
    const kernels::CollectivePlan& plan = engine.plan(st.plan);
    CollectiveUsage c;
    c.program = st.program;
    c.instruction = st.instr;
    c.kind = plan.kind;
    c.algorithm = plan.algorithm;
    c.axes_mask = plan.axes_mask;
    c.replanned = st.plan != st.planned;
    c.participants = plan.participants;
    c.steps = plan.steps.size();
    c.bytes_per_chip = Bytes(plan.bytes_per_chip);
    c.executions = st.executions;
    c.ideal_time = plan.ideal_time;
    if (st.executions > 0) {
      c.start = to_seconds(st.first_start);
      c.end = to_seconds(st.last_end);
      c.time = to_seconds(st.longest);
      if (st.longest > 0) c.bus_bandwidth = c.algorithm_bandwidth() * plan.bus_factor;
    }
    n.collectives.push_back(c);
  }
  n.ici_transfers = transport.transfers_started();
  n.in_step_faults = transport.in_step_faults();
}

}  // namespace tpusim::models::net
