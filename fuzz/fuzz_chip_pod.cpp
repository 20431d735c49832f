// Fuzzes the chip and pod readers on the same YAML text (a chip file and a pod file are both maps of fields
// with units, lists and cross-field rules).
#include <cstdint>
#include <string_view>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/pod_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  Diagnostics diags;
  const ConfigNode root = load_yaml_string({reinterpret_cast<const char*>(data), size}, "fuzz.yaml", diags);
  Diagnostics chip_diags, pod_diags;
  const ChipSpec chip = resolve_chip(root, "chip", chip_diags);
  const PodSpec pod = resolve_pod(root, "pod", pod_diags);
  if (pod_diags.empty()) (void)pod.chip_count();
  if (chip_diags.empty()) (void)chip.derived_peak_bf16();
  (void)chip_diags.str();
  (void)pod_diags.str();
  return 0;
}
