// Units as types: parse_quantity() turns "<number> <unit>" text into SI values tagged with a dimension, and
// format_*() renders them back with a readable prefix. Decimal prefixes are powers of 1000, binary ones powers
// of 1024, and bit rates are stored as bytes per second.
#include "tpusim/core/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tpusim {
namespace {

// Parses text that must be valid and returns its value, failing the test (not crashing) otherwise.
ParsedQuantity parse_ok(std::string_view text) {
  const auto q = parse_quantity(text);
  EXPECT_TRUE(q.has_value()) << "'" << text << "' should parse";
  return q.value_or(ParsedQuantity{std::numeric_limits<double>::quiet_NaN(), Dimension::watts});
}

TEST(ParseQuantity, BandwidthInDecimalBytesPerSecond) {
  const auto q = parse_ok("1200 GB/s");
  EXPECT_EQ(q.dimension, Dimension::bytes_per_second);
  EXPECT_EQ(q.si, 1.2e12);
  EXPECT_EQ(parse_ok("2 TB/s").si, 2e12);
  EXPECT_EQ(parse_ok("819 GB/s").si, 819e9);
  EXPECT_EQ(parse_ok("5 MB/s").si, 5e6);
  EXPECT_EQ(parse_ok("3 KB/s").si, 3e3);
  EXPECT_EQ(parse_ok("7 B/s").si, 7.0);
}

TEST(ParseQuantity, BandwidthInBinaryBytesPerSecond) {
  EXPECT_EQ(parse_ok("1 GiB/s").si, 1073741824.0);
  EXPECT_EQ(parse_ok("2 MiB/s").si, 2097152.0);
  EXPECT_EQ(parse_ok("1 KiB/s").dimension, Dimension::bytes_per_second);
}

TEST(ParseQuantity, BitRatesAreStoredAsBytesPerSecond) {
  const auto q = parse_ok("496 Gb/s");
  EXPECT_EQ(q.dimension, Dimension::bytes_per_second);
  EXPECT_EQ(q.si, 62e9);
  EXPECT_EQ(parse_ok("100 Gb/s").si, 12.5e9);
  EXPECT_EQ(parse_ok("8 Mb/s").si, 1e6);
  EXPECT_EQ(parse_ok("1 Tb/s").si, 125e9);
  EXPECT_EQ(parse_ok("8 Kb/s").si, 1000.0);
  EXPECT_EQ(parse_ok("16 b/s").si, 2.0);
}

TEST(ParseQuantity, SizesUseBinaryPrefixesForIBAndDecimalForB) {
  const auto q = parse_ok("16 MiB");
  EXPECT_EQ(q.dimension, Dimension::bytes);
  EXPECT_EQ(q.si, 16777216.0);
  EXPECT_EQ(parse_ok("32 GiB").si, 34359738368.0);
  EXPECT_EQ(parse_ok("1 TiB").si, 1099511627776.0);
  EXPECT_EQ(parse_ok("4 KiB").si, 4096.0);
  EXPECT_EQ(parse_ok("16 GB").si, 16e9);
  EXPECT_EQ(parse_ok("2 TB").si, 2e12);
  EXPECT_EQ(parse_ok("3 MB").si, 3e6);
  EXPECT_EQ(parse_ok("1 KB").si, 1000.0);
  EXPECT_EQ(parse_ok("1 kB").si, 1000.0);
  EXPECT_EQ(parse_ok("512 B").si, 512.0);
}

TEST(ParseQuantity, Frequencies) {
  const auto q = parse_ok("1.05 GHz");
  EXPECT_EQ(q.dimension, Dimension::hertz);
  EXPECT_DOUBLE_EQ(q.si, 1.05e9);
  EXPECT_EQ(parse_ok("1050 MHz").si, 1.05e9);
  EXPECT_EQ(parse_ok("100 kHz").si, 1e5);
  EXPECT_EQ(parse_ok("60 Hz").si, 60.0);
}

TEST(ParseQuantity, Durations) {
  const auto q = parse_ok("1 us");
  EXPECT_EQ(q.dimension, Dimension::seconds);
  EXPECT_EQ(q.si, 1e-6);
  EXPECT_DOUBLE_EQ(parse_ok("500 ns").si, 500e-9);  // 500 x 1e-9 is within an ulp, not exact
  EXPECT_EQ(parse_ok("100 ms").si, 0.1);
  EXPECT_EQ(parse_ok("2 s").si, 2.0);
  EXPECT_DOUBLE_EQ(parse_ok("250 ps").si, 250e-12);
  EXPECT_DOUBLE_EQ(parse_ok("1.5 us").si, 1.5e-6);
}

TEST(ParseQuantity, ComputeRatesIncludingIntegerOps) {
  const auto q = parse_ok("275 TFLOP/s");
  EXPECT_EQ(q.dimension, Dimension::flops_per_second);
  EXPECT_EQ(q.si, 275e12);
  EXPECT_DOUBLE_EQ(parse_ok("1.1 PFLOP/s").si, 1.1e15);
  EXPECT_EQ(parse_ok("500 GFLOP/s").si, 500e9);
  EXPECT_EQ(parse_ok("7 FLOP/s").si, 7.0);
  const auto ops = parse_ok("393 TOP/s");  // int8 ops share the compute-rate dimension
  EXPECT_EQ(ops.dimension, Dimension::flops_per_second);
  EXPECT_EQ(ops.si, 393e12);
}

TEST(ParseQuantity, Power) {
  const auto q = parse_ok("192 W");
  EXPECT_EQ(q.dimension, Dimension::watts);
  EXPECT_EQ(q.si, 192.0);
  EXPECT_EQ(parse_ok("2 kW").si, 2000.0);
  EXPECT_DOUBLE_EQ(parse_ok("500 mW").si, 0.5);
}

TEST(ParseQuantity, SpaceBetweenNumberAndUnitIsOptionalAndOuterSpaceIgnored) {
  EXPECT_EQ(parse_ok("2TB/s").si, 2e12);
  EXPECT_EQ(parse_ok("16MiB").si, 16777216.0);
  EXPECT_EQ(parse_ok("1 us  ").si, 1e-6);
  EXPECT_EQ(parse_ok("1e3 GB/s").si, 1e12);
}

TEST(ParseQuantity, RejectsABareNumber) {
  EXPECT_FALSE(parse_quantity("100").has_value());
  EXPECT_FALSE(parse_quantity("1.05").has_value());
}

TEST(ParseQuantity, RejectsUnknownOrMiscasedUnits) {
  EXPECT_FALSE(parse_quantity("100 gb/s").has_value());
  EXPECT_FALSE(parse_quantity("100 GBps").has_value());
  EXPECT_FALSE(parse_quantity("1 ghz").has_value());
  EXPECT_FALSE(parse_quantity("16 Mib").has_value());
  EXPECT_FALSE(parse_quantity("1 GB/s extra").has_value());
}

TEST(ParseQuantity, RejectsTextWithoutANumber) {
  EXPECT_FALSE(parse_quantity("GB/s").has_value());
  EXPECT_FALSE(parse_quantity("").has_value());
  EXPECT_FALSE(parse_quantity("fast").has_value());
}

TEST(ParseQuantity, RejectsInfinityAndNotANumber) {
  // strtod accepts "inf", "infinity" and "nan"; a config value of "inf GB/s" would pass positive() checks.
  EXPECT_FALSE(parse_quantity("inf GB/s").has_value());
  EXPECT_FALSE(parse_quantity("nan B/s").has_value());
}

// Numbers are decimal everywhere, as integers are: strtod would read hexadecimal ("0x10 GB/s" as 16 GB/s,
// "0x1p-1" as 0.5).
TEST(ParseQuantity, RejectsHexadecimalNumbers) {
  EXPECT_FALSE(parse_quantity("0x10 GB/s").has_value());
  EXPECT_FALSE(parse_quantity("0x1F4 ns").has_value());
  EXPECT_FALSE(parse_decimal("0x1p-1").has_value());
  EXPECT_FALSE(parse_decimal("-0X10").has_value());
  EXPECT_TRUE(looks_hexadecimal("0x1p-1"));
  EXPECT_TRUE(looks_hexadecimal("-0X10"));
  EXPECT_FALSE(looks_hexadecimal("0.5"));
}

TEST(ParseDecimal, ReadsSignsPointsAndExponents) {
  EXPECT_EQ(parse_decimal("0.5"), 0.5);
  EXPECT_EQ(parse_decimal("-2.5e3"), -2500.0);
  EXPECT_EQ(parse_decimal("+.5"), 0.5);
  EXPECT_EQ(parse_decimal("5."), 5.0);
  EXPECT_EQ(parse_decimal("1E-2"), 0.01);
  for (const char* bad : {"", ".", "-", "e5", "5e", "1e+", "inf", "nan", "1_200", "1,200", " 5", "5 "}) {
    EXPECT_FALSE(parse_decimal(bad).has_value()) << bad;
  }
  EXPECT_EQ(decimal_number_length("1.5e3 GB/s"), 5U);
  EXPECT_EQ(decimal_number_length("5 eV"), 1U);  // an e with no digits after it is not an exponent
  EXPECT_EQ(parse_quantity("1.5e3 GB/s")->si, 1.5e12);
}

TEST(UnitsFor, ListsEveryUnitOfADimension) {
  EXPECT_EQ(units_for(Dimension::seconds), "ps, ns, us, ms, s, min, h, d");
  EXPECT_EQ(units_for(Dimension::hertz), "Hz, kHz, MHz, GHz");
  EXPECT_EQ(units_for(Dimension::watts), "W, kW, mW");
}

TEST(DimensionName, NamesEachDimensionForErrors) {
  EXPECT_EQ(dimension_name(Dimension::bytes), "size");
  EXPECT_EQ(dimension_name(Dimension::bytes_per_second), "bandwidth");
  EXPECT_EQ(dimension_name(Dimension::seconds), "duration");
  EXPECT_EQ(dimension_name(Dimension::hertz), "frequency");
  EXPECT_EQ(dimension_name(Dimension::flops_per_second), "compute rate");
  EXPECT_EQ(dimension_name(Dimension::watts), "power");
}

TEST(FormatBandwidth, PicksTheLargestPrefixKeepingTheMantissaAtLeastOne) {
  EXPECT_EQ(format_bandwidth(BytesPerSecond(1.2e12)), "1.2 TB/s");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(62e9)), "62 GB/s");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(16e9)), "16 GB/s");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(999e6)), "999 MB/s");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(12.5)), "12.5 B/s");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(0)), "0 B/s");
}

TEST(FormatBytes, UsesBinaryPrefixesForExactMultiples) {
  EXPECT_EQ(format_bytes(MiB(16)), "16 MiB");
  EXPECT_EQ(format_bytes(GiB(32)), "32 GiB");
  EXPECT_EQ(format_bytes(GiB(95)), "95 GiB");
  EXPECT_EQ(format_bytes(KiB(4)), "4 KiB");
  EXPECT_EQ(format_bytes(Bytes(1ULL << 40)), "1 TiB");
  EXPECT_EQ(format_bytes(Bytes(1536)), "1536 B");
  EXPECT_EQ(format_bytes(Bytes(0)), "0 B");
}

TEST(FormatBytes, RendersWholeDecimalGigabytesAsGB) {
  EXPECT_EQ(format_bytes(Bytes(3'000'000'000ULL)), "3 GB");  // not a multiple of 1024
  // 16 GB (v5e HBM) is a multiple of 1024 too; the form with the smallest number wins.
  EXPECT_EQ(format_bytes(Bytes(16'000'000'000ULL)), "16 GB");
  EXPECT_EQ(format_bytes(Bytes(32'000'000'000ULL)), "32 GB");
}

TEST(FormatTime, PicksAPrefixFromPicosecondsToSeconds) {
  EXPECT_EQ(format_time(Seconds(499.6e-6)), "499.6 us");
  EXPECT_EQ(format_time(Seconds(1e-6)), "1 us");
  EXPECT_EQ(format_time(Seconds(500e-9)), "500 ns");
  EXPECT_EQ(format_time(Seconds(0.1)), "100 ms");
  EXPECT_EQ(format_time(Seconds(2.5)), "2.5 s");
  EXPECT_EQ(format_time(Seconds(250e-12)), "250 ps");
  EXPECT_EQ(format_time(Seconds(0)), "0 s");
}

TEST(FormatFrequency, RendersClocks) {
  EXPECT_EQ(format_frequency(Hertz(1.05e9)), "1.05 GHz");
  EXPECT_EQ(format_frequency(Hertz(940e6)), "940 MHz");
  EXPECT_EQ(format_frequency(Hertz(1.75e9)), "1.75 GHz");
}

TEST(FormatFlops, RendersComputeRates) {
  EXPECT_EQ(format_flops(FlopsPerSecond(275e12)), "275 TFLOP/s");
  EXPECT_EQ(format_flops(FlopsPerSecond(1.1e15)), "1.1 PFLOP/s");
  EXPECT_EQ(format_flops(FlopsPerSecond(45e9)), "45 GFLOP/s");
}

TEST(FormatWatts, RendersPower) {
  EXPECT_EQ(format_watts(Watts(192)), "192 W");
  EXPECT_EQ(format_watts(Watts(2500)), "2.5 kW");
  EXPECT_EQ(format_watts(Watts(0.35)), "350 mW");
  EXPECT_EQ(format_watts(Watts(0)), "0 W");
}

// The run-time dimensions (the sweeps' expressions compute with them) and the display units the formatters
// and the sweeps' rendered values both pick from.
TEST(UnitDim, EachDimensionHasItsPowersAndALabel) {
  EXPECT_EQ(unit_dim(Dimension::bytes_per_second), (UnitDim{{1, -1, 0, 0}}));
  EXPECT_EQ(unit_dim(Dimension::flops_per_second), (UnitDim{{0, -1, 1, 0}}));
  EXPECT_EQ(unit_dim(Dimension::hertz), (UnitDim{{0, -1, 0, 0}}));
  EXPECT_TRUE(UnitDim{}.none());
  EXPECT_EQ(unit_dim_label(unit_dim(Dimension::bytes_per_second)), "B/s");
  EXPECT_EQ(unit_dim_label(unit_dim(Dimension::hertz)), "1/s");
  EXPECT_EQ(unit_dim_label(UnitDim{{-1, 0, 1, 0}}), "FLOP/B");
  EXPECT_EQ(unit_dim_label(UnitDim{{1, 2, 0, 0}}), "B*s^2");
  EXPECT_EQ(unit_dim_label(UnitDim{{0, 0, 0, -1}}), "1/W");
  EXPECT_EQ(unit_dim_label(UnitDim{{0, -1, 0, -1}}), "1/(s*W)");
  EXPECT_EQ(unit_dim_label(UnitDim{}), "1");
}

TEST(DisplayUnit, TheLargestUnitKeepingTheMantissaAtLeastOneElseTheSmallest) {
  EXPECT_EQ(display_unit(Dimension::bytes_per_second, 1.2e12).symbol, "TB/s");
  EXPECT_EQ(display_unit(Dimension::bytes_per_second, 999e9).symbol, "GB/s");
  EXPECT_EQ(display_unit(Dimension::seconds, 4.99e-4).symbol, "us");
  EXPECT_EQ(display_unit(Dimension::seconds, 3600).symbol, "s");
  EXPECT_EQ(display_unit(Dimension::seconds, 0).symbol, "ps");
  EXPECT_EQ(display_unit(Dimension::seconds, -2e-3).symbol, "ms");
  EXPECT_EQ(display_unit(Dimension::flops_per_second, 2e18).symbol, "PFLOP/s");
  EXPECT_EQ(display_unit(Dimension::watts, 0.5).symbol, "mW");
  EXPECT_EQ(display_units(Dimension::hertz).size(), 4U);
}

TEST(FormatAndParse, RoundTripForConfigValues) {
  for (const char* text : {"1200 GB/s", "62 GB/s", "2.765 TB/s", "45 GB/s"}) {
    const BytesPerSecond r(parse_ok(text).si);
    EXPECT_EQ(parse_ok(format_bandwidth(r)).si, r.value()) << text;
  }
  for (const char* text : {"1.05 GHz", "940 MHz", "1.5 GHz"}) {
    const Hertz f(parse_ok(text).si);
    EXPECT_DOUBLE_EQ(parse_ok(format_frequency(f)).si, f.value()) << text;
  }
}

TEST(UnitArithmetic, BytesOverBandwidthIsTime) {
  EXPECT_EQ((MiB(16) / BytesPerSecond(16.0 * 1024 * 1024)).value(), 1.0);
  EXPECT_EQ((Bytes(1200) / BytesPerSecond(1.2e12)).value(), 1e-9);
}

TEST(UnitArithmetic, CyclesAndTimeConvertAtAClock) {
  EXPECT_EQ(cycles_to_time(1050, Hertz(1.05e9)).value(), 1e-6);
  EXPECT_EQ(time_to_cycles(Seconds(2e-6), Hertz(1e9)), 2000.0);
}

TEST(UnitArithmetic, QuantitiesOfOneDimensionAddAndCompare) {
  const BytesPerSecond a(1e9), b(2e9);
  EXPECT_EQ((a + b).value(), 3e9);
  EXPECT_EQ((b - a).value(), 1e9);
  EXPECT_EQ(b / a, 2.0);
  EXPECT_TRUE(a < b);
  EXPECT_EQ((MiB(1) + KiB(1)).count(), 1049600u);
}

}  // namespace
}  // namespace tpusim
