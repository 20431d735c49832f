#pragma once
// Finding bundled data (configs/chips, configs/pods, configs/models, scenarios). Search order: the folder
// set_data_dir was given (the tool passes TPUSIM_DATA_DIR), the folder above the running binary's
// share/tpusim, then the source tree the binary was built from.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/diagnostics.h"

namespace tpusim {

// Set once at start-up, before anything is read (empty: none). The library reads no environment variable.
void set_data_dir(std::filesystem::path dir);
[[nodiscard]] std::vector<std::filesystem::path> data_roots();

// Names of the bundled entries in `folder` (e.g. "configs/chips"), sorted, without ".yaml".
[[nodiscard]] std::vector<std::string> bundled_names(const std::string& folder);

// Resolves `name_or_path` as a file: a value containing '/' or ending in .yaml is a path (relative to
// `relative_to` when that is given and the path is relative, else to the working directory); anything else is
// a bundled name in `folder`. Reports an unknown name with a did-you-mean at `loc`.
[[nodiscard]] std::optional<std::filesystem::path> resolve_data_file(const std::string& folder,
                                                                     const std::string& name_or_path,
                                                                     const std::filesystem::path& relative_to,
                                                                     const SourceLoc& loc, const std::string& key,
                                                                     Diagnostics& diags);

// Whether `file` (a SourceLoc's file) is a bundled config or scenario (below a data root's configs/ or
// scenarios/), a file the user did not write: a rule that an override breaks names the override, not it.
[[nodiscard]] bool is_bundled_file(const std::string& file);

}  // namespace tpusim
