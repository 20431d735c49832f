// The cycle-level systolic array against the closed form: same cycles, exactly, and the right product.
#include "tpusim/models/systolic_reference.h"

#include <ostream>
#include <random>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "test_chips.h"

namespace tpusim::models {

// Found by argument-dependent lookup, so it lives in MatmulShape's namespace.
void PrintTo(const MatmulShape& s, std::ostream* os) { *os << s.m << "x" << s.k << "x" << s.n; }

namespace {

struct Operands {
  std::vector<std::int64_t> a, b, expected;
};

Operands random_operands(MatmulShape s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-4, 4);
  Operands o;
  o.a.resize(static_cast<std::size_t>(s.m * s.k));
  o.b.resize(static_cast<std::size_t>(s.k * s.n));
  for (auto& v : o.a) v = dist(rng);
  for (auto& v : o.b) v = dist(rng);
  o.expected.assign(static_cast<std::size_t>(s.m * s.n), 0);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t p = 0; p < s.k; ++p) {
      for (std::int64_t j = 0; j < s.n; ++j) o.expected[i * s.n + j] += o.a[i * s.k + p] * o.b[p * s.n + j];
    }
  }
  return o;
}

void expect_reference_matches_fast_model(const MxuSpec& mxu, MatmulShape s) {
  SCOPED_TRACE(::testing::Message() << s.m << "x" << s.k << "x" << s.n << " on " << mxu.per_core << " x "
                                  << mxu.rows << "x" << mxu.cols);
  const Operands o = random_operands(s, static_cast<unsigned>(s.m * 31 + s.k * 7 + s.n));
  const SystolicRun run = run_weight_stationary_reference(mxu, s, o.a, o.b);
  const auto fast = make_mxu_dataflow(MxuDataflow::weight_stationary);
  EXPECT_EQ(run.cycles, fast->bf16_cycles(mxu, s));
  EXPECT_EQ(run.c, o.expected);
}

class ReferenceOnV4Mxu : public ::testing::TestWithParam<MatmulShape> {};

TEST_P(ReferenceOnV4Mxu, AgreesWithTheClosedFormExactly) {
  expect_reference_matches_fast_model(testing::v4_like().mxu, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceOnV4Mxu,
                         ::testing::Values(MatmulShape{1, 1, 1}, MatmulShape{8, 128, 128},
                                           MatmulShape{129, 129, 129}, MatmulShape{300, 200, 100}),
                         [](const ::testing::TestParamInfo<MatmulShape>& info) {
                           const MatmulShape& s = info.param;
                           return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
                         });

// Small arrays put many tiles on each array, which exercises the double-buffered weight loads for m below,
// equal to and above R, and arrays that are not square.
TEST(ReferenceOnSmallArrays, AgreesWithTheClosedFormForManyTilesPerArray) {
  MxuSpec mxu;
  for (const auto& [per_core, rows, cols] : {std::tuple{1, 4, 4}, std::tuple{2, 8, 4}, std::tuple{3, 4, 8}}) {
    mxu.per_core = per_core;
    mxu.rows = rows;
    mxu.cols = cols;
    for (const MatmulShape s : {MatmulShape{1, 9, 9}, MatmulShape{3, 16, 20}, MatmulShape{4, 17, 5},
                                MatmulShape{8, 8, 8}, MatmulShape{13, 30, 11}, MatmulShape{40, 33, 17}}) {
      expect_reference_matches_fast_model(mxu, s);
    }
  }
}

// Two instructions back to back: the reference, carrying its controller state from the first to the second,
// must end each exactly where the fast schedule does, and still compute the right products.
TEST(ReferenceBackToBack, AgreesWithTheFastScheduleForTwoInstructions) {
  MxuSpec mxu;
  const auto fast = make_mxu_dataflow(MxuDataflow::weight_stationary);
  for (const auto& [per_core, rows, cols] : {std::tuple{1, 4, 4}, std::tuple{2, 8, 4}, std::tuple{4, 128, 128}}) {
    mxu.per_core = per_core;
    mxu.rows = rows;
    mxu.cols = cols;
    for (const auto& [first, second] : {std::pair{MatmulShape{3, 16, 20}, MatmulShape{13, 30, 11}},
                                        std::pair{MatmulShape{40, 33, 17}, MatmulShape{2, 9, 9}},
                                        std::pair{MatmulShape{129, 129, 129}, MatmulShape{8, 256, 256}}}) {
      SCOPED_TRACE(::testing::Message() << per_core << " x " << rows << "x" << cols);
      std::vector<MxuArrayState> ref(static_cast<std::size_t>(per_core)), model(ref.size());
      for (const MatmulShape s : {first, second}) {
        const Operands o = random_operands(s, 7);
        const SystolicRun run = run_weight_stationary_reference(mxu, s, o.a, o.b, 0, ref);
        EXPECT_EQ(run.cycles, fast->schedule(mxu, s, 0, model));
        EXPECT_EQ(run.c, o.expected);
      }
    }
  }
}

}  // namespace
}  // namespace tpusim::models
