// A running `arbiter serve` for tests: started on a free loopback port with its own --data
// directory, a kubeconfig pointing at it, and the real kubectl (1.32) to talk to it. Waits on
// conditions with deadlines, never on sleeps alone.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "apps/run_command.h"

namespace arbiter::testing {

class ServeProcess {
 public:
  // `dir`: scratch directory (data in dir/data, logs in dir/serve.log).
  explicit ServeProcess(std::filesystem::path dir, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), extra_(std::move(extra)) {
    std::filesystem::create_directories(dir_);
  }
  ~ServeProcess() {
    if (pid_ > 0) Kill9();
  }

  // Starts it and waits (up to 60 s) for its "listening" log line. False if it did not come up.
  bool Start() {
    const std::string log = (dir_ / "serve.log").string();
    std::filesystem::remove(log);
    pid_ = fork();
    if (pid_ == 0) {
      const int in = open("/dev/null", O_RDONLY);
      const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in, 0);
      dup2(err, 1);
      dup2(err, 2);
      if (in_child) in_child();
      std::vector<std::string> args = {ARBITER_BINARY,           "serve",    "--data",
                                       (dir_ / "data").string(), "--listen", "127.0.0.1:0"};
      args.insert(args.end(), extra_.begin(), extra_.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(ARBITER_BINARY, argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = ReadWhole(log);
      const size_t at = text.find("\"address\":\"127.0.0.1:");
      if (at != std::string::npos) {
        port_ = std::atoi(text.c_str() + at + 21);
        WriteKubeconfig();
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM, then waits up to `seconds` for the exit; returns its exit code (-1 killed / timeout).
  int Stop(double seconds = 30) {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Kill9();
    return -1;
  }

  void Kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  // `kubectl --kubeconfig ... ARGS` with stdout and stderr together.
  CommandOutput Kubectl(const std::string& args) const {
    return RunCommand("kubectl --kubeconfig " + kubeconfig() + " --cache-dir " +
                      (dir_ / "kcache").string() + " " + args + " 2>&1");
  }
  // Retries `args` until its output contains `want` or `seconds` pass; returns the last output.
  CommandOutput KubectlUntil(const std::string& args, const std::string& want,
                             double seconds = 30) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    CommandOutput r;
    do {
      r = Kubectl(args);
      if (r.out.find(want) != std::string::npos) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return r;
  }

  // Runs in the child between fork and exec (limits, signal dispositions).
  std::function<void()> in_child;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string kubeconfig() const { return (dir_ / "kubeconfig").string(); }
  std::filesystem::path dir() const { return dir_; }
  std::string log() const { return ReadWhole(dir_ / "serve.log"); }
  pid_t pid() const { return pid_; }

 private:
  void WriteKubeconfig() {
    std::ofstream k(kubeconfig());
    k << "apiVersion: v1\nkind: Config\nclusters:\n- name: arbiter\n  cluster:\n    server: "
      << url()
      << "\ncontexts:\n- name: arbiter\n  context:\n    cluster: arbiter\n    user: admin\n    "
         "namespace: default\n"
         "current-context: arbiter\nusers:\n- name: admin\n  user: {}\n";
  }

  std::filesystem::path dir_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int port_ = 0;
};

inline std::filesystem::path ScratchDir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-serve-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace arbiter::testing
