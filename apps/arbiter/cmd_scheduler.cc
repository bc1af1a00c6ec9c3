// `arbiter scheduler --kubeconfig FILE [--scheduler-name arbiter] [--policy FILE]`: Arbiter as the
// scheduler of a real Kubernetes cluster (src/kubesched; docs/kubernetes.md). Thin: flags, signals,
// logs.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "adapters/kubeclient/kubeconfig_reader.h"
#include "adapters/yaml/manifest_loader.h"
#include "cli_flags.h"
#include "commands.h"
#include "core/api_kinds.h"
#include "kubesched/scheduler.h"
#include "meter_flags.h"
#include "scheduler_lease_flags.h"

namespace arbiter::app {

namespace {
std::mutex sched_log_mu;
void SchedLog(const std::string& line) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  std::lock_guard<std::mutex> l(sched_log_mu);
  std::cerr << buf << " " << line << std::endl;
}

// --ledger and --meter-* (meter_flags.h, shared with `arbiter serve`) into the options: the
// request track from the informers, or the meter job on Prometheus merging it with the usage
// track. kExitOk, or the exit code
// with the message printed.
int MeteringFromFlags(const char* me, const MeterFlags& f, kubesched::SchedulerOptions* o) {
  int rc = kExitOk;
  if (f.ledger.empty()) {
    if (!f.prometheus.empty())
      return FlagError(me, "--meter-prometheus", "needs --ledger DB to meter into");
    return kExitOk;
  }
  const std::optional<MeterTimes> t = MeterTimesFromFlags(f, me, &rc);
  if (!t) return rc;
  if (!PriceBooksFromFlags(f, me, &o->price_books, &rc)) return rc;
  o->meter_every = t->every > 0 ? t->every : 60000;
  if (f.prometheus.empty()) {
    kubesched::RequestMeterOptions r;
    r.ledger = f.ledger;
    r.delay = t->delay;
    r.open_hours = t->every > 0;
    r.log = SchedLog;
    o->request_meter = std::move(r);
    return kExitOk;
  }
  // Both tracks into one row per key: the request side from the informers, the usage side
  // from Prometheus (the meter job, given the informers' request track).
  o->start_usage_meter =
      [f, me](std::function<std::vector<PriceBook>()> books,
              kubesched::SchedulerOptions::RequestTrackFn track) -> Result<std::shared_ptr<void>> {
    int rc = kExitOk;
    auto job = StartMeterJob(
        f, me, std::move(books),
        [](const std::string& level, const std::string& msg, const nlohmann::json& fields) {
          SchedLog(level + " " + msg + " " + fields.dump());
        },
        &rc, std::move(track));
    if (!job)
      return Status::InvalidArgument("the meter job did not start (exit " + std::to_string(rc) +
                                     ")");
    return std::shared_ptr<void>(std::move(job));
  };
  return kExitOk;
}
}  // namespace

void RegisterScheduler(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "scheduler",
      "Schedule the pods of a real Kubernetes cluster (kube-apiserver) with Arbiter's engine:\n"
      "pods with spec.schedulerName equal to --scheduler-name are Arbiter's; it binds them\n"
      "(pods/binding), preempts through the Eviction API (kube-apiserver enforces\n"
      "PodDisruptionBudgets), sets status.nominatedNodeName and writes why a pod waits in its\n"
      "PodScheduled condition. Other pods stay kube-scheduler's; their requests count as used\n"
      "on their nodes.\n" +
          WrapText("Reads " +
                       ApiKindsText([](const ApiKind& k) { return k.id != KindId::kEvent; }) +
                       " (Arbiter's kinds and PodGroup as CustomResourceDefinitions: kubectl "
                       "apply -f deploy/). The state is the cluster's: a restart lists it again. "
                       "Logs on stderr; SIGTERM or SIGINT stops it. docs/kubernetes.md.",
                   90));
  auto kubeconfig = std::make_shared<std::string>();
  auto context = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>("arbiter");
  auto policy = std::make_shared<std::string>();
  auto watch_timeout = std::make_shared<int>(300);
  auto node_selector = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--kubeconfig", *kubeconfig,
                  "kubeconfig of the cluster (its current context; certificates inline or as "
                  "files; a client certificate or a bearer token)")
      ->required();
  cmd->add_option("--context", *context, "a kubeconfig context other than current-context");
  cmd->add_option("--scheduler-name", *name,
                  "the spec.schedulerName of the pods Arbiter schedules (default arbiter)");
  cmd->add_option(
      "--policy", *policy,
      "manifests with Arbiter's policy objects (PoolPolicy, QoS, PriceBook, ...) to use\n"
      "besides (and before) those in the cluster; checked as `arbiter validate` does");
  cmd->add_option("--node-selector", *node_selector,
                  "KEY=VALUE (repeatable): only nodes with these labels are Arbiter's pool");
  cmd->add_option("--watch-timeout", *watch_timeout,
                  "seconds after which the API server ends each watch, reopened from the last\n"
                  "resourceVersion (default 300)");
  auto lease = AddLeaseFlags(cmd);
  auto meter = std::make_shared<MeterFlags>();
  AddMeterFlags(cmd, meter.get(),
                "The billing ledger (SQLite, created if missing): the request track of Arbiter's\n"
                "pods, from their start to their end as the informers see them, priced into\n"
                "hourly rows while this replica leads (docs/kubernetes.md, Metering); with\n"
                "--meter-prometheus, the meter job of `arbiter serve` writes the rows, their\n"
                "request side from the informers and their usage side from Prometheus",
                "--policy's and the cluster's PriceBook objects");
  cmd->callback([=] {
    const char* me = "arbiter scheduler";
    if (name->empty()) {
      *exit_code = FlagError(me, "--scheduler-name", "must not be empty");
      return;
    }
    if (*watch_timeout < 1 || *watch_timeout > 3600) {
      *exit_code = FlagError(me, "--watch-timeout", "must be between 1 and 3600 seconds");
      return;
    }
    std::map<std::string, std::string> selector;
    for (const std::string& kv : *node_selector) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        *exit_code = FlagError(me, "--node-selector", "expected KEY=VALUE, got \"" + kv + "\"");
        return;
      }
      selector[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    std::optional<kubesched::LeaseConfig> leader;
    if (int rc = LeaseFromFlags(me, *lease, *name, &leader); rc != kExitOk) {
      *exit_code = rc;
      return;
    }
    auto kube = kubeclient::LoadKubeconfig(*kubeconfig, *context);
    if (!kube.ok()) {
      *exit_code = InputError(me, kube.message());
      return;
    }
    kubesched::SchedulerOptions o;
    if (int rc = MeteringFromFlags(me, *meter, &o); rc != kExitOk) {
      *exit_code = rc;
      return;
    }
    o.kube = *kube;
    o.controller.scheduler_name = *name;
    o.controller.node_selector = std::move(selector);
    o.watch_timeout_seconds = *watch_timeout;
    o.log = SchedLog;
    o.leader_election = std::move(leader);
    if (!policy->empty()) {
      yaml::ManifestLoad load = yaml::LoadManifestFiles({*policy});
      load.diagnostics.Sort();
      for (const auto& d : load.diagnostics.items) std::cerr << d.ToString() << "\n";
      if (!load.ok()) {
        *exit_code = InputError(me, "--policy " + *policy + " has errors");
        return;
      }
      o.controller.policy = std::move(load.set);
    }
    if (Status s = kubesched::CheckApiServer(o.kube); !s.ok()) {
      *exit_code = InputError(me, s.message());
      return;
    }
    // A TLS close on a connection the server already dropped (a watch cut at stop) writes to a
    // closed socket: an error to handle, not a signal that kills the process.
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::atomic<bool> stop{false};
    std::thread signals([&] {
      int sig = 0;
      sigwait(&set, &sig);
      SchedLog(std::string("stopping (") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ")");
      stop = true;
    });
    SchedLog("started: scheduler " + *name + " on " + o.kube.server);
    Status s = kubesched::RunScheduler(o, stop);
    if (!stop) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    if (!s.ok()) {
      *exit_code = InputError(me, s.message());
      return;
    }
    SchedLog("stopped");
    *exit_code = 0;
  });
}

}  // namespace arbiter::app
