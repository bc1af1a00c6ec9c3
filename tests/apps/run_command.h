// Runs a shell command line for the CLI tests and collects its standard output and exit code.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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
inline CommandOutput RunCommandSplit(const std::string& command_line,
                                     const std::filesystem::path& scratch_dir) {
  std::filesystem::create_directories(scratch_dir);
  const std::string err_file = (scratch_dir / "stderr.txt").string();
  CommandOutput r = RunCommand("{ " + command_line + " ; } 2>" + err_file);
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  return r;
}

// A command run under a memory limit (RLIMIT_AS, not applied in sanitizer builds, whose shadow
// memory needs terabytes of address space) and a CPU-time limit (RLIMIT_CPU), with its resource
// use. The limit is CPU time, not wall time, so that a loaded machine (the suite runs beside
// builds) does not fail a run that would finish; a wall-clock backstop of 5x the limit plus a
// minute catches a command that hangs without using the CPU.
struct BoundedRun {
  int rc = -1;             // exit code; -1 when killed by a signal
  int signal = 0;          // the signal that ended it (SIGXCPU/SIGKILL at a limit, SIGABRT, ...)
  bool timed_out = false;  // stopped at the CPU limit or the wall-clock backstop
  std::string out, err;    // standard output and error
  double seconds = 0;      // wall time
  double cpu_seconds = 0;  // user + system time of the command
  long max_rss_kib = 0;    // peak resident memory of the command (0 when unknown)
};

struct Bounds {
  double seconds = 20;     // CPU seconds: SIGXCPU after this, SIGKILL a second later
  long memory_mib = 1024;  // address-space limit
  double WallBackstop() const { return 5 * seconds + 60; }
};

inline std::string ReadWhole(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `/bin/sh -c "exec COMMAND"` (COMMAND may redirect its standard input) with its standard
// output and error in `scratch_dir`. The peak memory comes from GNU time (/usr/bin/time, Debian
// package `time`) when installed: the kernel counts a forked child's peak from its parent's, so
// wait4() here would report the test's own size.
inline BoundedRun RunBounded(const std::string& command_line,
                             const std::filesystem::path& scratch_dir, Bounds bounds = {}) {
  std::filesystem::create_directories(scratch_dir);
  const std::string out_file = (scratch_dir / "bounded.out").string();
  const std::string err_file = (scratch_dir / "bounded.err").string();
  std::filesystem::remove(scratch_dir / "bounded.rss");
  BoundedRun r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    setpgid(0, 0);
#if !defined(__SANITIZE_ADDRESS__)
    const rlim_t bytes = static_cast<rlim_t>(bounds.memory_mib) << 20;
    const struct rlimit lim = {bytes, bytes};
    setrlimit(RLIMIT_AS, &lim);
#endif
    const rlim_t cpu = static_cast<rlim_t>(bounds.seconds + 0.999);
    const struct rlimit cpu_lim = {cpu, cpu + 1};
    setrlimit(RLIMIT_CPU, &cpu_lim);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    const std::string cmd = "exec " + command_line;
    if (access("/usr/bin/time", X_OK) == 0) {
      const std::string rss_file = (scratch_dir / "bounded.rss").string();
      execl("/usr/bin/time", "time", "-f", "%M", "-o", rss_file.c_str(), "/bin/sh", "-c",
            cmd.c_str(), static_cast<char*>(nullptr));
    }
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  while (true) {
    const pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
        bounds.WallBackstop()) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // wait4's usage includes the children the command reaped (GNU time's child, the command).
  r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (WIFEXITED(status)) r.rc = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  // GNU time's report: "%M" on the last line, after "Command exited with non-zero status N" or
  // "Command terminated by signal N" (it exits with the command's code; a signal becomes 128+N).
  const std::string rss = ReadWhole(scratch_dir / "bounded.rss");
  if (!rss.empty()) {
    const size_t nl = rss.find_last_of('\n', rss.size() >= 2 ? rss.size() - 2 : 0);
    r.max_rss_kib = std::atol(rss.c_str() + (nl == std::string::npos ? 0 : nl + 1));
    const size_t sig = rss.find("terminated by signal ");
    if (sig != std::string::npos) {
      r.signal = std::atoi(rss.c_str() + sig + 21);
      r.rc = -1;
    }
  }
  if (r.signal == SIGXCPU) r.timed_out = true;
  r.out = ReadWhole(out_file);
  r.err = ReadWhole(err_file);
  return r;
}

}  // namespace arbiter::testing
