#include "tiling/pipeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "tpusim/core/diagnostics.h"

namespace tpusim::kernels::detail {

namespace {

// Where the chip field `key` was written; the chip's name when it was defaulted or the spec has no origins.
SourceLoc chip_field_origin(const ChipSpec& chip, const char* key) {
  const auto it = chip.origins.find(key);
  return it != chip.origins.end() && !it->second.defaulted ? it->second.loc : SourceLoc{chip.name};
}

}  // namespace

SourceLoc vmem_capacity_origin(const ChipSpec& chip) { return chip_field_origin(chip, "vmem.capacity"); }

ConfigError vmem_too_small(const ChipSpec& chip, double share, double needed, const std::string& what) {
  const double limit = chip.vmem.scoped_limit.as_double();
  if (limit > 0 && limit < chip.vmem.capacity.as_double() * share) {
    const auto at_least = static_cast<std::uint64_t>(std::min(std::ceil(needed), 1.8e19));
    return ConfigError({Diagnostic{chip_field_origin(chip, "vmem.scoped_limit"), "chip.vmem.scoped_limit",
                                   fmt::format("VMEM scoped limit too small for {}", what),
                                   fmt::format("at least {}", format_bytes(Bytes(at_least))),
                                   format_bytes(chip.vmem.scoped_limit),
                                   "raise chip.vmem.scoped_limit (XLA's --xla_tpu_scoped_vmem_limit_kib)"}});
  }
  const auto capacity = static_cast<std::uint64_t>(std::min(needed / share + 1, 1.8e19));
  return ConfigError({Diagnostic{vmem_capacity_origin(chip), "chip.vmem.capacity",
                                 fmt::format("VMEM too small for {}", what),
                                 fmt::format("at least {} (it may use {:.1f}% of VMEM)", format_bytes(Bytes(capacity)),
                                             share * 100),
                                 format_bytes(chip.vmem.capacity), ""}});
}

namespace {

// What a core's stream remembers: the last two steps (pending steps, their loads and computes) and the
// stores of the last two groups, indexed modulo 2.
struct CoreStream {
  std::array<Step, kMaxOperandBuffers> step;
  std::array<std::vector<std::uint32_t>, kMaxOperandBuffers> loads;
  std::array<std::uint32_t, kMaxOperandBuffers> compute{};
  std::array<std::vector<std::uint32_t>, 2> group_stores;
  std::int64_t groups = 0;  // groups opened so far
  bool store_pending = false;   // the stores of the group closed by `pending_compute` are not emitted yet
  Step pending_step;
  std::uint32_t pending_compute = 0;
};

}  // namespace

std::vector<std::uint32_t> emit_pipeline(ir::Program& prog, const std::vector<std::int64_t>& steps_per_core,
                                         const std::function<Step(int core, std::int64_t step)>& step_of,
                                         const std::vector<std::uint32_t>& after, const std::string& label,
                                         std::string_view compute_name, int operand_buffers,
                                         ir::OpClass op_class) {
  if (operand_buffers < 2 || operand_buffers > kMaxOperandBuffers) {
    throw std::invalid_argument("pipeline: operand buffers must be 2 or 3");
  }
  const std::int64_t depth = operand_buffers;
  std::vector<CoreStream> cores(steps_per_core.size());
  std::vector<std::uint32_t> done;
  std::unordered_map<std::int64_t, std::uint32_t> staged;  // Transfer::records -> instruction

  auto emit_loads = [&](int c, std::int64_t s) {
    CoreStream& cs = cores[c];
    Step& st = cs.step[s % depth];
    st = step_of(c, s);
    if (st.loads.empty()) throw std::logic_error("pipeline step without loads");
    const std::vector<std::uint32_t> deps = s < depth ? after : std::vector<std::uint32_t>{cs.compute[s % depth]};
    auto dma = [&](const Transfer& t) {
      ir::Instruction ins;
      ins.kind = ir::OpKind::dma;
      ins.core = static_cast<std::uint8_t>(c);
      ins.memory.src = t.src;
      ins.memory.dst = t.dst;
      ins.memory.pattern = t.pattern;
      ins.bytes = t.bytes;
      ins.vmem.alloc = t.vmem;
      ins.op_class = op_class;
      return ins;
    };
    for (const Transfer& t : st.stages) {
      const std::uint32_t id = prog.add(dma(t), after, label + "." + std::string(t.name));
      if (t.records >= 0) staged[t.records] = id;
    }
    auto& ids = cs.loads[s % depth];
    ids.clear();
    for (const Transfer& t : st.loads) {
      std::vector<std::uint32_t> load_deps = deps;
      if (t.waits_for >= 0) {
        const auto it = staged.find(t.waits_for);
        if (it == staged.end()) throw std::logic_error("pipeline: a load waits for a stage not emitted yet");
        load_deps.push_back(it->second);
      }
      ids.push_back(prog.add(dma(t), load_deps, label + "." + std::string(t.name)));
    }
  };

  auto emit_compute = [&](int c, std::int64_t s) {
    CoreStream& cs = cores[c];
    const Step& st = cs.step[s % depth];
    std::vector<std::uint32_t> deps = cs.loads[s % depth];
    if (s > 0) deps.push_back(cs.compute[(s - 1) % depth]);
    if (st.first_of_group) {
      if (cs.groups >= 2) {
        const auto& old = cs.group_stores[cs.groups % 2];
        deps.insert(deps.end(), old.begin(), old.end());
      }
      ++cs.groups;
    }
    ir::Instruction ins = st.compute;
    ins.core = static_cast<std::uint8_t>(c);
    ins.op_class = op_class;
    ins.vmem.alloc = st.first_of_group ? st.group_vmem : 0;
    ins.vmem.free = 0;
    for (const Transfer& t : st.loads) ins.vmem.free += t.vmem;
    const std::uint32_t id = prog.add(ins, deps, label + "." + std::string(compute_name));
    cs.compute[s % depth] = id;
    if (!st.last_of_group) return;
    cs.store_pending = true;
    cs.pending_step = st;
    cs.pending_compute = id;
  };

  auto emit_stores = [&](int c) {
    CoreStream& cs = cores[c];
    if (!cs.store_pending) return;
    cs.store_pending = false;
    const Step& st = cs.pending_step;
    const std::uint32_t id = cs.pending_compute;
    auto& stores = cs.group_stores[(cs.groups - 1) % 2];
    stores.clear();
    for (const Transfer& t : st.stores) {
      ir::Instruction out;
      out.kind = ir::OpKind::dma;
      out.core = static_cast<std::uint8_t>(c);
      out.memory.src = ir::Memory::vmem;
      out.memory.dst = ir::Memory::hbm;
      out.memory.pattern = t.pattern;
      out.bytes = t.bytes;
      out.vmem.free = t.vmem;
      out.op_class = op_class;
      stores.push_back(prog.add(out, {id}, label + "." + std::string(t.name)));
      done.push_back(stores.back());
    }
  };

  const int ncores = static_cast<int>(steps_per_core.size());
  const std::int64_t rounds = *std::max_element(steps_per_core.begin(), steps_per_core.end());
  for (std::int64_t s = 0; s + 1 < depth; ++s) {
    for (int c = 0; c < ncores; ++c) {
      if (s < steps_per_core[c]) emit_loads(c, s);
    }
  }
  for (std::int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < ncores; ++c) {
      if (r + depth - 1 < steps_per_core[c]) emit_loads(c, r + depth - 1);
      emit_stores(c);
      if (r < steps_per_core[c]) emit_compute(c, r);
    }
  }
  for (int c = 0; c < ncores; ++c) emit_stores(c);
  return done;
}

}  // namespace tpusim::kernels::detail
