#include "tools/src/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpusim::tools {

pid_t spawn_logged(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128; }

int run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const pid_t pid = spawn_logged(argv, log);
  if (pid < 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return exit_code_of(status);
}

}  // namespace tpusim::tools
