#pragma once
// Shared by the fuzz targets: a private folder for inputs that the readers take as files.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace tpusim::fuzz {

// A folder of this process, removed at exit by the operating system's temp cleaning only (libFuzzer ends
// with _exit); inputs are overwritten in place, so it stays small.
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("tpusim-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::filesystem::path write_input(const std::string& name, std::string_view data) {
  const auto p = work_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
  return p;
}

}  // namespace tpusim::fuzz
