#include "tpusim/kernels/assumptions.h"

#include <fmt/format.h>

#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {

std::vector<Assumption> lowering_assumptions() {
  return {
      {"GEMM share of VMEM", fmt::format("{:.0f}%", 100 * kGemmVmemFraction), "kernels/include/tpusim/kernels/lowering.h",
       "room left for the compiler's other buffers when tiling a GEMM"},
      {"vector-pass share of VMEM", fmt::format("{:.1f}%", 100 * kVectorVmemFraction),
       "kernels/include/tpusim/kernels/lowering.h", "chunk size of streaming vector passes"},
      {"GEMM share of CMEM", fmt::format("{:.0f}%", 100 * kGemmCmemFraction), "kernels/include/tpusim/kernels/lowering.h",
       "one GEMM stage's staged weights may fill CMEM (stages run one after another)"},
      {"auto all-to-all: direct up to", fmt::format("{} per chip", format_bytes(Bytes(kAutoDirectMaxBytes))),
       "kernels/include/tpusim/kernels/collectives.h",
       "below this, one latency-bound step beats ring steps (sweeps/alltoall-algorithms-v4-4x4x4.yaml); all-reduce, "
       "reduce-scatter and all-gather take the ring at every size, as measurement C1 shows the runtime does"},
  };
}

}  // namespace tpusim::kernels
