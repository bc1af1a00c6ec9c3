// `arbiter serve --data DIR --listen HOST:PORT [--token-file F] [--tls-cert-file C
// --tls-private-key-file K]`: the daemon (src/server): the engine on the wall
// clock behind a Kubernetes-compatible API, its state journaled in DIR. Thin: flags, signals,
// logs; everything else is src/server.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "adapters/io/input_file.h"
#include "adapters/kube/auth.h"
#include "cli_errors.h"
#include "cli_flags.h"
#include "commands.h"
#include "core/api_kinds.h"
#include "core/duration.h"
#include "core/quantity.h"
#include "meter_flags.h"
#include "server/daemon.h"
#include "server/http/http_api.h"
#include "server/http/http_server.h"
#include "server/http/listen_policy.h"
#include "server/http/token_source.h"
#include "server/state/pod_status.h"
#include "version.h"
#include "yaml_config.h"

namespace arbiter::app {

namespace {

std::mutex log_mu;
// One write per line (stderr is unbuffered: `<< std::endl` wrote the line and its newline apart,
// two system calls for every request's log line).
void Log(const std::string& line) {
  std::string text;
  text.reserve(line.size() + 1);
  text.append(line).push_back('\n');
  std::lock_guard<std::mutex> l(log_mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
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

// SIGHUP (`forced`) or a changed --token-file: the new table, or the old one kept and why.
void ReloadTokens(server::TokenSource& tokens, bool forced) {
  std::optional<Status> s =
      forced ? std::optional<Status>(tokens.Reload()) : tokens.ReloadIfChanged();
  if (!s) return;
  const char* why = forced ? "SIGHUP" : "file changed";
  if (s->ok())
    LogEvent(
        "info", "token file reloaded",
        {{"file", tokens.path()}, {"trigger", why}, {"tokens", tokens.Current()->by_token.size()}});
  else
    LogEvent("warning", "token file refused, the previous tokens stay in force",
             {{"file", tokens.path()}, {"trigger", why}, {"error", s->message()}});
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "serve",
      WrapText(
          "Run the daemon: the scheduling engine on the wall clock behind a Kubernetes-compatible "
          "API that kubectl speaks (" +
              ApiKindsText([](const ApiKind&) { return true; }) +
              "). Pods run on the Node objects applied (virtual nodes): each for its "
              "arbiter.dev/duration, or until deleted. Every accepted change is journaled in DIR "
              "(SQLite, WAL) before it is acknowledged; a restart restores the last snapshot and "
              "replays the journal. Point kubectl at it: kubectl --server http://HOST:PORT get "
              "pods, or with --token-file and TLS, a kubeconfig from `arbiter kubeconfig`. Logs "
              "are JSON lines on stderr. SIGTERM or SIGINT stops it gracefully; SIGHUP (or a "
              "change of the file) reloads --token-file. API subset and journal format: "
              "docs/serve.md.",
          90));
  auto data = std::make_shared<std::string>();
  auto listen = std::make_shared<std::string>("127.0.0.1:6443");
  auto snapshot_every = std::make_shared<int64_t>(50000);
  cmd->add_option("--data", *data,
                  "Data directory (created if missing, mode 0700; the daemon makes its files\n"
                  "in it 0600, as they hold every tenant's objects, deleted ones included):\n"
                  "journal.db, snapshot.bin, history.db (the dashboard's charts)")
      ->required();
  cmd->add_option("--listen", *listen,
                  "HOST:PORT to serve on (default 127.0.0.1:6443; port 0: any free port)");
  cmd->add_option("--snapshot-every", *snapshot_every,
                  "Journal records between snapshots (then the journal is compacted; 0: no\n"
                  "snapshots at all, --snapshot-bytes included; default 50000)");
  auto snapshot_growth = std::make_shared<double>(1.0);
  cmd->add_option(
         "--snapshot-growth", *snapshot_growth,
         "Also wait for at least this many records per object the last snapshot held\n"
         "(and for --snapshot-bytes, this many times its size in bytes; default 1; 0:\n"
         "--snapshot-every and --snapshot-bytes alone). A snapshot costs about its objects:\n"
         "spread over as many records, it costs a create the same at 1M live pods as at\n"
         "1k; a restart then replays at most about as many records as it restores objects\n"
         "(0 to 1000)")
      ->check(InRange(0, 1000));
  auto snapshot_bytes = std::make_shared<std::string>("256Mi");
  cmd->add_option(
         "--snapshot-bytes", *snapshot_bytes,
         "Also snapshot once the records since the last snapshot hold this many bytes\n"
         "(their text and commands), or --snapshot-growth times the last snapshot's\n"
         "size if more: a few huge records (an object near the 1.5 MB limit patched in\n"
         "a loop) would otherwise fill the disk long before --snapshot-every records.\n"
         "A size in bytes, Kubernetes' suffixes allowed (512Mi, 1Gi; default 256Mi; at\n"
         "least 1Mi: below, a snapshot of the whole state would follow every few records;\n"
         "0: by records alone; none at all with --snapshot-every 0). A snapshot that fails\n"
         "(a full disk) is tried again at the first record after 1 s, doubling to 5 min")
      ->type_name("SIZE")
      ->check(CLI::Validator(
          [](std::string& value) {
            auto bytes = ParseScaledQuantity(value, 0);
            if (!bytes.ok() || bytes.value() < 0)
              return "must be a size in bytes (e.g. 256Mi, 1Gi; 0: off), not " + value;
            if (bytes.value() > 0 && bytes.value() < server::DaemonOptions::kMinSnapshotBytes)
              return "must be at least 1Mi (1048576 bytes; 0: off), not " + value;
            return std::string();
          },
          ""));
  auto token_file = std::make_shared<std::string>();
  cmd->add_option(
      "--token-file", *token_file,
      "Bearer tokens (kube-apiserver's --token-auth-file CSV: token,user,uid,\"groups\"):\n"
      "every API and dashboard request is then authenticated and authorized\n"
      "(system:masters / arbiter:admins: everything; arbiter:editors:NS and\n"
      "arbiter:viewers:NS: namespace NS; policy table in docs/kube-api.md).\n"
      "Without it the API is open and served on loopback only");
  auto tls_cert = std::make_shared<std::string>();
  auto tls_key = std::make_shared<std::string>();
  cmd->add_option("--tls-cert-file", *tls_cert,
                  "PEM certificate (then intermediates) to serve HTTPS with; needs\n"
                  "--tls-private-key-file. Required with --token-file off loopback");
  cmd->add_option("--tls-private-key-file", *tls_key,
                  "PEM private key (unencrypted) of --tls-cert-file");
  auto dashboard_tokens = std::make_shared<std::string>();
  cmd->add_option("--dashboard-token-file", *dashboard_tokens,
                  "Deprecated (use --token-file): tokens for the web dashboard at /ui/ only,\n"
                  "the API staying open (loopback only). docs/dashboard.md");
  // The HTTP server's caps (server/http/http_server.h; docs/serve.md "Connections and limits").
  auto limits = std::make_shared<server::HttpLimits>();
  auto min_request_timeout = std::make_shared<int>(1800);
  cmd->add_option("--min-request-timeout", *min_request_timeout,
                  "Seconds: a watch without timeoutSeconds lasts a random time between this and\n"
                  "twice this, and none lasts longer (kube-apiserver's flag; 1 to 86400; default\n"
                  "1800)")
      ->check(InRange(1, 86400));
  auto request_timeout = std::make_shared<std::string>("60s");
  cmd->add_option("--request-timeout", *request_timeout,
                  "How long a change's answer waits for its journal record to be durable before\n"
                  "it is answered 504 Timeout, the change may still be committed; a read waits\n"
                  "as long at most for the changes before it (a duration, kube-apiserver's flag;\n"
                  "default 60s)");
  cmd->add_option("--max-connections", limits->max_connections,
                  "Open connections in all (default: the open-file limit less 128); the last 64\n"
                  "serve only probes and cluster admins (65 to 1048576)")
      ->check(InRange(65, 1 << 20));
  cmd->add_option("--max-connections-per-client", limits->max_connections_per_client,
                  "Open connections per client address; more are refused with 429 (default 1024;\n"
                  "at most 1048576)")
      ->check(InRange(1, 1 << 20));
  cmd->add_option("--max-requests-in-flight-per-client", limits->max_in_flight_per_client,
                  "Requests being handled per client address (watches not counted once\n"
                  "streaming); more get 429 and Retry-After (default 256; at most 1048576)")
      ->check(InRange(1, 1 << 20));
  auto pod_metrics = std::make_shared<std::string>("daemon");
  cmd->add_option("--pod-metrics", *pod_metrics,
                  "Where the virtual pods' cAdvisor and dcgm-exporter series are served: "
                  "\"daemon\" (on /metrics\nand on each node's "
                  "/api/v1/nodes/NODE/proxy/metrics/{cadvisor,dcgm}) or \"nodes\" (only there: "
                  "a\nPrometheus scrapes them by node, as in a real cluster; default daemon)")
      ->check(CLI::IsMember({"daemon", "nodes"}));
  auto check = std::make_shared<bool>(false);
  cmd->add_flag("--check-invariants", *check,
                "Check the engine's invariants, the Job pod facts and the PodDisruptionBudget\n"
                "statuses after start-up and after every change (a violation aborts)");
  // The ledger and its hourly meter job (meter_flags.h).
  auto meter = std::make_shared<MeterFlags>();
  AddMeterFlags(cmd, meter.get(),
                "The billing ledger (SQLite, created if missing) that the meter job writes and\n"
                "the dashboard's bills page reads",
                "the PriceBook objects applied to the daemon");
  AddYamlConfig(cmd,
                "YAML file of serve options: each key an option's long name, e.g. "
                "\"listen: 127.0.0.1:6443\",\n\"data: /var/lib/arbiter\" (flags given win; "
                "unknown keys are refused). docs/serve.md");
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
    const char* name = "arbiter serve";
    if (tls_cert->empty() != tls_key->empty()) {
      *exit_code = FlagError(name, tls_cert->empty() ? "--tls-private-key-file" : "--tls-cert-file",
                             "--tls-cert-file and --tls-private-key-file go together");
      return;
    }
    if (!token_file->empty() && !dashboard_tokens->empty()) {
      *exit_code = FlagError(name, "--dashboard-token-file",
                             "deprecated alias, not to be given with --token-file (which "
                             "authenticates the dashboard too)");
      return;
    }
    const auto request_timeout_ms = ParseDuration(*request_timeout);
    if (!request_timeout_ms.ok() || *request_timeout_ms <= 0) {
      *exit_code = FlagError(
          name, "--request-timeout",
          request_timeout_ms.ok() ? "must be positive, e.g. 60s" : request_timeout_ms.message());
      return;
    }
    const server::TlsFiles tls{*tls_cert, *tls_key};
    if (Status p = server::CheckListenPolicy(host, !token_file->empty(), tls.enabled()); !p.ok()) {
      *exit_code = FlagError(name, "--listen", p.message());
      return;
    }
    // Read everything the flags name before opening the journal.
    std::shared_ptr<server::TokenSource> token_source;  // --token-file, reloadable
    std::optional<kube::TokenTable> dashboard_only;     // --dashboard-token-file (deprecated)
    if (!token_file->empty()) {
      auto loaded = server::TokenSource::Load(*token_file);
      if (!loaded.ok()) {
        *exit_code = InputError(name, loaded.message());
        return;
      }
      token_source = std::move(loaded).value();
    } else if (!dashboard_tokens->empty()) {
      auto text = io::ReadInputFile(*dashboard_tokens, {"token file", 16 * io::kMiB});
      if (!text.ok()) {
        *exit_code = InputError(name, text.message());
        return;
      }
      auto parsed = kube::ParseTokenFile(text.value(), *dashboard_tokens);
      if (!parsed.ok()) {
        *exit_code = InputError(name, parsed.message());
        return;
      }
      dashboard_only = std::move(parsed).value();
    }
    if (tls.enabled()) {
      if (Status t = server::CheckTlsFiles(tls); !t.ok()) {
        *exit_code = InputError(name, t.message());
        return;
      }
    }
    // Signals are taken by one thread (sigtimedwait), so every other thread runs with them
    // blocked: SIGTERM and SIGINT stop, SIGHUP reloads --token-file.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    server::UseServeHeapPolicy();
    server::DaemonOptions o;
    o.data_dir = *data;
    o.snapshot_every = *snapshot_every;
    o.snapshot_growth = *snapshot_growth;
    o.snapshot_bytes = ParseScaledQuantity(*snapshot_bytes, 0).value();  // (checked above)
    o.check_invariants = *check;
    auto d = server::Daemon::Open(o);
    if (!d.ok()) {
      *exit_code = InputError("arbiter serve", d.message());
      return;
    }
    server::Daemon& daemon = *d.value();
    daemon.OnJournalFailure([](const std::string& error) {
      LogEvent("error", "journal write failed; the daemon is read-only (503 to every change)",
               {{"error", error}});
    });
    const auto& st = daemon.startup();
    LogEvent("info", "state restored",  // (not "started": the listen may still fail)
             {{"data", *data},
              {"fromSnapshot", st.from_snapshot},
              {"snapshotSeq", st.snapshot_seq},
              {"replayed", st.replayed},
              {"startupSeconds", st.seconds},
              {"restoreSeconds", st.restore_seconds},
              {"replaySeconds", st.replay_seconds}});
    // What the data directory holds that the daemon could not make its user's alone.
    for (const std::string& w : st.warnings)
      LogEvent("warning", "a file of the data directory is not the daemon user's alone",
               {{"detail", w}});
    if (st.migrated_from != 0)
      LogEvent("info", "journal migrated (a snapshot replaced the records of the older format)",
               {{"fromFormat", st.migrated_from}, {"toFormat", server::Journal::kFormatVersion}});
    int meter_rc = 0;
    auto meter_job = StartMeterJob(
        *meter, "arbiter serve", [&daemon] { return server::DaemonPriceBooks(daemon); }, LogEvent,
        &meter_rc);
    if (meter_rc != 0) {
      daemon.Stop();
      *exit_code = meter_rc;
      return;
    }
    server::ApiOptions api;
    api.pod_usage_on_metrics = *pod_metrics == "daemon";
    api.dashboard.ledger = meter->ledger;
    if (meter_job) api.extra_metrics = [job = meter_job.get()] { return job->MetricsText(); };
    api.dashboard.data_dir = *data;  // the dashboard's history survives a restart
    api.dashboard.warn = [](const std::string& w) {
      LogEvent("warning", "a file of the data directory is not the daemon user's alone",
               {{"detail", w}});
    };
    api.tls = tls;
    if (token_source) {
      api.dashboard.tokens = token_source;  // one table, reloaded for both
      api.tokens = token_source;
    } else if (dashboard_only) {
      api.dashboard.tokens = std::make_shared<server::TokenSource>(std::move(*dashboard_only));
    }
    api.limits = *limits;
    api.limits.request_timeout_ms = *request_timeout_ms;
    api.min_request_timeout_s = *min_request_timeout;
    api.version = kVersion;
    api.log = Log;
    server::ApiServer http(daemon, api);
    auto bound = http.Bind(host, port);
    if (!bound.ok()) {
      daemon.Stop();
      *exit_code = InputError("arbiter serve", bound.message());
      return;
    }
    LogEvent("info", "listening",
             {{"address", host + ":" + std::to_string(bound.value())},
              {"scheme", tls.enabled() ? "https" : "http"},
              {"authentication", api.tokens ? "token file" : "none"}});
    std::thread signals([&] {
      while (true) {
        // Every second (or on SIGHUP) the token file is looked at: a changed file is reloaded.
        const timespec tick{1, 0};
        const int sig = sigtimedwait(&set, nullptr, &tick);
        if (sig == SIGHUP || sig < 0) {
          if (token_source) ReloadTokens(*token_source, sig == SIGHUP);
          continue;
        }
        LogEvent("info", "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        http.Stop();
        return;
      }
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
