// Runs a shell command line for the CLI tests and collects its standard output and exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace arbiter::testing {

struct CommandOutput {
  int rc = -1;      // exit code, -1 if the command could not run or was killed
  std::string out;  // standard output (and whatever the command line redirects into it)
  std::string err;  // standard error, with RunCommandSplit only
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

// The same, with standard error captured apart (through `scratch_dir`/stderr.txt).
inline CommandOutput RunCommandSplit(const std::string& command_line, const std::filesystem::path& scratch_dir) {
  std::filesystem::create_directories(scratch_dir);
  const std::string err_file = (scratch_dir / "stderr.txt").string();
  CommandOutput r = RunCommand("{ " + command_line + " ; } 2>" + err_file);
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  return r;
}

}  // namespace arbiter::testing
