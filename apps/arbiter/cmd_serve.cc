// `arbiter serve --data DIR --listen HOST:PORT`: the daemon (src/server): the engine on the wall
// clock behind a Kubernetes-compatible API, its state journaled in DIR. Thin: flags, signals,
// logs; everything else is src/server.
#include <signal.h>

#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "adapters/io/input_file.h"
#include "cli_flags.h"
#include "commands.h"
#include "server/daemon.h"
#include "server/http_api.h"
#include "server/pod_status.h"
#include "serve_meter.h"

#ifndef ARBITER_VERSION
#define ARBITER_VERSION "unknown"
#endif

namespace arbiter::app {

namespace {

std::mutex log_mu;
void Log(const std::string& line) {
  std::lock_guard<std::mutex> l(log_mu);
  std::cerr << line << std::endl;
}
void LogEvent(const std::string& level, const std::string& msg,
              nlohmann::json fields = nlohmann::json::object()) {
  fields["time"] = server::KubeTime(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  fields["level"] = level;
  fields["msg"] = msg;
  Log(fields.dump());
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Run the daemon: the scheduling engine on the wall clock behind a Kubernetes-compatible API\n"
      "that kubectl speaks (Namespace, Node, Pod, ResourceQuota, LimitRange, PriorityClass,\n"
      "PodDisruptionBudget, Event; arbiter.dev/v1alpha1 ElasticQuota, PoolPolicy, PriceBook, "
      "QoS).\n"
      "Pods run on the Node objects applied (virtual nodes): each for its arbiter.dev/duration, "
      "or\n"
      "until deleted. Every accepted change is journaled in DIR (SQLite, WAL) before it is\n"
      "acknowledged; a restart restores the last snapshot and replays the journal.\n"
      "Point kubectl at it: kubectl --server http://HOST:PORT get pods. Logs are JSON lines on\n"
      "stderr. SIGTERM or SIGINT stops it gracefully. API subset and journal format: "
      "docs/serve.md.");
  auto data = std::make_shared<std::string>();
  auto listen = std::make_shared<std::string>("127.0.0.1:6443");
  auto snapshot_every = std::make_shared<int64_t>(100000);
  cmd->add_option("--data", *data, "Data directory (created if missing): journal.db")->required();
  cmd->add_option("--listen", *listen,
                  "HOST:PORT to serve on (default 127.0.0.1:6443; port 0: any free port)");
  cmd->add_option("--snapshot-every", *snapshot_every,
                  "Journal records between snapshots (then the journal is compacted; 0: never)");
  auto dashboard_tokens = std::make_shared<std::string>();
  cmd->add_option("--dashboard-token-file", *dashboard_tokens,
                  "Bearer tokens for the web dashboard at /ui/ (kube-apiserver's token CSV:\n"
                  "token,user,uid,\"groups\"; groups system:masters or arbiter:admins see all,\n"
                  "arbiter:editors:NS / arbiter:viewers:NS see namespace NS). Without it the\n"
                  "dashboard, like the API, is open. docs/dashboard.md");
  auto check = std::make_shared<bool>(false);
  cmd->add_flag(
      "--check-invariants", *check,
      "Check the engine's invariants after start-up and after every change (a violation aborts)");
  // The ledger and its hourly meter job (serve_meter.h).
  auto meter = std::make_shared<ServeMeterFlags>();
  AddServeMeterFlags(cmd, meter.get());
  cmd->callback([=] {
    const size_t colon = listen->rfind(':');
    int port = -1;
    if (colon != std::string::npos) {
      try {
        port = std::stoi(listen->substr(colon + 1));
      } catch (const std::exception&) {
        port = -1;
      }
    }
    if (colon == std::string::npos || port < 0 || port > 65535) {
      *exit_code =
          FlagError("arbiter serve", "--listen", "expected HOST:PORT, got \"" + *listen + "\"");
      return;
    }
    const std::string host = listen->substr(0, colon);
    // Signals are taken by one thread (sigwait), so every other thread runs with them blocked.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    server::DaemonOptions o;
    o.data_dir = *data;
    o.snapshot_every = *snapshot_every;
    o.check_invariants = *check;
    auto d = server::Daemon::Open(o);
    if (!d.ok()) {
      *exit_code = InputError("arbiter serve", d.message());
      return;
    }
    server::Daemon& daemon = *d.value();
    const auto& st = daemon.startup();
    LogEvent("info", "started",
             {{"data", *data},
              {"fromSnapshot", st.from_snapshot},
              {"snapshotSeq", st.snapshot_seq},
              {"replayed", st.replayed},
              {"startupSeconds", st.seconds}});
    int meter_rc = 0;
    auto meter_job = StartServeMeter(*meter, daemon, LogEvent, &meter_rc);
    if (meter_rc != 0) {
      daemon.Stop();
      *exit_code = meter_rc;
      return;
    }
    server::ApiOptions api;
    api.dashboard.ledger = meter->ledger;
    if (!dashboard_tokens->empty()) {
      auto text = io::ReadInputFile(*dashboard_tokens, {"token file", io::kMiB});
      if (!text.ok()) {
        daemon.Stop();
        *exit_code = InputError("arbiter serve", text.message());
        return;
      }
      auto tokens = server::dashboard::ParseViewerTokens(text.value(), *dashboard_tokens);
      if (!tokens.ok()) {
        daemon.Stop();
        *exit_code = InputError("arbiter serve", tokens.message());
        return;
      }
      api.dashboard.tokens = std::move(tokens).value();
    }
    api.version = ARBITER_VERSION;
    api.log = Log;
    server::ApiServer http(daemon, api);
    auto bound = http.Bind(host, port);
    if (!bound.ok()) {
      daemon.Stop();
      *exit_code = InputError("arbiter serve", bound.message());
      return;
    }
    LogEvent("info", "listening", {{"address", host + ":" + std::to_string(bound.value())}});
    std::thread signals([&] {
      int sig = 0;
      sigwait(&set, &sig);
      if (sig == 0) return;
      LogEvent("info", "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      http.Stop();
    });
    http.Run();
    if (meter_job) meter_job->Stop();
    daemon.Stop();
    // Wake the signal thread if Run returned by itself.
    pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    LogEvent("info", "stopped");
    *exit_code = 0;
  });
}

}  // namespace arbiter::app
