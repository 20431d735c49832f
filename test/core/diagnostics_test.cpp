// How errors read (core/diagnostics.h): every place, expected and found, but a long found text is cut to its
// start and a flood of errors to its first hundred, the count giving the rest.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tpusim/core/diagnostics.h"

namespace tpusim {
namespace {

Diagnostic at_line(int line, std::string found) {
  return Diagnostic{SourceLoc{"w.yaml", line, 3}, "derive.x", "bad expression", "an expression", std::move(found),
                    ""};
}

TEST(Diagnostics, AShortFoundIsShownWhole) {
  const std::string found(240, 'a');
  EXPECT_EQ(at_line(1, found).str(),
            "w.yaml:1:3: error: derive.x: bad expression\n    expected: an expression\n    found:    " + found);
}

TEST(Diagnostics, ALongFoundIsCutToItsFirst200CharactersWithItsLength) {
  const std::string found(std::string(20000, '('));
  EXPECT_EQ(at_line(1, found).str(), "w.yaml:1:3: error: derive.x: bad expression\n    expected: an expression\n"
                                     "    found:    " + std::string(200, '(') + "... (20000 characters in all)");
}

TEST(Diagnostics, TheCutFallsBeforeAUtf8Character) {
  // 199 ASCII bytes, then 'é' (2 bytes) across the 200th byte: cut before it.
  const std::string found = std::string(199, 'a') + "\xC3\xA9" + std::string(100, 'b');
  const std::string s = at_line(1, found).str();
  EXPECT_NE(s.find("found:    " + std::string(199, 'a') + "... (" + std::to_string(found.size())), std::string::npos)
      << s;
}

TEST(Diagnostics, AtMostAHundredErrorsArePrintedAndTheRestCounted) {
  std::vector<Diagnostic> diags;
  for (int i = 1; i <= 150; ++i) diags.push_back(at_line(i, "x"));
  const ConfigError e(diags);
  const std::string what = e.what();
  EXPECT_NE(what.find("w.yaml:100:3:"), std::string::npos);
  EXPECT_EQ(what.find("w.yaml:101:3:"), std::string::npos);
  EXPECT_NE(what.find("\n... and 50 more errors (the first 100 are shown)"), std::string::npos);
  EXPECT_EQ(e.diagnostics().size(), 150u);  // all kept for the count and for callers
}

}  // namespace
}  // namespace tpusim
