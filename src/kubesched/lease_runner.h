// `arbiter scheduler --leader-elect`: the Lease read and written on kube-apiserver in a thread of
// its own (so that a long scheduling cycle never delays a renewal), with the decisions of
// LeaderElector (leader_election.h). A candidate tries every retry period plus a jitter of up to
// 1.2 retry periods (client-go's JitterUntil); the leader renews every retry period. The
// scheduling loop asks Acting() before each cycle and each API call: a leader whose last
// successful renewal started more than the renew deadline ago makes none; it has lost (and the
// process exits, as kube-scheduler does) once an attempt ends without renewing past the deadline
// or shows another holder, and acts again if the renewal in flight succeeds. The Lease: GET/PUT
// /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME, POST to create it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "adapters/kubeclient/kubeconfig_reader.h"
#include "core/status.h"
#include "kubesched/leader_election.h"

namespace arbiter::kubeclient {
class ApiClient;
}

namespace arbiter::kubesched {

class LeaseRunner {
 public:
  // `on_change`: called (from the runner's thread) when it starts or stops acting.
  LeaseRunner(kubeclient::KubeConfig kube, LeaseConfig config,
              std::function<void(const std::string&)> log, std::function<void()> on_change);
  ~LeaseRunner();  // Stop(false)
  // Connects (an error when the kubeconfig's TLS settings are unusable) and starts the thread.
  Status Start();
  // Leader with a renewal that started less than the renew deadline ago: may make API calls.
  bool Acting(Millis now) const { return now < acting_until_.load(); }
  // Was the leader at some point.
  bool EverLed() const { return led_.load(); }
  // Led, then an attempt ended without renewing past the renew deadline, or the Lease named
  // another holder: stop for good (and exit). A leader neither Acting nor Lost has a renewal
  // overdue, still being tried (in flight, or failed within the deadline): it pauses.
  bool Lost() const { return lost_.load(); }
  // Stops the thread; `release`: a leader still acting gives the Lease up (holder "", duration
  // 1 s) so that a standby takes over at its next retry.
  void Stop(bool release);
  std::string Describe() const;  // "kube-system/arbiter"

 private:
  void Run();
  // One client-go tryAcquireOrRenew: true when this process holds the Lease after it.
  bool Attempt(kubeclient::ApiClient& c);
  bool Write(kubeclient::ApiClient& c, const LeaseWrite& w, Millis started);
  void Say(const std::string& m);  // logs m unless it is what was said last
  bool Sleep(Millis ms);

  kubeclient::KubeConfig kube_;
  LeaseConfig config_;
  std::function<void(const std::string&)> log_;
  std::function<void()> on_change_;
  LeaderElector elector_;  // the runner's thread only (and Stop after the join)
  std::unique_ptr<kubeclient::ApiClient> client_;
  std::string last_said_, last_holder_;
  std::atomic<Millis> acting_until_{0};
  std::atomic<bool> led_{false}, lost_{false}, stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

// hostname_<16 random hex digits>, as kube-scheduler's hostname_<uuid>.
std::string DefaultLeaseIdentity();

}  // namespace arbiter::kubesched
