// lower_collective: a ModelKind::collective workload as one program of one collective instruction (contract in
// tpusim/kernels/collectives.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tpusim/core/diagnostics.h"
#include "tpusim/core/units.h"
#include "tpusim/kernels/collectives.h"

namespace tpusim::kernels {

ir::ProgramSet lower_collective(const WorkloadSpec& workload) {
  const ModelSpec& model = workload.model;
  const CollectiveModel& c = model.collective;
  // Errors point at the model's field when its origin is known (a YAML value), else at the model by name.
  auto where = [&](const std::string& key) {
    const auto it = model.origins.find(key);
    return it != model.origins.end() && !it->second.defaulted ? it->second.loc : SourceLoc{model.name};
  };

  Diagnostics diags;
  const std::optional<CollectiveAlgorithm> algorithm = algorithm_by_name(c.algorithm);
  if (!algorithm) {
    const std::vector<std::string> names = algorithm_names();
    diags.error(where("algorithm"), "workload.model.algorithm", fmt::format("unknown collective algorithm '{}'", c.algorithm),
                fmt::format("one of: {}", fmt::join(names, ", ")), c.algorithm, suggestion(c.algorithm, names));
  }
  std::uint32_t mask = 0;
  for (int axis : c.axes) {
    if (axis < 0 || axis >= kMaxAxes) {
      diags.error(where("axes"), "workload.model.axes", "axis index out of range",
                  fmt::format("an axis in [0, {})", kMaxAxes), std::to_string(axis));
    } else if (mask & (1u << axis)) {
      diags.error(where("axes"), "workload.model.axes", "axis listed twice", "each axis at most once",
                  std::to_string(axis));
    } else {
      mask |= 1u << axis;
    }
  }
  // Its plan counts in whole elements of the dtype: a part of one would be rounded up silently.
  const auto element = static_cast<std::uint64_t>(dtype_bytes(workload.numerics.dtype));
  if (c.bytes.count() % element != 0) {
    diags.error(where("bytes"), "workload.model.bytes", "not a whole number of elements",
                fmt::format("a multiple of {} bytes (one {} element, workload.dtype)", element,
                            dtype_name(workload.numerics.dtype)),
                format_bytes(c.bytes));
  }
  diags.throw_if_any();

  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.op_class = ir::OpClass::communication;  // so op_classes counts it where exposed_communication does
  ins.comm.collective = c.op;
  ins.dtype = workload.numerics.dtype;
  ins.bytes = c.bytes.count();
  ins.comm.mesh_axes = mask;
  ins.comm.algorithm = static_cast<std::uint8_t>(*algorithm);
  ir::Program prog(model.name.empty() ? "main" : model.name);
  prog.add(ins, {}, std::string(collective_name(c.op)));
  ir::ProgramSet set;
  set.programs.push_back(std::move(prog));
  return set;
}

}  // namespace tpusim::kernels
