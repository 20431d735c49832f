#include "tools/src/preflight.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "tools/src/program_capacity.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/units.h"
#include "tpusim/kernels/collective_roles.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/estimate.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/kernels/send_recv_pairs.h"
#include "tpusim/models/errors.h"
#include "tpusim/models/estimate.h"
#include "tpusim/models/failed_cables.h"
#include "tpusim/models/job.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

// Memory of the pod graph itself (chips with coordinates and hosts, directed links): an estimate from the
// sizes of topology.h's records, rounded up.
constexpr double kTopologyBytesPerChip = 128;
constexpr double kTopologyBytesPerLink = 64;
// A program file's JSON tree in memory is about 16 times the file (nlohmann::json nodes and strings): an
// estimate measured on `tpusim lower quickstart` output, rounded up.
constexpr double kJsonBytesPerFileByte = 16;
// A fault the job meets: its timeline entry (models::FaultEvent) and its summary.json entry, 3.1 KB measured
// (the peak resident size of jobs of 5,000 to 630,000 random faults: 3.03 and 3.05 KB per fault), rounded up.
constexpr double kBytesPerJobFault = 4096;

std::string bytes_text(double b) {
  if (b >= 0x1p60) return fmt::format("{:.3g} EiB", b / 0x1p60);
  if (b >= 0x1p50) return fmt::format("{:.3g} PiB", b / 0x1p50);
  if (b >= 0x1p40) return fmt::format("{:.3g} TiB", b / 0x1p40);
  if (b >= 0x1p30) return fmt::format("{:.3g} GiB", b / 0x1p30);
  if (b >= 0x1p20) return fmt::format("{:.3g} MiB", b / 0x1p20);
  if (b >= 0x1p10) return fmt::format("{:.3g} KiB", b / 0x1p10);
  return fmt::format("{:.3g} B", b);  // not "0.000977 KiB" for a limit of 1 B
}

double topology_links(const PodSpec& pod) {
  double axes = 0;
  for (int d : pod.shape) axes += d > 1 ? 1 : 0;
  return 2 * axes * static_cast<double>(pod.chip_count());  // two directed links per cable, a cable per chip and axis
}

double topology_bytes(const PodSpec& pod) {
  return static_cast<double>(pod.chip_count()) * kTopologyBytesPerChip + topology_links(pod) * kTopologyBytesPerLink;
}

double programs_bytes(const ir::ProgramSet& programs) {
  double instructions = 0;
  for (const auto& p : programs.programs) instructions += static_cast<double>(p.size());
  return instructions * kernels::kBytesPerInstruction;
}

void refuse_memory(const std::string& what, double bytes, const Limits& limits, const std::string& way_out) {
  if (bytes <= limits.max_memory) return;
  throw ResourceRefused(fmt::format(
      "refused: {} needs about {} of memory, above the limit of {} ({}). {}, or raise the limit with "
      "--max-memory SIZE; nothing was run",
      what, bytes_text(bytes), bytes_text(limits.max_memory), limits.memory_source, way_out));
}

// The first chip that runs program `p` of the set, or none.
std::optional<std::uint32_t> first_chip_running(const ir::ProgramSet& programs, std::size_t p) {
  if (programs.role_of_chip.empty()) return p == 0 ? std::optional<std::uint32_t>(0) : std::nullopt;
  for (std::size_t c = 0; c < programs.role_of_chip.size(); ++c) {
    if (programs.role_of_chip[c] == p) return static_cast<std::uint32_t>(c);
  }
  return std::nullopt;
}

// Re-anchors a plan error (located "collective plan") where the user wrote what it is about.
Diagnostic relocate_plan_error(const Scenario& s, Diagnostic d, std::size_t p, std::size_t i, bool named_group) {
  const std::string model_prefix = "workload.model.", chip_prefix = "chip.";
  if (d.key_path.rfind(chip_prefix, 0) == 0) {
    const auto it = s.chip.origins.find(d.key_path.substr(chip_prefix.size()));
    if (it != s.chip.origins.end() && !it->second.defaulted) {
      d.loc = it->second.loc;
    } else if (const auto chosen = s.pod.origins.find("chip"); chosen != s.pod.origins.end()) {
      // A field nobody wrote has no line of its own: name where the chip was chosen, and how to set it.
      d.loc = chosen->second.loc;
      d.hint += fmt::format("{}{} is not set for chip {} (it takes its default): set it under chip: in the scenario",
                            d.hint.empty() ? "" : "; ", d.key_path, s.chip.name);
    }
    // A multi-pod collective on a bundled chip without DCN bandwidth: what the user wrote is the pod count
    // (`--set pod.pods=2`, a sweep's grid), so the error is there, not in the bundled pod or chip.
    const auto pods = s.pod.origins.find("pods");
    if (d.key_path == "chip.host.dcn_bandwidth" && is_bundled_file(d.loc.file) && pods != s.pod.origins.end() &&
        !pods->second.defaulted && !is_bundled_file(pods->second.loc.file)) {
      d.loc = pods->second.loc;
      d.hint += fmt::format("{}or one pod (pod.pods: 1)", d.hint.empty() ? "" : "; ");
    }
    return d;
  }
  const std::string field = d.key_path.rfind(model_prefix, 0) == 0 ? d.key_path.substr(model_prefix.size()) : "";
  // A program file names the axes in mesh_axes, or the group in group.
  const std::string in_file = field == "axes" ? (named_group ? "group" : "mesh_axes") : field;
  d.loc = program_location(s, p, i, s.workload.program.empty() ? field : in_file);
  // In a program file the key is the file's own (/programs/P/instructions/I/mesh_axes), not the model's.
  if (!s.workload.program.empty() && !field.empty()) d.key_path = program_key(s, p, i, in_file);
  if (!s.workload.program.empty()) d.hint += fmt::format("{}(program {}, instruction {})", d.hint.empty() ? "" : "; ", p, i);
  return d;
}

// A collective whose group is one chip moves nothing: the step it is part of would run without it (a collective
// model's step would take 0 s), so it is bad input at the axes or group that make the group one chip.
void refuse_group_of_one(const Scenario& s, const Topology& topo, std::size_t p, std::size_t i,
                         const ir::Instruction& ins, bool named, Diagnostics& diags) {
  const std::string field = s.workload.program.empty() ? "axes" : named ? "group" : "mesh_axes";
  std::vector<std::string> axes;
  for (int a = 0; a < topo.axes(); ++a) {
    if (ins.comm.mesh_axes == 0 || (ins.comm.mesh_axes >> a & 1u) != 0) {
      axes.push_back(fmt::format("{} (length {})", a, topo.shape()[static_cast<std::size_t>(a)]));
    }
  }
  const std::string group = named ? fmt::format("group {}", ins.comm.group)
                            : ins.comm.mesh_axes == 0 ? fmt::format("every axis: {}", fmt::join(axes, ", "))
                                                      : fmt::format("axes {}", fmt::join(axes, ", "));
  diags.error(program_location(s, p, i, field), program_key(s, p, i, field), "a collective over a group of one chip",
              "a group of at least two chips (a collective over one chip moves nothing)",
              fmt::format("{} of {} with {} pod(s): 1 chip", group, topo.name(), topo.pods()),
              "name axes of length 2 or more, or a larger pod");
}

std::string chip_str(const Topology& topo, ChipId chip) {
  const ChipCoord c = topo.coord(chip);
  return fmt::format("[{}]", fmt::join(c.pos.begin(), c.pos.begin() + topo.axes(), ", "));
}

// The chips of a group whose roles run different collectives over it (kernels::collective_role_mismatches):
// bad input at the differing role's instruction (or, where its program has no such collective, at the one
// the group's first member runs), describing both sides.
void check_collective_roles(const Scenario& s, const ir::ProgramSet& programs, const Topology& topology,
                            Diagnostics& diags) {
  const auto side = [&](ChipId chip, std::uint16_t role, std::optional<std::uint32_t> i, std::size_t k) {
    const ir::Program& prog = programs.programs[role];
    if (!i) {
      return fmt::format("chip {}, program {}: none (its program has {} collectives over the group)",
                         chip_str(topology, chip), role, k);
    }
    const std::string& label = prog.label_of(prog[*i]);
    return fmt::format("chip {}, program {}, instruction {}{}: {}", chip_str(topology, chip), role, *i,
                       label.empty() ? "" : " '" + label + "'", kernels::describe_collective(prog[*i]));
  };
  for (const kernels::RoleMismatch& m : kernels::collective_role_mismatches(programs, topology)) {
    if (diags.size() >= 20) break;
    const bool at_other = m.other_instruction.has_value();
    const std::uint16_t p = at_other ? m.other_role : m.first_role;
    const std::uint32_t i = at_other ? *m.other_instruction : *m.first_instruction;
    std::string field;  // the first of what the simulator plans a collective from that differs
    if (m.first_instruction && m.other_instruction) {
      const ir::Instruction& a = programs.programs[m.first_role][*m.first_instruction];
      const ir::Instruction& b = programs.programs[m.other_role][*m.other_instruction];
      field = a.comm.collective != b.comm.collective ? "collective"
              : a.bytes != b.bytes                   ? "bytes"
              : a.dtype != b.dtype                   ? "dtype"
                                                     : "algorithm";
    }
    if (s.workload.program.empty()) field.clear();  // a lowered program: the model is where it came from
    diags.error(program_location(s, p, i, field), program_key(s, p, i, field),
                fmt::format("the chips of a collective group run different collectives over it (its collective {} "
                            "in program order; group {})", m.position + 1, kernels::describe_group(m.group)),
                fmt::format("what the group's first member runs there, {}",
                            side(m.first, m.first_role, m.first_instruction, m.position)),
                side(m.other, m.other_role, m.other_instruction, m.position),
                "the simulator pairs each chip's k-th collective over a group with the k-th of the group's other "
                "members: every program whose chips share a group runs the same collectives over it (kind, bytes, "
                "dtype, algorithm) in the same order");
  }
}

// Sends and recvs the simulator cannot pair (kernels::send_recv_mismatches): bad input at the instruction, with
// the other end's.
void check_send_recv_pairs(const Scenario& s, const ir::ProgramSet& programs, const Topology& topology,
                           Diagnostics& diags) {
  using Kind = kernels::PeerMismatch::Kind;
  const auto at = [&](std::uint16_t role, std::uint32_t i) {
    const std::string& label = programs.programs[role].label_of(programs.programs[role][i]);
    return fmt::format("program {}, instruction {}{}", role, i, label.empty() ? "" : " '" + label + "'");
  };
  const std::string pairing = "the simulator pairs chip A's k-th send to chip B with B's k-th recv from A, and the "
                              "recv's chip writes the bytes the send carries";
  for (const kernels::PeerMismatch& m : kernels::send_recv_mismatches(programs, topology)) {
    if (diags.size() >= 20) break;
    const ir::Instruction& ins = programs.programs[m.role][m.instruction];
    const std::string what(ir::is_remote_put(ins) ? "remote put" : ir::op_name(ins.kind)), chip = chip_str(topology, m.chip);
    const std::string peer = m.kind == Kind::outside ? "" : chip_str(topology, m.peer);
    std::string field = m.kind == Kind::bytes ? "bytes" : "";
    if (m.kind == Kind::outside) field = !m.on_axis ? "peer" : programs.named_group(ins) ? "group" : "mesh_axes";
    if (s.workload.program.empty()) field.clear();  // a lowered program: the model is where it came from
    const SourceLoc loc = program_location(s, m.role, m.instruction, field);
    const std::string key = program_key(s, m.role, m.instruction, field);
    if (m.kind == Kind::outside) {
      diags.error(loc, key, fmt::format("a {} whose peer names no other chip of the slice", what),
                  "an offset to another chip of the axis (or group), not past its ends",
                  fmt::format("peer {} on chip {} ({}): {}", ins.comm.peer, chip, at(m.role, m.instruction), m.why));
    } else if (m.kind == Kind::bytes) {
      const std::uint64_t sent = programs.programs[m.peer_role][*m.peer_instruction].bytes;
      diags.error(loc, key, "a recv of other bytes than the send it pairs with",
                  fmt::format("{} bytes, what chip {}'s send {} to chip {} carries ({})", sent, peer, m.position + 1,
                              chip, at(m.peer_role, *m.peer_instruction)),
                  fmt::format("{} bytes (chip {}'s recv {} from chip {}, {})", ins.bytes, chip, m.position + 1, peer,
                              at(m.role, m.instruction)),
                  pairing);
    } else {
      const bool send = m.kind == Kind::no_recv;
      diags.error(loc, key, send ? "a send that no recv takes" : "a recv that no send feeds",
                  fmt::format("a {} on chip {} {} chip {} for chip {}'s {} {}", send ? "recv" : "send", peer,
                              send ? "from" : "to", chip, chip, what, m.position + 1),
                  fmt::format("chip {} (program {}) has {} {} {} chip {}", peer, m.peer_role, m.peer_count,
                              send ? "recvs" : "sends", send ? "from" : "to", chip),
                  pairing);
    }
  }
}

}  // namespace

Limits Limits::defaults() {
  Limits l;
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  l.max_memory = pages > 0 && page > 0 ? pages * page / 2 : 0x1p32;
  l.memory_source = "half of this machine's memory";
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      static_cast<double>(as.rlim_cur) / 2 < l.max_memory) {
    l.max_memory = static_cast<double>(as.rlim_cur) / 2;
    l.memory_source = "half of the address-space limit (ulimit -v)";
  }
  l.max_pe_cycles = kDefaultMaxPeCycles;
  return l;
}

std::vector<std::string> limit_flags(const std::string& max_memory, double max_pe_cycles) {
  std::vector<std::string> out;
  if (!max_memory.empty()) out.insert(out.end(), {"--max-memory", max_memory});
  if (max_pe_cycles != 0) out.insert(out.end(), {"--max-pe-cycles", fmt::format("{:.17g}", max_pe_cycles)});
  return out;
}

Limits limits_from(const std::string& max_memory, double max_pe_cycles) {
  Limits l = Limits::defaults();
  if (!max_memory.empty()) {
    const auto q = parse_quantity(max_memory);
    const bool size = q && q->dimension == Dimension::bytes;
    if (!size || q->si <= 0) {
      // "0 B" is a size with a unit: what is wrong with it is that nothing fits in it.
      throw ConfigError({Diagnostic{SourceLoc{"--max-memory " + max_memory}, "",
                                    size ? "the limit must be above 0" : "invalid value",
                                    "a size with a unit above 0 B, e.g. 8 GiB", max_memory, ""}});
    }
    l.max_memory = q->si;
    l.memory_source = "--max-memory";
  }
  if (max_pe_cycles > 0) l.max_pe_cycles = max_pe_cycles;
  return l;
}

void guard_topology(const PodSpec& pod, const Limits& limits) {
  const double links = topology_links(pod);
  refuse_memory(fmt::format("the pod {} ({} chip{}, {:.0f} link{})", pod.name, pod.chip_count(),
                            pod.chip_count() == 1 ? "" : "s", links, links == 1 ? "" : "s"),
                topology_bytes(pod), limits, "Use a smaller pod (pod.shape, pod.pods)");
}

void guard_lowering(const Scenario& s, const Limits& limits) {
  const double topology = topology_bytes(s.pod);
  if (!s.workload.program.empty()) {
    std::error_code ec;
    const auto size = fs::file_size(s.workload.program, ec);
    if (!ec) {
      refuse_memory(fmt::format("reading the program file {} ({})", s.workload.program,
                                bytes_text(static_cast<double>(size))),
                    topology + static_cast<double>(size) * kJsonBytesPerFileByte, limits,
                    "Use a smaller program file");
    }
    return;
  }
  const kernels::LoweringEstimate e = kernels::estimate_lowering(s.workload, s.chip);
  refuse_memory(fmt::format("lowering {} ({:.3g} instructions)",
                            s.workload.model.name.empty() ? "the model" : "model " + s.workload.model.name,
                            e.instructions),
                topology + e.bytes(), limits, "Use smaller shapes (workload.model, workload.batch)");
}

void check_programs(const Scenario& s, const ir::ProgramSet& programs, const Topology& topology) {
  Diagnostics diags;
  if (programs.programs.empty()) {
    diags.error(SourceLoc{s.workload.program.empty() ? s.name : s.workload.program}, "workload",
                "no program to run", "at least one program", "none");
  }
  // A program file's top-level groups must each tile this pod: checked here, where the file's line is known.
  std::vector<bool> tiles(programs.groups.size(), true);
  for (std::size_t g = 0; g < programs.groups.size(); ++g) {
    try {
      (void)kernels::group_participants(topology, programs.groups[g]);
    } catch (const ConfigError& e) {
      tiles[g] = false;
      const std::string pointer = fmt::format("/groups/{}", g);
      for (Diagnostic d : e.diagnostics()) {
        d.loc = s.workload.program.empty() ? SourceLoc{s.name} : ir::program_file_location(s.workload.program, pointer);
        d.key_path = pointer;
        diags.add(std::move(d));
      }
    }
  }
  // Each distinct collective is planned once, over the group the simulator will give it: a named group of
  // the set (the reader checked the index) or the whole torus axes of mesh_axes.
  std::map<std::tuple<int, std::uint64_t, int, std::uint32_t, std::uint16_t, int>, bool> planned;
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    const ir::Program& prog = programs.programs[p];
    std::map<int, std::pair<double, double>> vmem;  // core -> (allocated, freed) over the program
    std::map<int, std::size_t> first_free;
    for (std::size_t i = 0; i < prog.size(); ++i) {
      const ir::Instruction& ins = prog[i];
      if (ins.core >= s.chip.tensorcores && diags.size() < 20) {
        diags.error(program_location(s, p, i, "core"), program_key(s, p, i, "core"), "the chip has no such TensorCore",
                    fmt::format("a core below {} ({} has {})", s.chip.tensorcores, s.chip.name, s.chip.tensorcores),
                    std::to_string(ins.core));
      }
      check_instruction_capacities(s, p, i, ins, diags);  // sizes no memory of the chip holds
      check_instruction_dtype(s, p, i, ins, diags);       // int8 / fp8 without the MXU's rate for it
      auto& [alloc, freed] = vmem[ins.core];
      alloc += static_cast<double>(ins.vmem.alloc);
      freed += static_cast<double>(ins.vmem.free);
      if (ins.vmem.free > 0) first_free.try_emplace(ins.core, i);
      if (ins.kind != ir::OpKind::collective) continue;
      const ir::CollectiveGroup* group = programs.named_group(ins);  // the reader checked the index
      const bool named = group != nullptr;
      if (named && !tiles[ins.comm.group]) continue;  // already reported at /groups/N
      const auto key =
          std::tuple{static_cast<int>(ins.comm.collective), ins.bytes, static_cast<int>(ins.dtype), ins.comm.mesh_axes,
                     named ? ins.comm.group : ir::kAxesGroup, static_cast<int>(ins.comm.algorithm)};
      if (!planned.emplace(key, true).second) continue;
      try {
        const auto algorithm = static_cast<kernels::CollectiveAlgorithm>(ins.comm.algorithm);
        const kernels::CollectivePlan plan =
            named ? kernels::plan_collective(topology, ins.comm.collective, ins.bytes, ins.dtype, *group, algorithm)
                  : kernels::plan_collective(topology, ins.comm.collective, ins.bytes, ins.dtype, ins.comm.mesh_axes,
                                             algorithm);
        if (plan.participants == 1) refuse_group_of_one(s, topology, p, i, ins, named, diags);
      } catch (const ConfigError& e) {
        for (const Diagnostic& d : e.diagnostics()) diags.add(relocate_plan_error(s, d, p, i, named));
      }
    }
    // What the simulation checks when it starts (a SparseCore, CMEM or a path the program needs; a block for an
    // added unit kind's instructions): bad input at the instruction's line, before anything is simulated.
    try {
      if (const std::optional<std::uint32_t> chip = first_chip_running(programs, p)) {
        models::check_program_fits(prog, s.chip, *chip);
      }
    } catch (const models::SimulationError& e) {
      diags.error(program_location(s, p, e.instruction(), ""), program_key(s, p, e.instruction(), ""),
                  "the program cannot run on this chip", fmt::format("an instruction chip {} can run", s.chip.name),
                  e.reason());
    }
    // Every byte a core frees must have been allocated on it: more frees than allocations over the whole
    // program fail in any order the simulator could take.
    for (const auto& [core, totals] : vmem) {
      if (totals.second > totals.first) {
        const std::size_t at = first_free.at(core);
        diags.error(program_location(s, p, at, "vmem_free"), program_key(s, p, at, "vmem_free"),
                    fmt::format("program {} frees more VMEM on core {} than it allocates", p, core),
                    fmt::format("at most the {:.0f} bytes its instructions allocate there", totals.first),
                    fmt::format("{:.0f} bytes freed", totals.second), "the first free is at this instruction");
      }
    }
  }
  diags.throw_if_any();
  check_collective_roles(s, programs, topology, diags);
  check_send_recv_pairs(s, programs, topology, diags);
  diags.throw_if_any();
  // A step the simulator's 64-bit picosecond clock cannot count.
  const models::SimEstimate e = models::estimate_simulation(s, programs);
  if (e.serial_seconds > models::kMaxSimulatedSeconds) {
    // The chip values set outside the chip's own file (a scenario's chip: map, a --set) are the likeliest cause
    // when the program itself is a bundled model's: name them.
    std::vector<std::string> changed;
    const auto clock = s.chip.origins.find("clock");
    const std::string chip_file = clock != s.chip.origins.end() ? clock->second.loc.file : std::string();
    for (const auto& [key, origin] : s.chip.origins) {
      if (origin.defaulted || origin.loc.file == chip_file || changed.size() == 3) continue;
      changed.push_back(fmt::format("chip.{} at {}", key, origin.loc.str()));
    }
    const ir::Program& prog = programs.programs[e.program];
    const std::string& label = prog.label_of(prog[e.longest_instruction]);
    diags.error(program_location(s, e.program, e.longest_instruction, ""),
                program_key(s, e.program, e.longest_instruction, ""),
                "the step is longer than the simulator can count",
                fmt::format("instructions that take at most {:.0e} s one after the other", models::kMaxSimulatedSeconds),
                fmt::format("about {:.3g} s; instruction {}{} alone takes about {:.3g} s", e.serial_seconds,
                            e.longest_instruction, label.empty() ? "" : " '" + label + "'", e.longest_seconds),
                changed.empty() ? std::string("smaller shapes or byte counts, or faster chip parameters")
                                : fmt::format("smaller shapes or byte counts, or faster chip parameters (this run "
                                              "changed {})",
                                              fmt::join(changed, ", ")));
  }
  diags.throw_if_any();
}

void guard_simulation(const Scenario& s, const ir::ProgramSet& programs, const Limits& limits) {
  const models::SimEstimate e = models::estimate_simulation(s, programs);
  refuse_memory(fmt::format("simulating {} chip{} running {:.3g} instruction{}", e.chips, e.chips == 1 ? "" : "s",
                            e.instructions, e.instructions == 1 ? "" : "s"),
                topology_bytes(s.pod) + programs_bytes(programs) + e.bytes, limits, "Use a smaller pod or workload");
  if (e.pe_cycles > limits.max_pe_cycles) {
    throw ResourceRefused(fmt::format(
        "refused: fidelity.mxu: cycle would step {:.3g} processing-element cycles in the cycle-level MXU reference "
        "(about {} at {:.0e} per second), above the limit of {:.3g}. Use fidelity.mxu: fast (the closed form it "
        "equals), or smaller shapes, or raise the limit with --max-pe-cycles N; nothing was run",
        e.pe_cycles, format_time(Seconds(e.pe_cycles / models::kReferencePeCyclesPerSecond)),
        models::kReferencePeCyclesPerSecond, limits.max_pe_cycles));
  }
}

namespace {

// A fault the plan times on one cable (a link or an OCS port), whose cable the preflight can follow.
bool timed_cable_fault(const FaultSpec& f) {
  return !f.target.random && fault_stops_cable(f.kind);
}

// Only reroute keeps failed cables down (routed around until a restart); the other policies repair each at the
// restart its detection starts, and simulate no step with a cable down (models/job/job_steps.cpp).
bool cables_stay_down(const Scenario& s) { return s.job.recovery == RecoveryPolicyKind::reroute; }

// Under reroute the cables a timed plan stops stay down (routed around) until a restart repairs them: a set of
// them that splits a pod into two parts, no chip alone (that case is check_fault_cuts's), leaves chips no route
// reaches. The plan is bad input at the fault that splits it, naming the parts and the plan's cables between
// them. A chip_down repairs only its chip, so it reconnects nothing.
void check_fault_splits(const Scenario& s, const Topology& topology) {
  models::job::FailedCables cables(topology);
  std::map<std::uint32_t, int> fault_of;  // a cable -> the plan's entry that stopped it
  for (const FaultSpec& f : s.faults.faults) {  // sorted by `at`
    if (!timed_cable_fault(f)) continue;
    const models::ConcreteFault c = models::concrete_fault(f, topology, s.seed);
    fault_of.emplace(cables.cable_of(c.link), f.index);
    const std::optional<std::vector<ChipId>> cut = cables.fail(c.link);
    if (!cut) continue;
    std::vector<ChipId> rest;
    const int pod = topology.coord(cut->front()).pod;
    for (std::uint32_t i = 0; i < topology.chip_count(); ++i) {
      const ChipId chip(i);
      if (topology.coord(chip).pod == pod && !std::binary_search(cut->begin(), cut->end(), chip)) {
        rest.push_back(chip);
      }
    }
    std::vector<std::string> between;
    for (LinkId l : cables.between(*cut)) {
      const auto it = fault_of.find(cables.cable_of(l));
      between.push_back(it != fault_of.end() ? fmt::format("faults[{}]", it->second) : "?");
    }
    std::sort(between.begin(), between.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    const std::size_t shown = std::min<std::size_t>(between.size(), 8);
    const std::string listed =
        fmt::format("{}{}", fmt::join(between.begin(), between.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                    between.size() > shown ? fmt::format(" and {} more", between.size() - shown) : "");
    Diagnostics diags;
    diags.error(f.loc, fmt::format("faults[{}]", f.index),
                fmt::format("with the link faults before it, this fault splits {} into two parts that no "
                            "rerouting connects: {} chips {} to {}, and {} chips {} to {}",
                            topology.pods() > 1 ? fmt::format("pod {}", pod) : std::string("the pod"), cut->size(),
                            chip_str(topology, cut->front()), chip_str(topology, cut->back()),
                            rest.size(), chip_str(topology, rest.front()), chip_str(topology, rest.back())),
                "link faults that leave the pod's chips one connected torus (job.recovery: reroute keeps each "
                "failed cable down)",
                fmt::format("{} cables down between the parts: {}", between.size(), listed),
                "drop one of these faults, or write chip_down faults for the chips meant to fail, or use "
                "job.recovery: checkpoint_restart (each failed cable is repaired at the restart)");
    diags.throw_if_any();
  }
}

}  // namespace

Topology check_topology(const Scenario& s) {
  try {
    return build_topology(s.pod, s.chip);
  } catch (const std::invalid_argument& e) {
    const auto it = s.pod.origins.find("shape");
    Diagnostics diags;
    diags.error(it != s.pod.origins.end() ? it->second.loc : SourceLoc{"(pod)", 0, 0}, "pod",
                "the pod cannot be built with this chip", "a pod the chip can form", e.what());
    throw ConfigError(diags.items());
  }
}

void check_fault_cuts(const Scenario& s, const Topology& topology) {
  // The cables (a directed link and its reverse, named by the lower LinkId) the timed faults stop, in time order:
  // the fault that stops a chip's last cable cuts it off from the torus. Rerouting cannot reach it; it is a
  // failed chip, and the plan must say so (a chip_down fault, whose recovery policy then applies).
  if (!cables_stay_down(s)) return;
  std::set<std::uint32_t> cut;
  Diagnostics diags;
  for (const FaultSpec& f : s.faults.faults) {  // sorted by `at`
    if (!timed_cable_fault(f)) continue;
    const models::ConcreteFault c = models::concrete_fault(f, topology, s.seed);
    const Link& l = topology.link(c.link);
    auto cable_of = [&](LinkId id) {
      return std::min(id.value(), topology.link(id).reverse.value());
    };
    if (!cut.insert(cable_of(c.link)).second) continue;
    for (ChipId chip : {l.src, l.dst}) {
      const std::vector<LinkId> out = topology.out_links(chip);
      const bool alone = !out.empty() && std::all_of(out.begin(), out.end(), [&](LinkId o) {
        return cut.count(cable_of(o)) != 0;
      });
      if (!alone) continue;
      const ChipCoord at = topology.coord(chip);
      std::vector<int> pos(at.pos.begin(), at.pos.begin() + topology.axes());
      // In a multislice the chip's pod is named, and the chip_down the hint writes carries it.
      const bool multislice = topology.pods() > 1;
      const std::string name = fmt::format("chip [{}]{}", fmt::join(pos, ", "),
                                           multislice ? fmt::format(" of pod {}", at.pod) : std::string());
      const std::string target = multislice
                                     ? fmt::format("{{chip: [{}], pod: {}}}", fmt::join(pos, ", "), at.pod)
                                     : fmt::format("[{}]", fmt::join(pos, ", "));
      diags.error(f.loc, fmt::format("faults[{}]", f.index),
                  fmt::format("this fault stops the last cable of {}: it is cut off from the torus, which "
                              "no rerouting can reach", name),
                  "link faults that leave every chip at least one cable, or a chip_down fault for a chip that "
                  "fails", fmt::format("all {} cables of {} down", out.size(), name),
                  fmt::format("write {{at: {}, kind: chip_down, target: {}}}: job.recovery then applies",
                              format_value(f.at), target));
    }
  }
  diags.throw_if_any();
  check_fault_splits(s, topology);
}

std::size_t max_job_faults(const Limits& limits) {
  const double held = std::floor(limits.max_memory / kBytesPerJobFault);
  return held >= static_cast<double>(models::kMaxJobFaults) ? models::kMaxJobFaults
                                                             : static_cast<std::size_t>(std::max(1.0, held));
}

void guard_fault_rates(const Scenario& s, const Topology& topology, Seconds length, const Limits& limits) {
  const FaultRates& r = s.faults.rates;
  if (!s.job.enabled || !r.any() || length.value() <= 0) return;
  // The pod's rate of random faults as the job draws them (each kind's components over its mean time between
  // failures) over the job's length.
  static constexpr std::array<const char*, 4> kComponents{"chips", "cables", "OCS ports", "hosts"};
  const std::vector<models::RandomFaultSource> sources = models::random_fault_sources(s, topology);
  const auto mtbfs = fault_rate_fields().render(r);  // in the sources' order: chip_down, ..., host_down
  double expected = 0;
  std::vector<std::string> parts;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (sources[k].per_second <= 0) continue;
    expected += sources[k].per_second * length.value();
    parts.push_back(fmt::format("{} {} failing every {} each", sources[k].components, kComponents.at(k),
                                mtbfs.at(k).second));
  }
  const bool steps = s.job.given_in_steps();
  const std::string over = steps ? fmt::format("job.steps {} (healthy: {})", s.job.steps, format_time(length))
                                 : "job.duration " + format_value(s.job.duration);
  const std::string way_out = fmt::format("Use longer mean times between failures (fault_rates) or a shorter {}",
                                          steps ? "job.steps" : "job.duration");
  // A Poisson count with a mean of twice the cap stays below the cap with negligible probability.
  if (expected > 2.0 * static_cast<double>(models::kMaxJobFaults)) {
    throw ResourceRefused(fmt::format(
        "refused: fault_rates give about {:.3g} random faults over {} ({}), far more than the {} a job meets "
        "before it stops; {}. {}",
        expected, over, fmt::join(parts, ", "), models::kMaxJobFaults,
        steps ? "no step with a fault was simulated, nothing was written" : "nothing was run", way_out));
  }
  // Each fault the job meets is kept on its timeline and written out (summary.json); past what the limit holds
  // the job stops (max_job_faults).
  if (expected > static_cast<double>(max_job_faults(limits))) {
    refuse_memory(fmt::format("the timeline of the job's about {:.3g} random faults over {}", expected, over),
                  expected * kBytesPerJobFault, limits, way_out);
  }
}

double estimated_run_bytes(const Scenario& s, const ir::ProgramSet& programs) {
  return topology_bytes(s.pod) + programs_bytes(programs) + models::estimate_simulation(s, programs).bytes;
}

}  // namespace tpusim::tools
