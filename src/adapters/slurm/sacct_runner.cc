#include "adapters/slurm/sacct_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

extern char** environ;

namespace arbiter::slurm {

namespace {

// "2026-11-29T17:01:26" in UTC (sacct reads it in TZ, which RunSacct sets to UTC).
std::string SacctTime(Millis ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::vector<std::string> SacctArgv(const SacctQuery& q) {
  std::vector<std::string> a = {q.sacct,       "--duplicates", "--allusers",      "--parsable2",
                                "--noconvert", "--starttime",  SacctTime(q.since)};
  if (q.until) {
    a.push_back("--endtime");
    a.push_back(SacctTime(*q.until));
  }
  a.push_back("--format=" + std::string(kSacctFormat));
  return a;
}

Status RunSacct(const SacctQuery& q) {
  const std::vector<std::string> args = SacctArgv(q);
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // Environment: ours, with TZ and SLURM_TIME_FORMAT replaced.
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("TZ=", 0) == 0 || kv.rfind("SLURM_TIME_FORMAT=", 0) == 0) continue;
    env_store.push_back(kv);
  }
  env_store.push_back("TZ=UTC");
  env_store.push_back("SLURM_TIME_FORMAT=%s");
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);

  const std::string err_path = q.output_path + ".stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, q.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, q.sacct.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  auto stderr_text = [&]() {
    std::ifstream e(err_path);
    std::string line, text;
    for (int n = 0; n < 5 && std::getline(e, line); ++n) text += (text.empty() ? "" : " / ") + line;
    return text;
  };
  if (rc != 0) {
    std::remove(err_path.c_str());
    return Status::Error("cannot run " + q.sacct + ": " + std::strerror(rc) +
                         " (install Slurm's client, or name it with --sacct PATH)");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return Status::Error("waiting for sacct: " + std::string(std::strerror(errno)));
  }
  std::string err = stderr_text();
  std::remove(err_path.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                        : "signal " + std::to_string(WTERMSIG(status));
    return Status::Error(q.sacct + " failed (" + how + ")" + (err.empty() ? "" : ": " + err) +
                         " — is SLURM_CONF set and slurmdbd reachable?");
  }
  return Status::Ok();
}

}  // namespace arbiter::slurm
