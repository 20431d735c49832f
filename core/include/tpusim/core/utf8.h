#pragma once
// UTF-8 checks: names and values end up in summary.json and the other JSON outputs, which are UTF-8, so text
// that is not is refused where it comes in (a configuration file, a path given on the command line).
#include <cstddef>
#include <string>
#include <string_view>

namespace tpusim {

// The offset of the first byte that does not continue valid UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or npos when the text is valid.
[[nodiscard]] std::size_t first_invalid_utf8(std::string_view text);

// `text` with each byte that is not valid UTF-8 written as \xHH, to show it in a message.
[[nodiscard]] std::string escape_invalid_utf8(std::string_view text);

}  // namespace tpusim
