#include "tools/src/graphviz.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tools/src/output_folder.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

// A temporary file that is removed when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    std::string pattern = (fs::temp_directory_path() / "tpusim-graphviz-XXXXXX").string();
    const int fd = mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error("cannot create a temporary file for Graphviz");
    close(fd);
    path_ = pattern;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::string graphviz_svg(const std::string& dot) {
  TempFile in, out;
  write_file(in.path(), [&](std::ostream& o) { o << dot; });
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start Graphviz");
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    execlp("dot", "dot", "-Tsvg", "-o", out.path().c_str(), in.path().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("lost the Graphviz process");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("Graphviz 'dot' failed (is graphviz installed?)");
  }
  std::ifstream svg(out.path(), std::ios::binary);
  std::stringstream text;
  text << svg.rdbuf();
  return text.str();
}

}  // namespace tpusim::tools
