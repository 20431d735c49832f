#pragma once
// Output files of the tpusim subcommands, written through one checked helper.
#include <filesystem>
#include <functional>
#include <ostream>

namespace tpusim::tools {

// Writes one output file through `fill`; any stream failure (a full disk, say) throws std::runtime_error, so a
// caller never reports success with a truncated file.
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);

}  // namespace tpusim::tools
