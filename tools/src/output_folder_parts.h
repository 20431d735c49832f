#pragma once
// What the output-folder rules share between output_folder.cpp (paths, markers, staging, the swap) and
// output_manifest.cpp (manifests and signatures: how tpusim recognises what it wrote); not part of
// output_folder.h.
#include <filesystem>
#include <optional>
#include <string>

namespace tpusim::tools::output_parts {

// True when `dir` holds the marker file (a regular file, not a link).
[[nodiscard]] bool has_marker(const std::filesystem::path& dir);
// A file's bytes ("" when it cannot be read).
[[nodiscard]] std::string read_text(const std::filesystem::path& path);
// The value of the "KEY: " line of `dir`'s marker ("" when it has none).
[[nodiscard]] std::string marker_line(const std::filesystem::path& dir, const std::string& key);
// Whether the marked folder `dir` holds outputs of its own in marked sub-folders: a study written in place (a
// sweep's, a layout search's or a calibration's points), or an older tpusim's folder, whose marker names no
// kind. A run's or a comparison's folder does not: it is replaced whole, so nothing may be written inside it.
[[nodiscard]] bool holds_point_outputs(const std::filesystem::path& dir);

// The whole manifest of a folder tpusim just wrote (every regular file below it but the marker, the manifest
// and the staging note), written atomically.
void write_full_manifest(const std::filesystem::path& dir);

// What a signature line starts with after kWrittenByTpusim and ", ".
inline constexpr const char* kChecksumTag = "checksum fnv1a64 ";
// A signed text's checksums (16 hex digits each): the one its signature gives, and the one of the text
// without that line; nullopt when its second line is no signature.
struct SignatureSums {
  std::string signed_as, content;
};
[[nodiscard]] std::optional<SignatureSums> signature_sums(const std::string& text);

}  // namespace tpusim::tools::output_parts
