#pragma once
// Where in a program file's text (the "tpusim-program" JSON, program_io.cpp) a problem is: the line and column of
// a byte, the byte a JSON pointer names, and the tree parsed with a syntax error or a key given twice located.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpusim/core/diagnostics.h"

namespace tpusim::ir {

// The 1-based line and column of byte `byte` of `text`.
[[nodiscard]] std::pair<int, int> line_column(std::string_view text, std::size_t byte);

// The byte offset of the value `pointer` names in `text` (valid JSON), found without building a tree; for a
// member that does not exist (a missing field), that of the object lacking it.
[[nodiscard]] std::size_t pointer_offset(std::string_view text, std::string_view pointer);

// Gives each diagnostic (located by its JSON pointer, its key_path) the line and column of that value in `text`.
[[nodiscard]] std::vector<Diagnostic> with_lines(std::string_view text, const std::string& source,
                                                 std::vector<Diagnostic> diags);

// The tree of a program file; throws ConfigError at the line and column of the first syntax error, number out
// of range or key given twice.
[[nodiscard]] nlohmann::json parse_tree(std::string_view text, const std::string& source);

}  // namespace tpusim::ir
