#include "scheduler_lease_flags.h"

#include "cli_flags.h"
#include "kubesched/lease_runner.h"

namespace arbiter::app {

std::shared_ptr<LeaseFlags> AddLeaseFlags(CLI::App* cmd) {
  auto f = std::make_shared<LeaseFlags>();
  cmd->add_flag("--leader-elect", f->enabled,
                "run as one of several replicas: only the holder of a coordination.k8s.io/v1\n"
                "Lease schedules; the others keep their informers warm and take over when the\n"
                "Lease is not renewed (client-go's rules, as kube-scheduler)");
  cmd->add_option("--leader-elect-lease-duration", f->lease_duration,
                  "how long a standby waits, after it last saw the Lease change, before taking\n"
                  "it (whole seconds; default 15s)")
      ->type_name("DUR");
  cmd->add_option("--leader-elect-renew-deadline", f->renew_deadline,
                  "the leader stops (exit 1) when it has not renewed for this long (default 10s)")
      ->type_name("DUR");
  cmd->add_option("--leader-elect-retry-period", f->retry_period,
                  "how often the Lease is renewed or tried (default 2s)")
      ->type_name("DUR");
  cmd->add_option("--leader-elect-resource-name", f->name,
                  "the Lease's name (default: the --scheduler-name)");
  cmd->add_option("--leader-elect-resource-namespace", f->namespace_,
                  "the Lease's namespace (default kube-system)");
  return f;
}

int LeaseFromFlags(const char* cmd, const LeaseFlags& f, const std::string& scheduler_name,
                   std::optional<kubesched::LeaseConfig>* out) {
  out->reset();
  if (!f.enabled) return kExitOk;
  kubesched::LeaseConfig c;
  const std::pair<const char*, std::pair<const std::string*, Millis*>> durations[] = {
      {"--leader-elect-lease-duration", {&f.lease_duration, &c.lease_duration}},
      {"--leader-elect-renew-deadline", {&f.renew_deadline, &c.renew_deadline}},
      {"--leader-elect-retry-period", {&f.retry_period, &c.retry_period}}};
  for (const auto& [flag, d] : durations) {
    auto ms = ParseDuration(*d.first);
    if (!ms.ok()) return FlagError(cmd, flag, ms.message());
    *d.second = *ms;
  }
  c.name = f.name.empty() ? scheduler_name : f.name;
  c.namespace_ = f.namespace_;
  c.identity = kubesched::DefaultLeaseIdentity();
  if (Status s = kubesched::ValidateLeaseConfig(c); !s.ok())
    return FlagError(cmd, "--leader-elect", s.message());
  *out = std::move(c);
  return kExitOk;
}

}  // namespace arbiter::app
