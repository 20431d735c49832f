#pragma once
// One way to print a measured number for a person: four significant digits (trailing zeros dropped) and the
// prefix that puts the mantissa in [1, 1000), never e-notation. Seconds go ps .. s, bytes use binary prefixes
// (KiB .. PiB, as memory is sized), FLOPs and rates decimal ones (kFLOP .. EFLOP, kB/s .. PB/s), plain counts
// k, M, G, T. Fractions (MFU, utilization) print as percentages. For stdout and tables; files keep full
// precision.
#include <string>
#include <string_view>

namespace tpusim::tools {

enum class Quantity { seconds, bytes, flops, flops_per_s, bytes_per_s, per_s, count, fraction };

[[nodiscard]] std::string readable(double value, Quantity q);
// The same with an explicit sign ("+1.25 ms", "-3.1 MiB", "+0 s"); a fraction's difference in percentage
// points ("+2.5 pp").
[[nodiscard]] std::string readable_delta(double delta, Quantity q);

// The quantity a summary.json key (its dotted path) holds, from its name: "..._per_s" a rate (of FLOPs, bytes or
// things), "..._s" (also below a "..._s" object) seconds, "...bytes..." and "memory...." bytes, "...flops..."
// FLOPs, mfu / hfu / goodput / share / utilization / efficiency / fraction a fraction, anything else a count.
[[nodiscard]] Quantity quantity_of_key(std::string_view key);

}  // namespace tpusim::tools
