#include "tools/src/output_file.h"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim::tools {

void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(path, std::ios::binary);
  fill(out);
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

}  // namespace tpusim::tools
