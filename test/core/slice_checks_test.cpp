// The rules a pod keeps on its chip (check_pod_on_chip, core/src/slice_checks.cpp): ICI ports against the shape,
// wraparound by generation and the v5p slice shapes, each from a source in docs/hardware.md.
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/core/scenario.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

PodSpec slice(const std::string& chip, std::vector<int> shape, std::vector<int> wraparound,
              std::vector<int> cube = {}) {
  PodSpec pod;
  pod.name = "p";
  pod.chip = chip;
  pod.shape = std::move(shape);
  pod.wraparound = std::move(wraparound);
  pod.cube = std::move(cube);
  return pod;
}

Diagnostics check(const PodSpec& pod) {
  Diagnostics diags;
  check_pod_on_chip(pod, load_chip(pod.chip), "pod.", diags);
  return diags;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SliceChecks, AThreeAxisShapeOnATwoDimensionalChipIsRefusedAtTheShape) {
  const Diagnostics diags = check(slice("v5e", {2, 2, 2}, {0, 0, 0}));
  ASSERT_EQ(diags.size(), 1U) << diags.str();
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.key_path, "pod.shape");
  EXPECT_TRUE(contains(d.message, "a 3-axis shape needs 6 ICI ports per chip; chip v5e has 4 (chip.ici.links at "))
      << d.message;
  EXPECT_TRUE(contains(d.message, "configs/chips/v5e.yaml:")) << d.message;
  EXPECT_EQ(d.expected, "a shape of at most 2 axes (two ICI ports per axis), or one chip");
  EXPECT_EQ(d.found, "[2, 2, 2]");
  EXPECT_TRUE(contains(d.hint, "chip v5e has 4 ICI ports")) << d.hint;
  EXPECT_TRUE(contains(d.hint, "so a 2-D generation cannot form a 3-D shape")) << d.hint;
}

TEST(SliceChecks, PortsAnOverrideTookAwayAreRefusedAtThatOverride) {
  ChipSpec chip = load_chip("v4");
  chip.ici.links = 4;
  chip.origins["ici.links"] = FieldOrigin{SourceLoc{"--set chip.ici.links=4", 0, 0}, "", false};
  Diagnostics diags;
  check_pod_on_chip(slice("v4", {2, 2, 2}, {0, 0, 0}), chip, "pod.", diags);
  ASSERT_EQ(diags.size(), 1U) << diags.str();
  EXPECT_EQ(diags.items()[0].loc.file, "--set chip.ici.links=4");
  EXPECT_EQ(diags.items()[0].key_path, "chip.ici.links");
  EXPECT_EQ(diags.items()[0].message, "too few ICI ports for the pod");
}

// More ports than the slice cables are accepted (a bundled v4 on a 2-D slice leaves two unconnected by design), but
// ports the user wrote beyond them are named in a note: `--set chip.ici.links=8` on a v4 cube ran exactly as 6.
TEST(SliceChecks, PortsTheUserWroteBeyondWhatTheSliceCablesAreNotedAsIdle) {
  ChipSpec chip = load_chip("v4");
  const PodSpec cube = slice("v4", {4, 4, 4}, {1, 1, 1}, {4, 4, 4});
  EXPECT_EQ(idle_ici_ports_note(cube, chip), std::nullopt);             // the bundled 6: all cabled
  EXPECT_EQ(idle_ici_ports_note(slice("v4", {4, 4}, {0, 0}), chip), std::nullopt);  // the bundled 6 on a 2-D slice
  chip.ici.links = 8;
  chip.origins["ici.links"] = FieldOrigin{SourceLoc{"--set chip.ici.links=8", 0, 0}, "", false};
  EXPECT_EQ(idle_ici_ports_note(cube, chip),
            "idle ICI ports: chip v4 has 8 ICI ports (--set chip.ici.links=8), but a slice of shape [4, 4, 4] cables "
            "at most 6 per chip (two per axis); the other 2 are idle and add no bandwidth");
  // A 2x2x1 cables 2 per chip but refuses fewer than 6 (a 3-axis shape: check_ici_ports): "at most" 6.
  EXPECT_EQ(idle_ici_ports_note(slice("v4", {2, 2, 1}, {0, 0, 0}), chip),
            "idle ICI ports: chip v4 has 8 ICI ports (--set chip.ici.links=8), but a slice of shape [2, 2, 1] cables "
            "at most 6 per chip (two per axis); the other 2 are idle and add no bandwidth");
  chip.ici.links = 6;
  chip.origins["ici.links"] = FieldOrigin{SourceLoc{"mine.yaml", 40, 3}, "", false};
  EXPECT_EQ(idle_ici_ports_note(slice("v4", {2, 4}, {0, 0}), chip),
            "idle ICI ports: chip v4 has 6 ICI ports (chip.ici.links at mine.yaml:40:3), but a slice of shape [2, 4] "
            "cables at most 4 per chip (two per axis); the other 2 are idle and add no bandwidth");
  EXPECT_EQ(idle_ici_ports_note(cube, chip), std::nullopt);                          // written, none beyond
  EXPECT_EQ(idle_ici_ports_note(slice("v4", {1, 1, 1}, {0, 0, 0}), chip), std::nullopt);  // one chip: no ICI
}

TEST(SliceChecks, AV6eSliceWrapsAroundOnlyOnAxesOfSixteenChips) {
  EXPECT_TRUE(check(slice("v6e", {16, 16}, {1, 1})).empty());
  EXPECT_TRUE(check(slice("v6e", {8, 16}, {0, 1})).empty());
  const Diagnostics diags = check(slice("v6e", {8, 16}, {1, 1}));
  ASSERT_EQ(diags.size(), 1U) << diags.str();
  EXPECT_EQ(diags.items()[0].key_path, "pod.wraparound");
  EXPECT_EQ(diags.items()[0].message, "a v6e slice wraps around only on axes of 16 chips; axis 0 has 8");
  EXPECT_EQ(diags.items()[0].expected, "0 on axis 0 (a mesh edge)");
  EXPECT_TRUE(contains(diags.items()[0].hint, "docs/hardware.md, v6e [P] book")) << diags.items()[0].hint;
}

TEST(SliceChecks, AV5pSliceBelowACubeHasNoWraparound) {
  const Diagnostics diags = check(slice("v5p", {2, 4, 4}, {0, 0, 1}));
  ASSERT_EQ(diags.size(), 1U) << diags.str();
  EXPECT_EQ(diags.items()[0].key_path, "pod.wraparound");
  EXPECT_EQ(diags.items()[0].message, "a v5p slice wraps around only when it is whole 4x4x4 cubes; [2, 4, 4] is not");
  EXPECT_TRUE(contains(diags.items()[0].hint, "docs/hardware.md, v5p [P] cloud-v5p, book")) << diags.items()[0].hint;
}

TEST(SliceChecks, AV5pSliceOfWholeCubesWrapsAroundThroughItsOcs) {
  EXPECT_TRUE(check(slice("v5p", {8, 8, 8}, {1, 1, 1}, {4, 4, 4})).empty());
  const Diagnostics diags = check(slice("v5p", {8, 8, 8}, {1, 1, 1}));
  ASSERT_EQ(diags.size(), 1U) << diags.str();
  EXPECT_EQ(diags.items()[0].key_path, "pod.cube");
  EXPECT_EQ(diags.items()[0].message, "a v5p slice's wraparound runs through the optical circuit switches");
}

TEST(SliceChecks, V5pTakesTheShapesBelowACubeInAnyAxisOrderWholeCubesAndOneChip) {
  const std::vector<std::vector<int>> shapes = {{2, 2, 1}, {1, 2, 2}, {2, 2}, {2, 2, 2}, {4, 2, 2}, {2, 4, 4},
                                                {4, 4, 2}, {4, 4, 4}, {4, 4, 8}, {12, 8, 4}, {16, 20, 28},
                                                {1, 1, 1}, {1}};
  for (const auto& shape : shapes) {
    const Diagnostics diags = check(slice("v5p", shape, std::vector<int>(shape.size(), 0)));
    EXPECT_TRUE(diags.empty()) << format_value(shape) << ":\n" << diags.str();
  }
}

TEST(SliceChecks, AV5pShapeNeitherBelowACubeNorWholeCubesIsRefusedWithTheCubesAroundIt) {
  const Diagnostics diags = check(slice("v5p", {4, 4, 6}, {1, 1, 1}, {4, 4, 2}));
  ASSERT_EQ(diags.size(), 1U) << diags.str();  // the shape alone: no wraparound error on top
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.key_path, "pod.shape");
  EXPECT_EQ(d.expected, "2x2x1, 2x2x2, 2x2x4 or 2x4x4 in any axis order, or every axis a multiple of 4 (whole cubes)");
  EXPECT_EQ(d.found, "[4, 4, 6]");
  EXPECT_TRUE(contains(d.hint, "did you mean [4, 4, 4] or [4, 4, 8]?")) << d.hint;
  EXPECT_TRUE(contains(d.hint, "docs/hardware.md, v5p [P] cloud-v5p, xpk")) << d.hint;

  const Diagnostics flat = check(slice("v5p", {8, 8}, {0, 0}));
  ASSERT_EQ(flat.size(), 1U) << flat.str();
  EXPECT_TRUE(contains(flat.items()[0].hint, "did you mean [8, 8, 4]?")) << flat.items()[0].hint;

  for (const std::vector<int>& shape : {std::vector<int>{3, 3, 3}, {2, 2, 3}, {1, 1, 2}, {2, 1, 1}}) {
    const Diagnostics small = check(slice("v5p", shape, std::vector<int>(shape.size(), 0)));
    ASSERT_EQ(small.size(), 1U) << format_value(shape) << ":\n" << small.str();
    EXPECT_EQ(small.items()[0].key_path, "pod.shape");
    EXPECT_FALSE(contains(small.items()[0].hint, "did you mean")) << small.items()[0].hint;
  }
}

}  // namespace
}  // namespace tpusim
