#pragma once
// The program file format ("tpusim-program", version 1): JSON, one instruction per line, documented in
// kernels/README.md. Used by `tpusim lower` to dump what the library produced and by scenarios that bring
// their own compiled workload.
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>

#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/program.h"

namespace tpusim::ir {

// Writes `set` as JSON. Deterministic: the same ProgramSet gives the same bytes, and reading a file back and
// writing it again reproduces it byte for byte. Each instruction writes the fields its kind uses; optional
// fields equal to their default (label "", core 0, vmem_alloc/vmem_free 0, model/hardware FLOPs 0) are left out.
void write_program_json(const ProgramSet& set, std::ostream& out);

// Reads a program file. Throws tpusim::ConfigError listing every problem found, each with the file, the
// JSON pointer of the offending value (e.g. /programs/0/instructions/7/deps/1), and expected vs found:
// malformed JSON, wrong format or version, a missing or unknown field, an unknown enum name, a dependency
// that is not an earlier instruction, a role naming a program that does not exist.
[[nodiscard]] ProgramSet read_program_json(const std::filesystem::path& path);

// The same from text; `source` names it in errors.
[[nodiscard]] ProgramSet parse_program_json(std::string_view text, const std::string& source);

// Where the value at `json_pointer` (e.g. /programs/0/instructions/7/algorithm) is in a program file: its
// line and column, or the enclosing value's when it is absent; the file alone if it cannot be read.
[[nodiscard]] SourceLoc program_file_location(const std::filesystem::path& path, const std::string& json_pointer);

}  // namespace tpusim::ir
