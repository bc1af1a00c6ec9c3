#include "kubesched/lease_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "adapters/kubeclient/api_client.h"
#include "adapters/kubeclient/watch_decoder.h"

namespace arbiter::kubesched {

using kubeclient::ApiClient;
using Json = nlohmann::json;

namespace lease_runner {

Millis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string CollectionPath(const LeaseConfig& c) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + c.namespace_ + "/leases";
}

}  // namespace lease_runner

std::string DefaultLeaseIdentity() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, 8, "arbiter");
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(gen()));
  return std::string(host) + "_" + hex;
}

LeaseRunner::LeaseRunner(kubeclient::KubeConfig kube, LeaseConfig config,
                         std::function<void(const std::string&)> log,
                         std::function<void()> on_change)
    : kube_(std::move(kube)),
      config_(config),
      log_(std::move(log)),
      on_change_(std::move(on_change)),
      elector_(std::move(config)) {}

LeaseRunner::~LeaseRunner() { Stop(false); }

std::string LeaseRunner::Describe() const { return config_.namespace_ + "/" + config_.name; }

Status LeaseRunner::Start() {
  kubeclient::ClientOptions o;
  o.connect_timeout = std::min<Millis>(5000, config_.renew_deadline);
  o.read_timeout = config_.renew_deadline;  // a hung request ends by the deadline
  o.max_body_bytes = 1 << 20;
  o.user_agent = "arbiter-scheduler/leader-election " + config_.identity;
  auto c = ApiClient::Connect(kube_, o);
  if (!c.ok()) return c.status();
  client_ = std::move(c).value();
  Say("leader election on Lease " + Describe() + " as " + config_.identity + " (lease " +
      FormatDuration(config_.lease_duration) + ", renew deadline " +
      FormatDuration(config_.renew_deadline) + ", retry " + FormatDuration(config_.retry_period) +
      ")");
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void LeaseRunner::Say(const std::string& m) {
  if (m == last_said_) return;
  last_said_ = m;
  if (log_) log_(m);
}

bool LeaseRunner::Sleep(Millis ms) {
  std::unique_lock<std::mutex> l(mu_);
  return !cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return stop_.load(); });
}

bool LeaseRunner::Write(ApiClient& c, const LeaseWrite& w, Millis started) {
  const std::string path = lease_runner::CollectionPath(config_) + "/" + config_.name;
  auto r = w.kind == LeaseWrite::Kind::kCreate
               ? c.Post(lease_runner::CollectionPath(config_), w.body.dump())
               : c.Put(path, w.body.dump());
  if (!r.ok()) {
    Say("Lease " + Describe() + ": " + r.message());
    return false;
  }
  if (r->status == 409) return false;  // someone else wrote it first (optimistic concurrency)
  if (r->status != 200 && r->status != 201) {
    Say("Lease " + Describe() + ": HTTP " + std::to_string(r->status) + ": " +
        kubeclient::StatusMessage(r->body));
    return false;
  }
  elector_.Written(w, Json::parse(r->body, nullptr, false), started, lease_runner::WallNow());
  return true;
}

bool LeaseRunner::Attempt(ApiClient& c) {
  const Millis started = lease_runner::WallNow();
  if (LeaseWrite fast = elector_.FastRenew(started); fast.kind != LeaseWrite::Kind::kNone) {
    if (Write(c, fast, started)) return true;  // else read it, as client-go's slow path
  }
  auto g = c.Get(lease_runner::CollectionPath(config_) + "/" + config_.name);
  if (!g.ok()) {
    Say("Lease " + Describe() + ": " + g.message());
    return false;
  }
  std::optional<LeaseObject> read;
  if (g->status == 200) {
    auto parsed = ParseLease(Json::parse(g->body, nullptr, false));
    if (!parsed.ok()) {
      Say("Lease " + Describe() + ": " + parsed.message());
      return false;
    }
    read = std::move(*parsed);
  } else if (g->status != 404) {
    Say("Lease " + Describe() + ": HTTP " + std::to_string(g->status) + ": " +
        kubeclient::StatusMessage(g->body));
    return false;
  }
  const LeaseWrite w = elector_.Decide(read, lease_runner::WallNow());
  if (w.kind == LeaseWrite::Kind::kNone) {
    if (elector_.observed().holder != last_holder_) {
      last_holder_ = elector_.observed().holder;
      Say("Lease " + Describe() + " is held by " + last_holder_ + ": standing by");
    }
    return false;
  }
  return Write(c, w, started);
}

// Lost only when an attempt ends without renewing past the deadline, or shows another holder. A
// renewal that is merely late (an attempt slower than what was left of the renew deadline: under
// load an acquisition's read and write took 2 s, leaving nothing before the next renewal, a retry
// period later) pauses the leader (Acting false: no API call) until it succeeds; the Lease is
// still its own then, since the write carried the resourceVersion of its last one.
void LeaseRunner::Run() {
  std::mt19937_64 gen(std::hash<std::string>()(config_.identity));
  std::uniform_int_distribution<Millis> jitter(0, config_.retry_period * 12 / 10);
  while (!stop_.load()) {
    const Millis began = lease_runner::WallNow();
    const bool held = Attempt(*client_);
    const Millis now = lease_runner::WallNow();
    if ((held || led_.load()) && now - began > config_.retry_period)
      Say("Lease " + Describe() + ": " + (held ? "renewal" : "failed renewal") + " took " +
          std::to_string(now - began) + " ms");
    const bool was_acting = Acting(now);
    acting_until_.store(elector_.IsLeader() ? elector_.acting_until() : 0);
    if (held && !led_.load()) {
      led_.store(true);
      Say("acquired Lease " + Describe() + " as " + config_.identity + " (leaseTransitions " +
          std::to_string(elector_.observed().transitions) + "): leading");
    }
    if (led_.load() && (!elector_.IsLeader() || (!held && !elector_.Acting(now)))) {
      acting_until_.store(0);
      lost_.store(true);
      Say(elector_.IsLeader()
              ? "lost Lease " + Describe() + ": not renewed within the renew deadline (" +
                    FormatDuration(config_.renew_deadline) + "; the last attempt took " +
                    std::to_string(now - began) + " ms)"
              : "lost Lease " + Describe() + ": now held by " + elector_.observed().holder);
      if (on_change_) on_change_();
      return;
    }
    if (held && !was_acting && on_change_) on_change_();  // acting (again)
    if (!Sleep(led_.load() ? config_.retry_period : config_.retry_period + jitter(gen))) return;
  }
}

void LeaseRunner::Stop(bool release) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!release || !client_) return;
  const Millis now = lease_runner::WallNow();
  const LeaseWrite w = elector_.Release(now);
  acting_until_.store(0);
  if (w.kind == LeaseWrite::Kind::kNone) return;
  if (Write(*client_, w, now)) Say("released Lease " + Describe());
}

}  // namespace arbiter::kubesched
