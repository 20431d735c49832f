// The plotting layer every chart shares (tools/src/charts/plot_axis.h, tools/src/charts/svg.h): round ticks in 1-2-5 steps
// labelled in the quantity's unit, legends in numeric order, heatmap cells in the metric's unit, and the link
// heatmap with one segment per directed link and its failed chips and links marked. Pure C++.
#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/topology/specs.h"
#include "tools/src/charts/plot_axis.h"
#include "tools/src/charts/svg.h"

namespace {

using tpusim::tools::Quantity;
using tpusim::tools::log_ticks;
using tpusim::tools::nice_ticks;
using tpusim::tools::tick_label;

std::vector<std::string> labels(const std::vector<double>& ticks, Quantity q) {
  std::vector<std::string> out;
  for (double t : ticks) out.push_back(tick_label(t, q));
  return out;
}

// The text of every <text> element, in document order.
std::vector<std::string> texts(const std::string& svg) {
  std::vector<std::string> out;
  const std::regex text(R"(<text[^>]*>([^<]*)</text>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::size_t count_of(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

TEST(PlotTicks, LinearTicksStepOneTwoOrFiveTimesAPowerOfTenAndCoverTheRange) {
  // [0, 1.38e12] FLOP: a fifth of the range is 2.76e11, rounded up to 5e11.
  EXPECT_EQ(nice_ticks(0, 1.38e12, Quantity::flops, false), (std::vector<double>{0, 5e11, 1e12, 1.5e12}));
  EXPECT_EQ(labels(nice_ticks(0, 1.38e12, Quantity::flops, false), Quantity::flops),
            (std::vector<std::string>{"0 FLOP", "500 GFLOP", "1 TFLOP", "1.5 TFLOP"}));
  // [10.1 ms, 12.3 ms]: step 0.5 ms, from 10 ms to 12.5 ms.
  EXPECT_EQ(labels(nice_ticks(0.0101, 0.0123, Quantity::seconds, false), Quantity::seconds),
            (std::vector<std::string>{"10 ms", "10.5 ms", "11 ms", "11.5 ms", "12 ms", "12.5 ms"}));
  EXPECT_EQ(labels(nice_ticks(0, 0.35, Quantity::fraction, false), Quantity::fraction),
            (std::vector<std::string>{"0%", "10%", "20%", "30%", "40%"}));
  EXPECT_EQ(labels(nice_ticks(0, 9e14, Quantity::flops_per_s, false), Quantity::flops_per_s),
            (std::vector<std::string>{"0 FLOP/s", "200 TFLOP/s", "400 TFLOP/s", "600 TFLOP/s", "800 TFLOP/s",
                                      "1 PFLOP/s"}));
  // [40, 190] GB/s: a fifth is 30 GB/s, rounded up to 50 GB/s; the ticks start at the multiple at or below 40.
  EXPECT_EQ(labels(nice_ticks(40e9, 190e9, Quantity::bytes_per_s, false), Quantity::bytes_per_s),
            (std::vector<std::string>{"0 B/s", "50 GB/s", "100 GB/s", "150 GB/s", "200 GB/s"}));
  // One value: 10% either side of it, ticked in the same way.
  EXPECT_EQ(labels(nice_ticks(5, 5, Quantity::count, false), Quantity::count),
            (std::vector<std::string>{"4.4", "4.6", "4.8", "5", "5.2", "5.4", "5.6"}));
}

TEST(PlotTicks, AnIntegerAxisHasNoTickBetweenTwoWholeNumbers) {
  EXPECT_EQ(nice_ticks(1, 3, Quantity::count, false), (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  EXPECT_EQ(nice_ticks(1, 3, Quantity::count, true), (std::vector<double>{1, 2, 3}));  // never "1.5 chips"
  EXPECT_EQ(nice_ticks(0, 35, Quantity::count, true), (std::vector<double>{0, 10, 20, 30, 40}));
}

TEST(PlotTicks, BytesAreTickedInTheirBinaryUnit) {
  EXPECT_EQ(labels(nice_ticks(0, 3 * 1073741824.0, Quantity::bytes, false), Quantity::bytes),
            (std::vector<std::string>{"0 B", "1 GiB", "2 GiB", "3 GiB"}));
  EXPECT_EQ(labels(nice_ticks(0, 700 * 1048576.0, Quantity::bytes, false), Quantity::bytes),
            (std::vector<std::string>{"0 B", "200 MiB", "400 MiB", "600 MiB", "800 MiB"}));
}

TEST(PlotTicks, LogTicksArePowersOfTenOrForBytesOfTwo) {
  EXPECT_EQ(labels(log_ticks(3e11, 9e14), Quantity::flops_per_s),
            (std::vector<std::string>{"100 GFLOP/s", "1 TFLOP/s", "10 TFLOP/s", "100 TFLOP/s", "1 PFLOP/s"}));
  EXPECT_EQ(log_ticks(2e14, 8e14), (std::vector<double>{1e14, 2e14, 5e14, 1e15}));  // within one decade
  // 1 KiB .. 1 GiB is twenty doublings: every third power of two (2^9 .. 2^30).
  EXPECT_EQ(labels(log_ticks(1024, 1073741824.0, Quantity::bytes), Quantity::bytes),
            (std::vector<std::string>{"512 B", "4 KiB", "32 KiB", "256 KiB", "2 MiB", "16 MiB", "128 MiB", "1 GiB"}));
  // Forty decades: every sixth, 1e-24 .. 1e24.
  EXPECT_EQ(log_ticks(1e-20, 1e20).size(), 9u);
  EXPECT_EQ(log_ticks(1e-20, 1e20).front(), 1e-24);
}

TEST(PlotTicks, AColumnsQuantityComesFromItsUnitOrItsName) {
  using tpusim::UnitDim;
  using tpusim::tools::quantity_of;
  EXPECT_EQ(quantity_of(UnitDim{{0, 1, 0, 0}}, "step_time_s"), Quantity::seconds);
  EXPECT_EQ(quantity_of(UnitDim{{1, -1, 0, 0}}, "achieved_hbm_bytes_per_s"), Quantity::bytes_per_s);
  EXPECT_EQ(quantity_of(UnitDim{{0, -1, 1, 0}}, "achieved_flops_per_s"), Quantity::flops_per_s);
  EXPECT_EQ(quantity_of(UnitDim{}, "mfu"), Quantity::fraction);
  EXPECT_EQ(quantity_of(UnitDim{}, "chips"), Quantity::count);
  EXPECT_EQ(quantity_of(UnitDim{{-1, 0, 1, 0}}, "arithmetic_intensity"), Quantity::count);
}

TEST(PlotLegend, SeriesAreListedByTheirNumericValueUnderTheirAxisName) {
  using tpusim::tools::Series;
  const std::vector<Series> series{{"180 GB/s", {1, 2}, {3, 4}, {}, {180e9}},
                                   {"45 GB/s", {1, 2}, {5, 6}, {}, {45e9}},
                                   {"90 GB/s", {1, 2}, {4, 5}, {}, {90e9}}};
  std::vector<std::string> order;
  for (const Series* s : tpusim::tools::legend_order(series)) order.push_back(s->name);
  EXPECT_EQ(order, (std::vector<std::string>{"45 GB/s", "90 GB/s", "180 GB/s"}));

  std::ostringstream out;
  tpusim::tools::write_line_chart_svg(series, "t", {"workload.batch", Quantity::count, false, true},
                                      {"step time", Quantity::seconds, false, false}, "chip.ici.link_bandwidth", out);
  const std::string svg = out.str();
  const auto t = texts(svg);
  const auto at = [&](const std::string& s) { return std::find(t.begin(), t.end(), s) - t.begin(); };
  ASSERT_LT(at("chip.ici.link_bandwidth"), static_cast<long>(t.size()));
  EXPECT_LT(at("chip.ici.link_bandwidth"), at("45 GB/s"));
  EXPECT_LT(at("45 GB/s"), at("90 GB/s"));
  EXPECT_LT(at("90 GB/s"), at("180 GB/s"));
  EXPECT_EQ(count_of(svg, "class=\"legend-entry\""), 3u);
  EXPECT_EQ(count_of(svg, "<circle"), 3u * 2 + 3);  // a marker per point, and one per legend entry
  // The x axis is whole batches (1, 2: no "1.5"), the y axis seconds: 3 s .. 6 s.
  EXPECT_EQ(std::count(t.begin(), t.end(), "1.5"), 0);
  EXPECT_NE(std::find(t.begin(), t.end(), "2"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "6 s"), t.end());
  for (const auto& s : t) EXPECT_EQ(s.find("e+"), std::string::npos) << s;
}

TEST(PlotHeatmap, CellsPrintTheMetricInItsUnitAndTheScaleHasRoundTicks) {
  using tpusim::tools::heatmap_cell_text;
  EXPECT_EQ(heatmap_cell_text(0.0123, Quantity::seconds), "12.3 ms");  // not 0.0123 s
  EXPECT_EQ(heatmap_cell_text(0.352, Quantity::fraction), "35.2%");    // not 0.352
  EXPECT_EQ(heatmap_cell_text(std::nullopt, Quantity::seconds), "-");

  tpusim::tools::Heatmap map;
  map.title = "h";
  map.x_label = "x";
  map.y_label = "y";
  map.value_label = "step_time_s (s)";
  map.quantity = Quantity::seconds;
  map.x_ticks = {"1", "2"};
  map.y_ticks = {"a"};
  map.panels.push_back({"", {{0.0123, 0.0171}}});
  std::ostringstream out;
  tpusim::tools::write_heatmap_svg(map, out);
  const auto t = texts(out.str());
  EXPECT_NE(std::find(t.begin(), t.end(), "12.3 ms"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "17.1 ms"), t.end());
  EXPECT_EQ(std::find(t.begin(), t.end(), "0.0123"), t.end());
  // The colour scale over [12.3 ms, 17.1 ms]: 12 ms to 18 ms in steps of 2 ms.
  EXPECT_EQ(count_of(out.str(), "class=\"scale-tick\""), 4u);
  for (const char* tick : {"12 ms", "14 ms", "16 ms", "18 ms"}) EXPECT_NE(std::find(t.begin(), t.end(), tick), t.end()) << tick;
}

TEST(PlotRoofline, TheRoofsMeetAtTheRidgePointAndEveryPointIsALabelledMarker) {
  // v4: 275 TFLOP/s over 1.08 TB/s of achievable HBM bandwidth: the ridge at 254.6 FLOP per byte.
  const std::vector<tpusim::tools::Roof> roofs{{"v4", 275e12, 1.08e12}};
  const std::vector<tpusim::tools::Series> groups{{"all", {30, 300, 3000}, {3e13, 2.5e14, 2.6e14}, {}, {}}};
  std::ostringstream out;
  tpusim::tools::write_roofline_svg(roofs, groups, {{"8", "64", "1024"}}, "r", "", out);
  const std::string svg = out.str();
  EXPECT_EQ(count_of(svg, "class=\"roof\""), 1u);
  EXPECT_EQ(count_of(svg, "class=\"point\""), 3u);
  const auto t = texts(svg);
  for (const char* text : {"ridge 254.6 FLOP/B", "peak 275 TFLOP/s", "8", "64", "1024", "v4: 275 TFLOP/s,", "HBM 1.08 TB/s",
                           "10 TFLOP/s", "1 PFLOP/s"}) {
    EXPECT_NE(std::find(t.begin(), t.end(), text), t.end()) << text;
  }
  for (const auto& s : t) EXPECT_EQ(s.find("e+"), std::string::npos) << s;
}

TEST(PlotLinks, OneSegmentPerDirectedLinkAndTheFailedOnesHatched) {
  using tpusim::test::make_chip;
  using tpusim::test::make_pod;
  const tpusim::Topology topo = tpusim::build_topology(make_pod({4, 4, 2}, {1, 1, 0}, {1, 1, 1}), make_chip("c", 6, 45));
  std::vector<double> load(topo.link_count());
  for (std::size_t i = 0; i < load.size(); ++i) load[i] = 0.3 * static_cast<double>(i % 5) / 4;  // busiest 30%
  tpusim::tools::LinkMapMarks marks;
  marks.failed_links = {tpusim::LinkId(3), topo.link(tpusim::LinkId(3)).reverse};
  std::ostringstream out;
  tpusim::tools::write_link_heatmap_svg(topo, load, "a title", marks, out);
  const std::string svg = out.str();
  EXPECT_EQ(count_of(svg, "class=\"link\""), topo.link_count());
  EXPECT_EQ(count_of(svg, "class=\"chip\""), topo.chip_count());
  EXPECT_EQ(count_of(svg, "fill=\"url(#failed)\"><title>link"), 2u);
  const auto t = texts(svg);
  EXPECT_NE(std::find(t.begin(), t.end(), "z = 1"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "30%"), t.end());  // the colour scale's top: the busiest link
  EXPECT_EQ(std::find(t.begin(), t.end(), "100%"), t.end());
  for (const auto& s : t) EXPECT_EQ(s.find("e+"), std::string::npos) << s;

  // A failed chip: its square and each of its links hatched (4 in-plane links each way, 1 z link each way).
  marks = {};
  marks.failed_chips = {tpusim::test::at(topo, 1, 1, 0)};
  std::ostringstream chip;
  tpusim::tools::write_link_heatmap_svg(topo, load, "a title", marks, chip);
  EXPECT_EQ(count_of(chip.str(), "fill=\"url(#failed)\"><title>link"), 10u);
  EXPECT_EQ(count_of(chip.str(), "fill=\"url(#failed)\" stroke=\"#444\"><title>chip"), 1u);
}

// A degraded link and a straggler chip keep their fill (the load) and get the dashed outline, apart from the
// failed marks, and the legend names them.
TEST(PlotLinks, DegradedLinksAndChipsAreOutlinedApartFromFailedOnes) {
  using tpusim::test::make_chip;
  using tpusim::test::make_pod;
  const tpusim::Topology topo = tpusim::build_topology(make_pod({4, 4, 2}, {1, 1, 0}, {1, 1, 1}), make_chip("c", 6, 45));
  const std::vector<double> load(topo.link_count(), 0.2);
  tpusim::tools::LinkMapMarks marks;
  marks.degraded_links = {tpusim::LinkId(5)};
  marks.degraded_chips = {tpusim::test::at(topo, 2, 1, 1)};
  marks.failed_links = {tpusim::LinkId(3), topo.link(tpusim::LinkId(3)).reverse};
  std::ostringstream out;
  tpusim::tools::write_link_heatmap_svg(topo, load, "a title", marks, out);
  const std::string svg = out.str();
  EXPECT_EQ(count_of(svg, "class=\"link degraded\""), 1u);
  EXPECT_EQ(count_of(svg, "class=\"chip degraded\""), 1u);
  EXPECT_EQ(count_of(svg, "class=\"link"), topo.link_count());
  EXPECT_EQ(count_of(svg, "class=\"chip"), topo.chip_count());
  EXPECT_EQ(count_of(svg, "fill=\"url(#failed)\"><title>link"), 2u);  // the failed cable only
  EXPECT_EQ(count_of(svg, ", degraded</title>"), 1u);                   // the link's tooltip
  EXPECT_EQ(count_of(svg, ": degraded</title>"), 1u);                   // the chip's
  const auto t = texts(svg);
  EXPECT_NE(std::find_if(t.begin(), t.end(), [](const std::string& s) { return s.rfind("degraded link or chip", 0) == 0; }),
            t.end());
  // Degraded and failed at once: failed wins (the chip's links are hatched, no outline).
  marks = {};
  marks.failed_chips = {tpusim::test::at(topo, 2, 1, 1)};
  marks.degraded_chips = marks.failed_chips;
  std::ostringstream both;
  tpusim::tools::write_link_heatmap_svg(topo, load, "a title", marks, both);
  EXPECT_EQ(count_of(both.str(), "class=\"chip degraded\""), 0u);
}

}  // namespace

TEST(PlotTicks, AGeometricSweepIsShownOnALogAxisAndPowersOfTwoAreTickedAtPowersOfTwo) {
  using tpusim::tools::all_powers_of_two;
  using tpusim::tools::wants_log_axis;
  // 256, 1024, 4096 (x4 each, 16x in all) and 10 k .. 640 k (x2 each, 64x): linear axes would crowd all but the
  // last one or two points into the first fifth of the width.
  EXPECT_TRUE(wants_log_axis({256, 1024, 4096}));
  EXPECT_TRUE(wants_log_axis({640000, 10000, 20000, 40000, 80000, 160000, 320000}));  // any order
  EXPECT_TRUE(wants_log_axis({1, 100}));                                              // a factor of 100 by itself
  EXPECT_FALSE(wants_log_axis({256, 1024}));          // two values are no series
  EXPECT_FALSE(wants_log_axis({1, 2, 3, 4, 5, 6, 7, 8, 9}));  // 9x, but arithmetic
  EXPECT_FALSE(wants_log_axis({2, 4, 8}));             // geometric, but only 4x
  EXPECT_FALSE(wants_log_axis({0, 1024, 4096}));       // a log axis cannot show 0
  EXPECT_TRUE(all_powers_of_two({256, 1024, 4096}));
  EXPECT_FALSE(all_powers_of_two({256, 1000}));
  EXPECT_FALSE(all_powers_of_two({0.5, 1}));
  // Powers of two on a log axis: 2^8 .. 2^12, every power (five doublings), each read in full.
  EXPECT_EQ(labels(log_ticks(256, 4096, Quantity::count, true), Quantity::count),
            (std::vector<std::string>{"256", "512", "1024", "2048", "4096"}));
  EXPECT_EQ(tick_label(1024, Quantity::count), "1024");
  EXPECT_EQ(tick_label(2000, Quantity::count), "2 k");  // a round thousand keeps its prefix
  EXPECT_EQ(tick_label(250000, Quantity::count), "250 k");
}

TEST(PlotLegend, LongEntriesWrapInsideTheMarginAndOneUnnamedSeriesHasNoLegend) {
  const std::vector<tpusim::tools::Roof> roofs{{"v4", 275e12, 1.08e12}};
  std::ostringstream roof;
  tpusim::tools::write_roofline_svg(roofs, {}, {}, "r", "", roof);
  const auto t = texts(roof.str());
  // "v4: 275 TFLOP/s, HBM 1.08 TB/s" is 30 characters: wider than the 26 the margin holds, broken after its comma.
  EXPECT_NE(std::find(t.begin(), t.end(), "v4: 275 TFLOP/s,"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "HBM 1.08 TB/s"), t.end());
  const std::string legend = roof.str().substr(roof.str().find("<g class=\"legend-entry\""));
  for (const auto& s : texts(legend)) EXPECT_LE(s.size(), 26u) << s;

  const tpusim::tools::PlotAxis x{"m", Quantity::count, false, true};
  const tpusim::tools::PlotAxis y{"step time", Quantity::seconds, false, false};
  std::ostringstream one, two;
  tpusim::tools::write_line_chart_svg({{"gemm", {1, 2}, {1e-3, 2e-3}, {}, {}}}, "t", x, y, "", one);
  EXPECT_EQ(count_of(one.str(), "legend-entry"), 0u);
  tpusim::tools::write_line_chart_svg({{"a", {1, 2}, {1e-3, 2e-3}, {}, {1}}, {"b", {1, 2}, {2e-3, 3e-3}, {}, {2}}}, "t",
                                      x, y, "", two);
  EXPECT_EQ(count_of(two.str(), "legend-entry"), 2u);
}

TEST(PlotRoofline, APointLabelThatWouldCoverAnotherGoesBelowItsMarkerOrIsLeftToTheTooltip) {
  // Three points 2% apart in intensity on the roof: their labels above right would overlap. The first is drawn
  // above, the second below, the third (both places taken) only as the marker's tooltip.
  const std::vector<tpusim::tools::Roof> roofs{{"v4", 275e12, 1.08e12}};
  const std::vector<tpusim::tools::Series> groups{{"all", {3000, 3060, 3120}, {2.6e14, 2.6e14, 2.6e14}, {}, {}}};
  std::ostringstream out;
  tpusim::tools::write_roofline_svg(roofs, groups, {{"1024", "2048", "4096"}}, "r", "", out);
  const std::string svg = out.str();
  EXPECT_EQ(count_of(svg, "class=\"point\""), 3u);
  const auto t = texts(svg);
  EXPECT_EQ(std::count(t.begin(), t.end(), "1024"), 1);
  EXPECT_EQ(std::count(t.begin(), t.end(), "2048"), 1);
  EXPECT_EQ(std::count(t.begin(), t.end(), "4096"), 0);
  EXPECT_NE(svg.find("<title>all 4096: "), std::string::npos);
}
