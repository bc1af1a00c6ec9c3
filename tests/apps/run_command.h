// Runs a shell command line for the CLI tests and collects its standard output and exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace arbiter::testing {

struct CommandOutput {
  int rc = -1;      // exit code, -1 if the command could not run or was killed
  std::string out;  // standard output (and whatever the command line redirects into it)
};

inline CommandOutput RunCommand(const std::string& command_line) {
  CommandOutput r;
  FILE* p = popen(command_line.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace arbiter::testing
