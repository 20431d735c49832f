#pragma once
// Two output folders of the same run made two ways (running ahead or not, mirrored chips or not) must hold the
// same files, byte for byte. Used by test/regression/run_ahead_test.cpp and mirror_test.cpp.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace tpusim::testing {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Expects `b` to hold exactly `a`'s files with the same bytes; returns how many files `a` holds.
inline std::size_t expect_same_outputs(const std::filesystem::path& a, const std::filesystem::path& b) {
  namespace fs = std::filesystem;
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(a)) {
    const fs::path name = entry.path().filename();
    EXPECT_TRUE(fs::exists(b / name)) << name << " only in " << a;
    EXPECT_TRUE(read_file(entry.path()) == read_file(b / name)) << name << " differs";
    ++files;
  }
  const auto b_files = std::distance(fs::directory_iterator(b), fs::directory_iterator());
  EXPECT_EQ(files, static_cast<std::size_t>(b_files));
  return files;
}

}  // namespace tpusim::testing
