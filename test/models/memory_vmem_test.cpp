// VMEM bandwidth to the MXU and VPU (chip.vmem.bandwidth, per TensorCore), and the per-array MXU utilization.
// Pure formula tests first, then one simulation per test process.
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "memory_test_support.h"
#include "test_chips.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using memtest::matmul;
using memtest::single;
using testing::scenario_for;
using testing::v4_like;

using testing::kPicosecond;

// m=1024, k=512, n=512 on 4 arrays of 128 x 128: 4 x 4 = 16 weight tiles, 4 per array.
//   weights  512 x 512 x 2             =   524,288
//   LHS      1024 x 512 x ceil(512/128) x 2 = 4,194,304
//   partials 1024 x 512 x ceil(512/128) x 4 = 8,388,608
constexpr std::uint64_t kMatmulVmemBytes = 524'288 + 4'194'304 + 8'388'608;  // 13,107,200
// Compute: R + (T - 1) max(m, R) + m + R + C - 2 = 128 + 3 x 1024 + 1024 + 254 = 4478 cycles.
constexpr std::int64_t kMatmulCycles = 4478;

TEST(VmemTraffic, WeightStationaryMatmulBytesAreWeightsPlusStreamedLhsPlusPartialSums) {
  const ChipSpec chip = v4_like();
  EXPECT_EQ(matmul_vmem_bytes(chip.mxu, MatmulShape{1024, 512, 512}, DType::bf16), kMatmulVmemBytes);
  // int8 halves the operands, not the 4-byte partial sums.
  EXPECT_EQ(matmul_vmem_bytes(chip.mxu, MatmulShape{1024, 512, 512}, DType::int8),
            262'144u + 2'097'152u + 8'388'608u);
  // A partial tile streams its real bytes: k = 200 is two weight-tile rows, n = 100 one column.
  EXPECT_EQ(matmul_vmem_bytes(chip.mxu, MatmulShape{8, 200, 100}, DType::bf16),
            200u * 100 * 2 + 8u * 200 * 1 * 2 + 8u * 100 * 2 * 4);
}

TEST(VmemTraffic, OutputStationaryMatmulStreamsBothOperandsPerOutputTile) {
  ChipSpec chip = v4_like();
  chip.mxu.dataflow = MxuDataflow::output_stationary;
  // A once per column of output tiles (4), B once per row of output tiles (8), C written once in f32.
  EXPECT_EQ(matmul_vmem_bytes(chip.mxu, MatmulShape{1024, 512, 512}, DType::bf16),
            1024u * 512 * 4 * 2 + 512u * 512 * 8 * 2 + 1024u * 512 * 4);
}

TEST(VmemTraffic, VmemCyclesAreBytesOverBandwidthPerCycleRoundedUp) {
  EXPECT_EQ(vmem_bound_cycles(13'107'200.0, BytesPerSecond(1.05e12), Hertz(1.05e9)), 13'108);  // 13107.2
  EXPECT_EQ(vmem_bound_cycles(8192.0, BytesPerSecond(8192 * 1.05e9), Hertz(1.05e9)), 1);
  EXPECT_EQ(vmem_bound_cycles(0.0, BytesPerSecond(1e12), Hertz(1e9)), 0);
}

// The bundled GEMM scenarios (scenarios/gemm-v4.yaml: 4096^3; gemm-skinny-v4.yaml: 8 x 4096 x 4096) on the
// bundled v4 chip: every matmul step of the tiling the lowering picks needs fewer VMEM cycles than MXU cycles.
// Steady state per array and cycle: one 256 B LHS row in, one 512 B f32 row out, and the next weight tile
// (32 KiB per max(tm, 128) cycles), against vmem.bandwidth / clock = 8192 B per cycle for 4 arrays.
// Measured margins (MXU cycles / VMEM cycles of one step): 2.69 for 4096^3 (512 x 1024 x 512 steps), 10.2 for
// 8 x 4096 x 4096 (8-row steps stream few LHS rows per weight tile, and a tile costs max(m, 128) cycles).
TEST(VmemTraffic, BundledV4GemmsStayComputeBoundAtTheConfiguredVmemBandwidth) {
  const ChipSpec chip = load_chip("v4");
  const auto dataflow = make_mxu_dataflow(chip.mxu.dataflow);
  for (const auto& [m, k, n] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{4096, 4096, 4096},
                                {8, 4096, 4096}}) {
    const kernels::GemmTiling t = kernels::tile_gemm(chip, m, k, n, DType::bf16);
    const MatmulShape step{t.tm, t.tk, t.tn};
    const std::int64_t compute = matmul_cycles(*dataflow, chip.mxu, step, DType::bf16);
    const std::int64_t vmem = vmem_bound_cycles(static_cast<double>(matmul_vmem_bytes(chip.mxu, step, DType::bf16)),
                                                chip.vmem.bandwidth, chip.clock);
    const double margin = static_cast<double>(compute) / static_cast<double>(vmem);
    RecordProperty(fmt::format("margin_{}x{}x{}", m, k, n), fmt::format("{:.3f}", margin));
    EXPECT_GT(margin, 1.5) << m << "x" << k << "x" << n << " step " << t.tm << "x" << t.tk << "x" << t.tn
                           << ": " << compute << " MXU cycles vs " << vmem << " VMEM cycles";
  }
}

// Lowering vmem.bandwidth to 1000 B per cycle (1.05 TB/s at 1.05 GHz) makes the matmul VMEM-bound:
// ceil(13,107,200 / 1000) = 13,108 cycles instead of 4478.
TEST(VmemTraffic, LowVmemBandwidthMakesAMatmulVmemBoundByBytesOverBandwidth) {
  ChipSpec chip = v4_like();
  chip.vmem.bandwidth = BytesPerSecond(1.05e12);
  ir::Program p;
  p.add(matmul(0, 1024, 512, 512), {}, "mm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 13'108 / 1.05e9, kPicosecond);
  EXPECT_EQ(r.unit(HwUnit::mxu).bytes.count(), kMatmulVmemBytes);
}

// At the bundled v4's 8602 GB/s (8192 B per cycle) the same matmul needs 1600 VMEM cycles: compute-bound.
TEST(VmemTraffic, AtTheV4VmemBandwidthTheSameMatmulIsComputeBound) {
  ChipSpec chip = v4_like();
  chip.vmem.bandwidth = BytesPerSecond(8602e9);
  ir::Program p;
  p.add(matmul(0, 1024, 512, 512), {}, "mm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), kMatmulCycles / 1.05e9, kPicosecond);
  EXPECT_EQ(r.unit(HwUnit::mxu).bytes.count(), kMatmulVmemBytes);
}

// Back-to-back VMEM-bound matmuls chain their VMEM time: three of them take 3 x 13,108 cycles.
TEST(VmemTraffic, BackToBackVmemBoundMatmulsTakeTheSumOfTheirVmemTimes) {
  ChipSpec chip = v4_like();
  chip.vmem.bandwidth = BytesPerSecond(1.05e12);
  ir::Program p;
  std::uint32_t prev = p.add(matmul(0, 1024, 512, 512), {}, "mm0");
  prev = p.add(matmul(0, 1024, 512, 512), {prev}, "mm1");
  p.add(matmul(0, 1024, 512, 512), {prev}, "mm2");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 3 * 13'108 / 1.05e9, kPicosecond);
}

// A vector op with declared operand bytes: 1,048,576 element-ops (1024 cycles at 1024 per cycle) reading and
// writing 8 MiB at 4000 B per cycle: ceil(8,388,608 / 4000) = 2098 cycles.
TEST(VmemTraffic, AVectorOpIsBoundByItsDeclaredOperandBytes) {
  ChipSpec chip = v4_like();
  chip.vmem.bandwidth = BytesPerSecond(4000 * 1.05e9);
  ir::Instruction v;
  v.kind = ir::OpKind::vector;
  v.vector.op = ir::VectorOp::elementwise;
  v.vector.elements = 1 << 20;
  v.bytes = 8ULL << 20;
  ir::Program p;
  p.add(v, {}, "op");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 2098 / 1.05e9, kPicosecond);
  EXPECT_EQ(r.unit(HwUnit::vpu).bytes.count(), 8ULL << 20);
}

// ---- per-array MXU utilization ----------------------------------------------------------------------------

TEST(ArrayUtilization, PartialTilesCountTheMacsTheyReallyDo) {
  const ChipSpec chip = v4_like();
  // k = 640, n = 128: 5 weight tiles of 128 x 128 (array 0 gets tiles 0 and 4); m = 128 rows each.
  EXPECT_EQ(matmul_array_macs(chip.mxu, MatmulShape{128, 640, 128}, 0), 2.0 * 128 * 128 * 128);
  EXPECT_EQ(matmul_array_macs(chip.mxu, MatmulShape{128, 640, 128}, 1), 128.0 * 128 * 128);
  // k = 600: the fifth tile has 88 rows.
  EXPECT_EQ(matmul_array_macs(chip.mxu, MatmulShape{128, 600, 128}, 0), 128.0 * (128 + 88) * 128);
  double sum = 0;
  for (int a = 0; a < 4; ++a) sum += matmul_array_macs(chip.mxu, MatmulShape{100, 600, 300}, a);
  EXPECT_EQ(sum, 100.0 * 600 * 300);
}

// Both TensorCores run m=128, k=640, n=128: 5 tiles over 4 arrays, so array 0 streams 2 tiles and arrays 1-3
// one each. The step is array 0's 128 + 128 + 128 + 128 + 128 - 2 = 638 cycles; array 0 did 2 x 128^3 MACs,
// the others 128^3: per-array utilization max 2 x 128 / 638, min 128 / 638; the chip's mean 640 / (4 x 638).
TEST(ArrayUtilization, ArraysDealtFewerTilesReportLowerUtilization) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(matmul(0, 128, 640, 128), {}, "mm.core0");
  p.add(matmul(1, 128, 640, 128), {}, "mm.core1");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 638 / 1.05e9, kPicosecond);
  const double cycles = r.step_time.value() * 1.05e9;  // 638 up to the picosecond rounding
  EXPECT_NEAR(r.mxu_array_utilization.max, 256.0 / cycles, 1e-12);
  EXPECT_NEAR(r.mxu_array_utilization.min, 128.0 / cycles, 1e-12);
  EXPECT_DOUBLE_EQ(r.mxu_array_utilization.max, 2 * r.mxu_array_utilization.min);
  EXPECT_NEAR(r.mxu_array_utilization.mean, r.unit(HwUnit::mxu).utilization.mean, 1e-12);
  EXPECT_NEAR(r.unit(HwUnit::mxu).utilization.mean, 640.0 / (4 * cycles), 1e-12);
}

}  // namespace
}  // namespace tpusim::models
