#pragma once
// `tpusim describe chip NAME`: the composed chip as a block diagram (text, and an SVG drawing with --svg) and
// every resolved field with its unit and the source its chip file cites.
#include <ostream>

#include "tpusim/core/chip_spec.h"

namespace tpusim::tools {

// The block tree (TensorCores with what sits in each, then the chip's other blocks), each block's outgoing
// paths, then the field table.
void print_chip_description(const ChipSpec& chip, std::ostream& out);

// The same composition drawn as boxes (a TensorCore box holding its blocks; engines; memories) and arrows for
// the paths. Deterministic text, like every other output.
void write_chip_svg(const ChipSpec& chip, std::ostream& out);

}  // namespace tpusim::tools
