#include "kubesched/leader_election.h"

#include "kubesched/micro_time.h"

namespace arbiter::kubesched {

using Json = nlohmann::json;

namespace {

bool DnsName(const std::string& s, size_t max, bool dots) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.')))
      return false;
  return s.front() != '-' && s.back() != '-' && s.front() != '.' && s.back() != '.';
}

Status Field(const Json& spec, const char* key, bool integer) {
  if (!spec.contains(key) || spec[key].is_null()) return Status::Ok();
  const Json& v = spec[key];
  if (integer ? v.is_number_integer() : v.is_string()) return Status::Ok();
  return Status::InvalidArgument(std::string("Lease spec.") + key + " is not " +
                                 (integer ? "an integer" : "a string"));
}

}  // namespace

Status ValidateLeaseConfig(const LeaseConfig& c) {
  if (c.retry_period <= 0) return Status::InvalidArgument("the retry period must be positive");
  // client-go: RenewDeadline > JitterFactor (1.2) x RetryPeriod; LeaseDuration > RenewDeadline.
  if (c.renew_deadline * 10 <= c.retry_period * 12)
    return Status::InvalidArgument("the renew deadline (" + FormatDuration(c.renew_deadline) +
                                   ") must be longer than 1.2 x the retry period (" +
                                   FormatDuration(c.retry_period) + ")");
  if (c.lease_duration <= c.renew_deadline)
    return Status::InvalidArgument("the lease duration (" + FormatDuration(c.lease_duration) +
                                   ") must be longer than the renew deadline (" +
                                   FormatDuration(c.renew_deadline) + ")");
  if (c.lease_duration % 1000 != 0)
    return Status::InvalidArgument("the lease duration (" + FormatDuration(c.lease_duration) +
                                   ") must be whole seconds (leaseDurationSeconds)");
  if (!DnsName(c.name, 253, true))
    return Status::InvalidArgument("the lease name \"" + c.name +
                                   "\" is not a DNS subdomain (lower-case letters, digits, '-', "
                                   "'.')");
  if (!DnsName(c.namespace_, 63, false))
    return Status::InvalidArgument("the lease namespace \"" + c.namespace_ +
                                   "\" is not a DNS label (lower-case letters, digits, '-')");
  if (c.identity.empty()) return Status::InvalidArgument("the holder identity is empty");
  return Status::Ok();
}

Result<LeaseObject> ParseLease(const Json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object() ||
      !object["metadata"].contains("resourceVersion") ||
      !object["metadata"]["resourceVersion"].is_string())
    return Status::InvalidArgument("not a Lease object with a metadata.resourceVersion");
  LeaseObject out;
  out.object = object;
  const Json spec =
      object.contains("spec") && object["spec"].is_object() ? object["spec"] : Json::object();
  for (const char* k : {"holderIdentity", "acquireTime", "renewTime"})
    if (Status s = Field(spec, k, false); !s.ok()) return s;
  for (const char* k : {"leaseDurationSeconds", "leaseTransitions"})
    if (Status s = Field(spec, k, true); !s.ok()) return s;
  auto str = [&](const char* k) {
    return spec.contains(k) && spec[k].is_string() ? spec[k].get<std::string>() : std::string();
  };
  auto num = [&](const char* k) {
    return spec.contains(k) && spec[k].is_number_integer() ? spec[k].get<int64_t>() : int64_t{0};
  };
  out.record.holder = str("holderIdentity");
  out.record.duration_seconds = num("leaseDurationSeconds");
  out.record.acquire_time = str("acquireTime");
  out.record.renew_time = str("renewTime");
  out.record.transitions = num("leaseTransitions");
  out.raw = spec.dump();
  return out;
}

LeaderElector::LeaderElector(LeaseConfig config) : config_(std::move(config)) {}

bool LeaderElector::LeaseValid(Millis now) const {
  return observed_time_ + observed_.duration_seconds * 1000 > now;
}

LeaseRecord LeaderElector::Mine(Millis now) const {
  LeaseRecord r;
  r.holder = config_.identity;
  r.duration_seconds = config_.lease_duration / 1000;
  r.acquire_time = r.renew_time = FormatMicroTime(now);
  return r;
}

Json LeaderElector::Body(const Json& base, const LeaseRecord& r) const {
  Json out = base.is_object()
                 ? base
                 : Json{{"apiVersion", "coordination.k8s.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}}};
  out.erase("status");
  if (out["metadata"].is_object()) out["metadata"].erase("managedFields");
  out["spec"] = {{"holderIdentity", r.holder},
                 {"leaseDurationSeconds", r.duration_seconds},
                 {"acquireTime", r.acquire_time},
                 {"renewTime", r.renew_time},
                 {"leaseTransitions", r.transitions}};
  return out;
}

LeaseWrite LeaderElector::FastRenew(Millis now) const {
  LeaseWrite w;
  if (!IsLeader() || !LeaseValid(now) || object_.is_null()) return w;
  w.kind = LeaseWrite::Kind::kUpdate;
  w.record = Mine(now);
  w.record.acquire_time = observed_.acquire_time;
  w.record.transitions = observed_.transitions;
  w.body = Body(object_, w.record);
  return w;
}

LeaseWrite LeaderElector::Decide(const std::optional<LeaseObject>& read, Millis now) {
  LeaseWrite w;
  w.record = Mine(now);
  if (!read) {
    w.kind = LeaseWrite::Kind::kCreate;
    w.body = Body(Json(), w.record);
    return w;
  }
  if (read->raw != observed_raw_) {  // changed since last seen: the expiry counts from now
    observed_ = read->record;
    observed_raw_ = read->raw;
    observed_time_ = now;
  }
  object_ = read->object;
  if (!read->record.holder.empty() && LeaseValid(now) && !IsLeader()) return w;  // held
  if (IsLeader()) {
    w.record.acquire_time = read->record.acquire_time;
    w.record.transitions = read->record.transitions;
  } else {
    w.record.transitions = read->record.transitions + 1;
  }
  w.kind = LeaseWrite::Kind::kUpdate;
  w.body = Body(read->object, w.record);
  return w;
}

void LeaderElector::Written(const LeaseWrite& w, const Json& written, Millis started, Millis now) {
  observed_ = w.record;
  observed_time_ = now;
  object_ = written.is_object() ? written : Json();
  acting_until_ = w.record.holder == config_.identity ? started + config_.renew_deadline : 0;
}

LeaseWrite LeaderElector::Release(Millis now) const {
  LeaseWrite w;
  if (!Acting(now) || object_.is_null()) return w;
  w.kind = LeaseWrite::Kind::kUpdate;
  w.record.duration_seconds = 1;
  w.record.acquire_time = w.record.renew_time = FormatMicroTime(now);
  w.record.transitions = observed_.transitions;
  w.body = Body(object_, w.record);
  return w;
}

}  // namespace arbiter::kubesched
