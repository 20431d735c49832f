// The one number formatter for stdout (tools/src/readable.h): four significant digits, the prefix that keeps
// the mantissa in [1, 1000), no e-notation; and the quantity a summary.json key names.
#include "tools/src/readable.h"

#include <gtest/gtest.h>

namespace {

using tpusim::tools::Quantity;
using tpusim::tools::quantity_of_key;
using tpusim::tools::readable;
using tpusim::tools::readable_delta;

TEST(Readable, TimesTakeFourSignificantDigitsAndTheirPrefix) {
  EXPECT_EQ(readable(0.0458081, Quantity::seconds), "45.81 ms");  // was "45.8081 ms"
  EXPECT_EQ(readable(2.0, Quantity::seconds), "2 s");
  EXPECT_EQ(readable(0.99996, Quantity::seconds), "1 s");  // rounded before the prefix is chosen
  EXPECT_EQ(readable(1.5e-7, Quantity::seconds), "150 ns");
  EXPECT_EQ(readable(12345.6, Quantity::seconds), "12350 s");  // past the largest prefix: digits, no e-notation
  EXPECT_EQ(readable(0, Quantity::seconds), "0 s");
  EXPECT_EQ(readable(5.5e-17, Quantity::seconds), "0 ps");  // below a thousandth of the smallest prefix
}

TEST(Readable, BytesUseBinaryPrefixes) {
  EXPECT_EQ(readable(835648.0 * 1024, Quantity::bytes), "816.1 MiB");  // was "835648 KiB"
  EXPECT_EQ(readable(512, Quantity::bytes), "512 B");
  EXPECT_EQ(readable(34359738368.0, Quantity::bytes), "32 GiB");
  // The mantissa of the bytes themselves: 100,777,984 B is 96.108 MiB (a decimally rounded 1.008e8 read
  // 96.13); 1,048,575 B rounds up to the next prefix.
  EXPECT_EQ(readable(100777984.0, Quantity::bytes), "96.11 MiB");
  EXPECT_EQ(readable(104943616.0, Quantity::bytes), "100.1 MiB");
  EXPECT_EQ(readable(1048575.0, Quantity::bytes), "1 MiB");
  EXPECT_EQ(readable(0, Quantity::bytes), "0 B");
}

TEST(Readable, FlopsRatesAndCountsUseDecimalPrefixes) {
  EXPECT_EQ(readable(1.165e17, Quantity::flops), "116.5 PFLOP");  // was "1.165e+05 TFLOP"
  EXPECT_EQ(readable(275e12, Quantity::flops_per_s), "275 TFLOP/s");
  EXPECT_EQ(readable(1.2e12, Quantity::bytes_per_s), "1.2 TB/s");
  EXPECT_EQ(readable(12346, Quantity::per_s), "12.35 k/s");
  EXPECT_EQ(readable(4, Quantity::count), "4");
  EXPECT_EQ(readable(2.5e6, Quantity::count), "2.5 M");
}

TEST(Readable, FractionsArePercentagesAndTheirDifferencesPercentagePoints) {
  EXPECT_EQ(readable(0.41234, Quantity::fraction), "41.23%");
  EXPECT_EQ(readable_delta(-0.025, Quantity::fraction), "-2.5 pp");
  EXPECT_EQ(readable_delta(0.00125, Quantity::seconds), "+1.25 ms");
  EXPECT_EQ(readable_delta(-3.25 * 1048576, Quantity::bytes), "-3.25 MiB");
  EXPECT_EQ(readable_delta(0, Quantity::seconds), "+0 s");
}

TEST(Readable, SummaryKeysNameTheirQuantity) {
  EXPECT_EQ(quantity_of_key("metrics.step_time_s"), Quantity::seconds);
  EXPECT_EQ(quantity_of_key("metrics.tokens_per_s"), Quantity::per_s);
  EXPECT_EQ(quantity_of_key("metrics.peak_flops_per_s"), Quantity::flops_per_s);
  EXPECT_EQ(quantity_of_key("collectives.all_reduce.bytes_per_chip"), Quantity::bytes);
  EXPECT_EQ(quantity_of_key("memory.categories.weights"), Quantity::bytes);
  EXPECT_EQ(quantity_of_key("job.losses_s.restore"), Quantity::seconds);
  EXPECT_EQ(quantity_of_key("metrics.model_flops"), Quantity::flops);
  EXPECT_EQ(quantity_of_key("metrics.mfu"), Quantity::fraction);
  EXPECT_EQ(quantity_of_key("links.utilization.mean"), Quantity::fraction);
  EXPECT_EQ(quantity_of_key("metrics.chips"), Quantity::count);
  // Indices under memory. are no sizes: compare showed the chip of memory.in_use as "0 B".
  EXPECT_EQ(quantity_of_key("memory.in_use.chip"), Quantity::count);
  EXPECT_EQ(quantity_of_key("memory.in_use.stage"), Quantity::count);
  EXPECT_EQ(quantity_of_key("memory.in_use.peak_bytes"), Quantity::bytes);
}

}  // namespace
