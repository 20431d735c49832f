#pragma once
// Modelling numbers that no source gives: structural constants of a model or a lowering choice, and the
// calibrated defaults of spec fields (chip_spec.h). Each layer lists its own from the constants themselves, so
// `tpusim describe assumptions` shows exactly what the code uses; other spec fields that are assumptions say so
// in `tpusim describe chip`.
#include <string>
#include <vector>

namespace tpusim {

struct Assumption {
  std::string name;   // what it is, in a few words
  std::string value;  // with its unit
  std::string where;  // the file that declares it
  std::string why;    // the reasoning, and what is unknown
};

}  // namespace tpusim
