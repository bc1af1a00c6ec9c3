// Leader election's decisions (src/kubesched/leader_election.h), without a cluster: Leases as
// kube-apiserver returns them in, the writes out, with client-go's rules (expiry on the
// candidate's own clock, leaseTransitions, acquireTime kept on renewal, the renew deadline). The
// same against a real kube-apiserver, two processes and a kill -9:
// tests/integration/kube_leader_election_test.cc.
#include "kubesched/leader_election.h"

#include <gtest/gtest.h>

namespace arbiter::kubesched {
namespace leader_election_test {

using Json = nlohmann::json;
constexpr Millis kT0 = 1764000000000;  // 2025-11-24T16:00:00Z

LeaseConfig Config(const std::string& identity) {
  LeaseConfig c;
  c.namespace_ = "kube-system";
  c.name = "arbiter";
  c.identity = identity;
  return c;  // 15 s, 10 s, 2 s
}

// The Lease as the API server returns a written one: the body plus a new resourceVersion.
Json Stored(Json body, int rv) {
  body["metadata"]["resourceVersion"] = std::to_string(rv);
  body["metadata"]["uid"] = "lease-uid";
  return body;
}

LeaseObject Read(const Json& stored) {
  auto r = ParseLease(stored);
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : LeaseObject{};
}

TEST(LeaderElection, CreatesAMissingLeaseAndActsUntilTheRenewDeadline) {
  LeaderElector a(Config("a"));
  EXPECT_FALSE(a.Acting(kT0));
  const LeaseWrite w = a.Decide(std::nullopt, kT0);
  ASSERT_EQ(w.kind, LeaseWrite::Kind::kCreate);
  EXPECT_EQ(w.body["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(w.body["metadata"]["name"], "arbiter");
  EXPECT_EQ(w.body["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(w.body["spec"]["holderIdentity"], "a");
  EXPECT_EQ(w.body["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(w.body["spec"]["leaseTransitions"], 0);
  EXPECT_EQ(w.body["spec"]["acquireTime"], "2025-11-24T16:00:00.000000Z");
  EXPECT_EQ(w.body["spec"]["renewTime"], w.body["spec"]["acquireTime"]);
  a.Written(w, Stored(w.body, 1), kT0, kT0 + 30);
  EXPECT_TRUE(a.IsLeader());
  EXPECT_TRUE(a.Acting(kT0 + 9999));
  EXPECT_FALSE(a.Acting(kT0 + 10000));  // the deadline counts from the start of the renewal
}

TEST(LeaderElection, ExpiryIsJudgedOnTheCandidatesOwnClockFromTheLastChangeItSaw) {
  LeaderElector a(Config("a")), b(Config("b"));
  const LeaseWrite wa = a.Decide(std::nullopt, kT0);
  Json stored = Stored(wa.body, 1);
  a.Written(wa, stored, kT0, kT0);
  // b sees a's Lease: held and not expired, even though b's clock is far ahead of renewTime.
  EXPECT_EQ(b.Decide(Read(stored), kT0 + 3600000).kind, LeaseWrite::Kind::kNone);
  EXPECT_EQ(b.observed().holder, "a");
  // Unchanged for less than 15 s of b's clock: still held.
  EXPECT_EQ(b.Decide(Read(stored), kT0 + 3600000 + 14999).kind, LeaseWrite::Kind::kNone);
  // a renews (the spec changes): b's clock starts again.
  const LeaseWrite renew = a.FastRenew(kT0 + 2000);
  ASSERT_EQ(renew.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(renew.body["metadata"]["resourceVersion"], "1");  // optimistic concurrency
  stored = Stored(renew.body, 2);
  a.Written(renew, stored, kT0 + 2000, kT0 + 2000);
  EXPECT_EQ(b.Decide(Read(stored), kT0 + 3600000 + 14999 + 1).kind, LeaseWrite::Kind::kNone);
  EXPECT_EQ(b.Decide(Read(stored), kT0 + 3600000 + 14999 + 14999).kind, LeaseWrite::Kind::kNone);
  // a stops renewing (killed): 15 s after b last saw a change, b takes it over.
  const LeaseWrite take = b.Decide(Read(stored), kT0 + 3600000 + 15000 + 15000);
  ASSERT_EQ(take.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(take.body["spec"]["holderIdentity"], "b");
  EXPECT_EQ(take.body["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(take.body["spec"]["acquireTime"], take.body["spec"]["renewTime"]);
  EXPECT_EQ(take.body["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(take.body["metadata"]["uid"], "lease-uid");
}

TEST(LeaderElection, RenewalKeepsAcquireTimeAndTransitionsAndTheObjectsMetadata) {
  LeaderElector b(Config("b"));
  Json held = Stored(Json::parse(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
      "metadata":{"name":"arbiter","namespace":"kube-system","labels":{"team":"x"},
                  "managedFields":[{"manager":"m"}]},
      "spec":{"holderIdentity":"a","leaseDurationSeconds":15,"leaseTransitions":4,
              "acquireTime":"2025-11-24T15:00:00.000000Z","renewTime":"2025-11-24T15:59:00.000000Z"}})"),
                     7);
  EXPECT_EQ(b.Decide(Read(held), kT0).kind, LeaseWrite::Kind::kNone);
  const LeaseWrite take = b.Decide(Read(held), kT0 + 15000);
  ASSERT_EQ(take.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(take.body["spec"]["leaseTransitions"], 5);
  EXPECT_EQ(take.body["metadata"]["labels"]["team"], "x");
  EXPECT_FALSE(take.body["metadata"].contains("managedFields"));
  const Json stored = Stored(take.body, 8);
  b.Written(take, stored, kT0 + 15000, kT0 + 15010);
  // The slow path (a read) of the leader: acquireTime and leaseTransitions kept.
  const LeaseWrite renew = b.Decide(Read(stored), kT0 + 17000);
  ASSERT_EQ(renew.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(renew.body["spec"]["leaseTransitions"], 5);
  EXPECT_EQ(renew.body["spec"]["acquireTime"], "2025-11-24T16:00:15.000000Z");
  EXPECT_EQ(renew.body["spec"]["renewTime"], "2025-11-24T16:00:17.000000Z");
  // The fast path too.
  const LeaseWrite fast = b.FastRenew(kT0 + 17000);
  ASSERT_EQ(fast.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(fast.body["spec"]["acquireTime"], "2025-11-24T16:00:15.000000Z");
  EXPECT_EQ(fast.body["spec"]["leaseTransitions"], 5);
}

TEST(LeaderElection, ALeaderThatSeesAnotherHolderHasLostAndAnEmptyHolderIsFree) {
  LeaderElector a(Config("a"));
  const LeaseWrite wa = a.Decide(std::nullopt, kT0);
  a.Written(wa, Stored(wa.body, 1), kT0, kT0);
  ASSERT_TRUE(a.Acting(kT0 + 1));
  Json other = Stored(wa.body, 2);
  other["spec"]["holderIdentity"] = "b";
  EXPECT_EQ(a.Decide(Read(other), kT0 + 3000).kind, LeaseWrite::Kind::kNone);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_FALSE(a.Acting(kT0 + 3000));
  EXPECT_EQ(a.FastRenew(kT0 + 3000).kind, LeaseWrite::Kind::kNone);
  // A released Lease (holder "") is taken at once, whatever its duration.
  Json released = other;
  released["spec"]["holderIdentity"] = "";
  released["metadata"]["resourceVersion"] = "3";
  const LeaseWrite w = a.Decide(Read(released), kT0 + 3001);
  ASSERT_EQ(w.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(w.body["spec"]["holderIdentity"], "a");
}

TEST(LeaderElection, ReleaseGivesUpTheLeaseOnlyWhileActing) {
  LeaderElector a(Config("a"));
  EXPECT_EQ(a.Release(kT0).kind, LeaseWrite::Kind::kNone);
  const LeaseWrite wa = a.Decide(std::nullopt, kT0);
  a.Written(wa, Stored(wa.body, 1), kT0, kT0);
  const LeaseWrite r = a.Release(kT0 + 500);
  ASSERT_EQ(r.kind, LeaseWrite::Kind::kUpdate);
  EXPECT_EQ(r.body["spec"]["holderIdentity"], "");
  EXPECT_EQ(r.body["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ(r.body["metadata"]["resourceVersion"], "1");
  a.Written(r, Stored(r.body, 2), kT0 + 500, kT0 + 500);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_FALSE(a.Acting(kT0 + 501));
  EXPECT_EQ(a.Release(kT0 + 20000).kind, LeaseWrite::Kind::kNone);  // lapsed: nothing to give
}

TEST(LeaderElection, ConfigFollowsClientGosRules) {
  LeaseConfig c = Config("a");
  EXPECT_TRUE(ValidateLeaseConfig(c).ok());
  c.renew_deadline = 2400;  // not > 1.2 x 2 s
  EXPECT_NE(ValidateLeaseConfig(c).message().find("1.2 x the retry period"), std::string::npos);
  c.renew_deadline = 15000;  // not < the lease duration
  EXPECT_NE(ValidateLeaseConfig(c).message().find("longer than the renew deadline"),
            std::string::npos);
  c = Config("a");
  c.lease_duration = 15500;
  EXPECT_NE(ValidateLeaseConfig(c).message().find("whole seconds"), std::string::npos);
  c = Config("a");
  c.name = "Arbiter_X";
  EXPECT_FALSE(ValidateLeaseConfig(c).ok());
  c = Config("");
  EXPECT_FALSE(ValidateLeaseConfig(c).ok());
}

TEST(LeaderElection, MalformedLeasesAreErrorsNotCrashes) {
  EXPECT_FALSE(ParseLease(Json::parse("[]")).ok());
  EXPECT_FALSE(ParseLease(Json::parse(R"({"metadata":{}})")).ok());
  EXPECT_FALSE(
      ParseLease(Json::parse(R"({"metadata":{"resourceVersion":"1"},"spec":{"holderIdentity":3}})"))
          .ok());
  EXPECT_FALSE(
      ParseLease(
          Json::parse(
              R"({"metadata":{"resourceVersion":"1"},"spec":{"leaseDurationSeconds":"15"}})"))
          .ok());
  auto empty = ParseLease(Json::parse(R"({"metadata":{"resourceVersion":"1"}})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->record.holder, "");
}

}  // namespace leader_election_test
}  // namespace arbiter::kubesched
