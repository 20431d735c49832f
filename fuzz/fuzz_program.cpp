// Fuzzes the program file reader. What it accepts must write back and read again to the same bytes (the
// format's round-trip contract), and every error must be a ConfigError with a location.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tpusim/kernels/program_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ir::ProgramSet set = ir::parse_program_json(text, "fuzz.json");
    std::ostringstream once, twice;
    ir::write_program_json(set, once);
    ir::write_program_json(ir::parse_program_json(once.str(), "again.json"), twice);
    if (once.str() != twice.str()) std::abort();  // the round trip must be exact
  } catch (const ConfigError&) {
  }
  return 0;
}
