#include "tools/src/model_info.h"

#include <fmt/format.h>

#include "tpusim/kernels/model_params.h"

namespace tpusim::tools {
namespace {

std::string count_text(double n) {
  if (n >= 1e9) return fmt::format("{:.3f} B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.3f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.3f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

}  // namespace

void print_lowering_summary(const Scenario& s, const kernels::LoweredWorkload& lowered, std::ostream& out) {
  std::size_t instructions = 0;
  for (const auto& p : lowered.programs.programs) instructions += p.size();
  // Over the pod's chips: model FLOPs count replicated work once (and no padding), hardware FLOPs every copy.
  const auto chips = static_cast<std::uint32_t>(s.pod.chip_count());
  double hardware = 0;
  for (std::uint32_t c = 0; c < chips; ++c) hardware += lowered.programs.program_for(c).hardware_flops();
  out << fmt::format("{}: {} program{} of {} instructions\n", s.name, lowered.programs.programs.size(),
                     lowered.programs.programs.size() == 1 ? "" : "s", instructions);
  out << fmt::format("  model FLOPs     {:.6g} over {} chip{} (closed form {:.6g}); hardware FLOPs {:.6g}\n",
                     kernels::model_flops(lowered, chips), chips, chips == 1 ? "" : "s",
                     lowered.closed_form_model_flops, hardware);
  if (lowered.work.tokens > 0) out << fmt::format("  tokens per step {:.6g}\n", lowered.work.tokens);
  if (lowered.memory) {
    const kernels::MemoryPlan& m = *lowered.memory;
    out << fmt::format("  HBM plan        {} of {} per chip\n", format_bytes_approx(m.total()),
                       format_bytes_approx(m.capacity));
    for (const auto& [name, b] : m.categories()) {
      out << fmt::format("    {:<16}{:>12}  ({} B)\n", name, format_bytes_approx(b), b.count());
    }
    if (m.host_offload.count() > 0) {
      out << fmt::format("  host memory     {} of {} per chip\n", format_bytes_approx(m.host_offload),
                         format_bytes_approx(m.host_capacity));
      out << fmt::format("    {:<16}{:>12}  ({} B)\n", "host_offload", format_bytes_approx(m.host_offload),
                         m.host_offload.count());
    }
  }
}

int describe_model(const std::string& name_or_path, std::ostream& out) {
  const ModelSpec m = load_model(name_or_path);
  out << fmt::format("model {} (kind {})\n", m.name, model_kind_name(m.kind));
  const auto groups = kernels::parameter_groups(m);
  if (groups.empty()) {
    out << "  no parameters\n";
    return 0;
  }
  out << fmt::format("  {:<24}{:>16}  {:>14}  {}\n", "component", "parameters", "", "in matmuls");
  for (const auto& g : groups) {
    out << fmt::format("  {:<24}{:>16.0f}  {:>14}  {}\n", g.component, g.count, count_text(g.count),
                       g.matmul ? "yes" : "no");
  }
  const double total = kernels::parameter_count(m);
  out << fmt::format("  {:<24}{:>16.0f}  {:>14}\n", "total", total, count_text(total));
  const double active = kernels::active_matmul_parameters(m);
  out << fmt::format("  {:<24}{:>16.0f}  {:>14}  (N in 6 N per token)\n", "matmul, per token", active,
                     count_text(active));
  return 0;
}

}  // namespace tpusim::tools
