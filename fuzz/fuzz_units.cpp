// Fuzzes the unit parser and every typed scalar reader behind the field tables, and renders what parses.
#include <cstdint>
#include <string>

#include "tpusim/core/fields.h"
#include "tpusim/core/units.h"

namespace {

template <class T>
void parse_and_show(const tpusim::ConfigNode& n) {
  T v{};
  std::string expected;
  if (tpusim::parse_scalar(n, v, expected)) (void)tpusim::format_value(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto q = parse_quantity(text)) {
    (void)format_bandwidth(BytesPerSecond(q->si));
    (void)format_time(Seconds(q->si));
    (void)format_frequency(Hertz(q->si));
    (void)format_flops(FlopsPerSecond(q->si));
    (void)format_watts(Watts(q->si));
  }
  (void)quantity_out_of_range(text);
  const ConfigNode n = ConfigNode::make_scalar(text, SourceLoc{"fuzz", 1, 1});
  parse_and_show<std::int64_t>(n);
  parse_and_show<int>(n);
  parse_and_show<double>(n);
  parse_and_show<bool>(n);
  parse_and_show<Bytes>(n);
  parse_and_show<BytesPerSecond>(n);
  parse_and_show<Seconds>(n);
  parse_and_show<Hertz>(n);
  parse_and_show<FlopsPerSecond>(n);
  parse_and_show<Watts>(n);
  return 0;
}
