// `arbiter scheduler --leader-elect`'s flags (apps/arbiter/scheduler_lease_flags.h): client-go's
// rules refused as usage errors (exit 2) before anything is read; the kubeconfig named does not
// exist, so a flag accepted shows as the kubeconfig's error (exit 1) instead.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "run_command.h"

namespace scheduler_lease_cli_test {

arbiter::testing::CommandOutput Scheduler(const std::string& args) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-sched-lease-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return arbiter::testing::RunCommandSplit(std::string(ARBITER_BINARY) +
                                               " scheduler --kubeconfig " + dir.string() +
                                               "/missing-kubeconfig " + args,
                                           dir);
}

void ExpectUsage(const arbiter::testing::CommandOutput& r, const std::string& want) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << "want: " << want << "\n" << r.err;
}

TEST(SchedulerLeaseCli, ClientGosRulesAreUsageErrors) {
  ExpectUsage(Scheduler("--leader-elect --leader-elect-renew-deadline 20s"),
              "arbiter scheduler: --leader-elect: the lease duration (15s) must be longer than the "
              "renew deadline (20s)");
  ExpectUsage(Scheduler("--leader-elect --leader-elect-retry-period 9s"),
              "the renew deadline (10s) must be longer than 1.2 x the retry period (9s)");
  ExpectUsage(Scheduler("--leader-elect --leader-elect-lease-duration 15500ms"),
              "must be whole seconds");
  ExpectUsage(Scheduler("--leader-elect --leader-elect-retry-period soon"),
              "arbiter scheduler: --leader-elect-retry-period:");
  ExpectUsage(Scheduler("--leader-elect --leader-elect-resource-namespace Kube_System"),
              "is not a DNS label");
  ExpectUsage(Scheduler("--leader-elect --scheduler-name Arbiter"), "is not a DNS subdomain");
}

TEST(SchedulerLeaseCli, AcceptedFlagsGoOnToTheKubeconfig) {
  for (const char* flags : {"--leader-elect",
                            "--leader-elect --leader-elect-lease-duration 3s "
                            "--leader-elect-renew-deadline 2s --leader-elect-retry-period 500ms",
                            // Without --leader-elect the durations are not used, hence not checked.
                            "--leader-elect-renew-deadline 20s"}) {
    const auto r = Scheduler(flags);
    EXPECT_EQ(r.rc, 1) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find("missing-kubeconfig"), std::string::npos) << flags << "\n" << r.err;
  }
}

}  // namespace scheduler_lease_cli_test
