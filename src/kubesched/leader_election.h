// Leader election on a coordination.k8s.io/v1 Lease, as client-go's tools/leaderelection does it
// for kube-scheduler (`--leader-elect`): the decisions only. Pure: no I/O, no clock, no threads
// (every call carries `now`, wall-clock Unix milliseconds); src/kubesched/lease_runner.h reads
// and writes the Lease.
//
// The rules (client-go v0.36 tryAcquireOrRenew):
//  - A candidate reads the Lease. None: it creates one naming itself (acquireTime = renewTime =
//    now, leaseTransitions 0).
//  - Expiry is judged on the candidate's own clock, never on the holder's timestamps: the time at
//    which it last saw the Lease's spec change (observedTime) plus the holder's
//    leaseDurationSeconds. A Lease with a holder, not yet expired, held by someone else: wait.
//  - Otherwise it writes the Lease naming itself (PUT with the resourceVersion it read: a
//    concurrent writer makes it a 409 and the attempt fails). Taking it over from another holder
//    adds one to leaseTransitions and sets acquireTime; renewing keeps both and moves renewTime.
//  - The leader renews every retry period, first without reading (a PUT with the resourceVersion
//    of its own last write), falling back to a read on failure.
//  - The leader acts only until renew-deadline after the start of its last successful renewal:
//    past that it has lost and must stop (kube-scheduler exits). Since renew-deadline is shorter
//    than the lease duration, it has stopped before any other candidate can see the Lease expire.
//    (client-go counts the deadline from the start of the renewal round, a retry period later:
//    this is the stricter reading.)
//  - Released on a clean stop (kube-scheduler's ReleaseOnCancel): holder "", leaseDurationSeconds
//    1, so a standby takes over at its next retry instead of a lease duration later.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/duration.h"
#include "core/status.h"

namespace arbiter::kubesched {

struct LeaseConfig {
  std::string namespace_ = "kube-system";
  std::string name = "arbiter";
  std::string identity;           // holderIdentity: unique per process (hostname_random)
  Millis lease_duration = 15000;  // whole seconds (leaseDurationSeconds is an integer)
  Millis renew_deadline = 10000;
  Millis retry_period = 2000;
};

// client-go's checks: lease duration > renew deadline > 1.2 x retry period > 0; the lease
// duration in whole seconds; a name and namespace that are DNS labels/subdomains; an identity.
Status ValidateLeaseConfig(const LeaseConfig& c);

// LeaderElectionRecord as a Lease's spec carries it.
struct LeaseRecord {
  std::string holder;
  int64_t duration_seconds = 0;
  std::string acquire_time, renew_time;  // MicroTime text
  int64_t transitions = 0;
};

// A Lease object as read: its record, the spec's text (what "changed" is judged on) and the
// object itself (written back with the new spec: labels and annotations kept).
struct LeaseObject {
  LeaseRecord record;
  std::string raw;
  nlohmann::json object;
};
// Bounded: a Lease whose spec fields are of the wrong type is an error, not a crash.
Result<LeaseObject> ParseLease(const nlohmann::json& object);

// What to do after a read (or before one, on the fast path).
struct LeaseWrite {
  enum class Kind { kNone, kCreate, kUpdate };
  Kind kind = Kind::kNone;
  LeaseRecord record;
  nlohmann::json body;  // the Lease to POST (kCreate) or PUT (kUpdate, with its resourceVersion)
};

class LeaderElector {
 public:
  explicit LeaderElector(LeaseConfig config);

  // The leader's renewal without a read, while its lease is valid (kNone otherwise).
  LeaseWrite FastRenew(Millis now) const;
  // After reading the Lease at `now` (nullopt: it does not exist): what to write.
  LeaseWrite Decide(const std::optional<LeaseObject>& read, Millis now);
  // A write succeeded: `written` is the server's answer (the Lease with its new resourceVersion);
  // `started` when the attempt began (the acting deadline counts from it), `now` after it.
  void Written(const LeaseWrite& w, const nlohmann::json& written, Millis started, Millis now);
  // The release on a clean stop: kNone unless leader with a valid lease.
  LeaseWrite Release(Millis now) const;

  bool IsLeader() const { return observed_.holder == config_.identity; }
  // Leader, and its last successful renewal started less than renew-deadline ago.
  bool Acting(Millis now) const { return IsLeader() && now < acting_until_; }
  Millis acting_until() const { return acting_until_; }
  // The holder as last seen ("" none) and whether its lease looked valid at `now`.
  const LeaseRecord& observed() const { return observed_; }
  bool LeaseValid(Millis now) const;
  const LeaseConfig& config() const { return config_; }

 private:
  LeaseRecord Mine(Millis now) const;
  nlohmann::json Body(const nlohmann::json& base, const LeaseRecord& r) const;

  LeaseConfig config_;
  LeaseRecord observed_;
  std::string observed_raw_;
  Millis observed_time_ = 0;
  nlohmann::json object_;  // the Lease as last read or written (null: none yet)
  Millis acting_until_ = 0;
};

}  // namespace arbiter::kubesched
