// Journal format 2 (issue 25): a record carries the engine commands its mutation gave the engine
// (server/durability/command_tape.h), and replay plays them instead of loading, validating and
// admitting the object again. A record today's validator would refuse still replays, to the state
// the daemon had when it accepted it; the Job controller's refused creates replay as refusals; a
// record whose commands contradict it, or are corrupt, stops the start-up with its number.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "server/cluster_fixtures.h"
#include "server/daemon.h"
#include "server/metrics/metrics.h"
#include "server/state/kind_table.h"

namespace arbiter::server {
namespace journal_commands_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::PodIn;

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-journal-commands-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

// A record as the daemon writes it: the mutation's JSON and its commands.
struct Record {
  std::string text;
  std::string commands;
};

Json JobIn(const std::string& ns, const std::string& name, const std::string& cpu, int completions,
           int parallelism) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"completions", completions},
            {"parallelism", parallelism},
            {"template",
             {{"metadata", {{"annotations", {{"arbiter.dev/duration", "10s"}}}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"containers",
                 {{{"name", "main"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}}}}}};
}

Mutation DeleteOf(Millis t, const std::string& kind, const std::string& ns,
                  const std::string& name) {
  Mutation m = fixtures::Delete(t, kind, ns, name);
  m.grace_period = 0;
  return m;
}

// The mutations of the test's cluster: policy objects (a PodDisruptionBudget, whose status replay
// keeps; a LimitRange), pods that run and finish, a Job whose pods are made by the controller,
// a Job whose pods the LimitRange refuses, deletes and the clock.
std::vector<Mutation> Mutations() {
  Json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web"}, {"namespace", "default"}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
  Json limits = {{"apiVersion", "v1"},
                 {"kind", "LimitRange"},
                 {"metadata", {{"name", "cap"}, {"namespace", "team"}}},
                 {"spec", {{"limits", {{{"type", "Container"}, {"max", {{"cpu", "2"}}}}}}}}};
  Json web = PodIn("default", "web-1", 1, "30s");
  web["metadata"]["labels"]["app"] = "web";
  std::vector<Mutation> ms = {Create(kT0, Namespace("default")),
                              Create(kT0, Namespace("team")),
                              Create(kT0, Node("n1", 2)),
                              Create(kT0, Node("n2", 2)),
                              Create(kT0, pdb),
                              Create(kT0, limits),
                              Create(kT0 + 10, web),
                              Create(kT0 + 20, PodIn("default", "edited", 1)),
                              Create(kT0 + 30, JobIn("default", "train", "1", 3, 2)),
                              Create(kT0 + 40, JobIn("team", "capped", "4", 1, 1)),
                              Advance(kT0 + 15000),
                              DeleteOf(kT0 + 16000, "Pod", "default", "edited"),
                              Advance(kT0 + 60000)};
  return ms;
}

// The records of `ms` applied by a live cluster (which must accept each), and that cluster.
std::vector<Record> Live(Cluster& c, const std::vector<Mutation>& ms) {
  std::vector<Record> out;
  for (const Mutation& m : ms) {
    MutationResult r = c.Apply(m);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
    out.push_back({m.Encode(), c.TakeTape()});
  }
  return out;
}

void WriteJournal(const std::filesystem::path& dir, const std::vector<Record>& records) {
  auto j = Journal::Open(dir.string());
  ASSERT_TRUE(j.ok()) << j.message();
  j.value()->Start(0);
  int64_t last = 0;
  for (const Record& r : records) last = j.value()->Append(r.text, r.commands);
  ASSERT_TRUE(j.value()->WaitDurable(last));
  j.value()->Stop();
}

std::string InstanceOf(const std::filesystem::path& dir) {
  auto j = Journal::Open(dir.string());
  EXPECT_TRUE(j.ok()) << j.message();
  return j.ok() ? j.value()->instance_id() : "";
}

Result<std::unique_ptr<Daemon>> OpenAt(const std::filesystem::path& dir, Millis now) {
  DaemonOptions o;
  o.data_dir = dir.string();
  o.clock = [now] { return now; };
  o.snapshot_every = 0;
  o.check_invariants = true;
  return Daemon::Open(o);
}

// Every stored object, by kind, namespace and name.
Json Objects(const Cluster& c) {
  Json out = Json::object();
  for (const auto& k : ServedKinds())
    for (const auto& [key, obj] : c.store().All(k.kind))
      out[std::string(k.kind) + " " + key.first + "/" + key.second] = *obj;
  return out;
}

TEST(JournalCommandsTest, ARecordTodaysValidatorRefusesReplaysToTheStateItWasAcceptedIn) {
  const auto dir = Dir("refused-today");
  const std::string instance = InstanceOf(dir);
  std::vector<Mutation> ms = Mutations();
  Cluster live(instance);
  std::vector<Record> records = Live(live, ms);
  // Record 8 (the pod "edited") as an earlier release accepted it: with an annotation that
  // release knew and this one refuses. Its commands are the ones that release gave the engine.
  Mutation edited = ms[7];
  edited.object["metadata"]["annotations"]["arbiter.dev/retired"] = "x";
  records[7].text = edited.Encode();
  {  // Today's validator refuses it (a format-1 journal with it would not start).
    Cluster today(instance);
    for (size_t i = 0; i < 7; ++i) fixtures::Ok(today, ms[i]);
    MutationResult r = today.Apply(edited);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid);
  }
  WriteJournal(dir, records);

  auto d = OpenAt(dir, kT0 + 60000);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().replayed, static_cast<int64_t>(records.size()));
  // The same cluster as the live one: objects (with their resourceVersions, uids, statuses and
  // Events), decisions, and the engine's state byte for byte. The pod "edited" was deleted; its
  // Events are the live ones.
  d.value()->Read([&](const Cluster& c) {
    EXPECT_EQ(Objects(c), Objects(live));
    EXPECT_EQ(c.store().resource_version(), live.store().resource_version());
    EXPECT_EQ(c.decision_digest(), live.decision_digest());
    EXPECT_EQ(c.decision_count(), live.decision_count());
    EXPECT_EQ(c.engine().Snapshot(), live.engine().Snapshot());
    // The Job made its three pods (two, then one as they finished); the capped Job's pod was
    // refused each time, as when it was applied.
    const Json* train = c.store().Get("Job", "default", "train");
    EXPECT_NE(train, nullptr);
    EXPECT_EQ(train ? train->at("status").value("succeeded", 0) : -1, 3);
    EXPECT_TRUE(c.store().List("Pod", "team").empty());
    return 0;
  });
}

TEST(JournalCommandsTest, TheStoredObjectIsTheRecordsAndTheEngineGetsTheRecordsCommands) {
  const auto dir = Dir("stored-as-recorded");
  const std::string instance = InstanceOf(dir);
  const std::vector<Mutation> all = Mutations();
  std::vector<Mutation> ms(all.begin(), all.begin() + 8);
  Cluster live(instance);
  std::vector<Record> records = Live(live, ms);
  Mutation edited = ms[7];
  edited.object["metadata"]["annotations"]["arbiter.dev/retired"] = "x";
  records[7].text = edited.Encode();
  WriteJournal(dir, records);
  auto d = OpenAt(dir, kT0 + 20);
  ASSERT_TRUE(d.ok()) << d.message();
  d.value()->Read([&](const Cluster& c) {
    const Json* pod = c.store().Get("Pod", "default", "edited");
    const Json* was = live.store().Get("Pod", "default", "edited");
    EXPECT_TRUE(pod && was);
    if (!pod || !was) return 0;
    EXPECT_EQ(pod->at("metadata").at("annotations").value("arbiter.dev/retired", ""), "x");
    Json expected = *was;
    expected["metadata"]["annotations"]["arbiter.dev/retired"] = "x";
    EXPECT_EQ(*pod, expected);  // bound where it was, with the same uid and resourceVersion
    EXPECT_EQ(c.engine().Snapshot(), live.engine().Snapshot());
    return 0;
  });
}

void ExpectStops(const std::string& name, const std::function<void(std::vector<Record>&)>& change,
                 const std::string& message) {
  const auto dir = Dir(name);
  const std::string instance = InstanceOf(dir);
  Cluster live(instance);
  std::vector<Record> records = Live(live, Mutations());
  change(records);
  WriteJournal(dir, records);
  auto d = OpenAt(dir, kT0 + 60000);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find(message), std::string::npos) << d.message();
}

TEST(JournalCommandsTest, CommandsThatContradictTheRecordStopTheStartUpWithItsNumber) {
  // A Node's create with a Namespace's commands.
  ExpectStops(
      "other-kind", [](std::vector<Record>& r) { r[2].commands = r[0].commands; },
      "journal record 3: replay refused an accepted mutation: the record's commands do not match "
      "the replay: UpsertNamespace for a Node");
  // Two pods' creates with each other's SubmitPod.
  ExpectStops(
      "other-pod", [](std::vector<Record>& r) { std::swap(r[6].commands, r[7].commands); },
      "journal record 7: replay refused an accepted mutation: the record's commands do not match "
      "the replay: SubmitPod of default/edited for the Pod default/web-1");
  // A delete without its commands.
  ExpectStops(
      "missing", [](std::vector<Record>& r) { r[11].commands.clear(); },
      "journal record 12: replay refused an accepted mutation: the record's commands do not match "
      "the replay: it has no more commands where the replay gives the engine DeletePod");
}

TEST(JournalCommandsTest, CorruptCommandsStopTheStartUpWithTheirRecordsNumber) {
  const auto dir = Dir("corrupt");
  const std::string instance = InstanceOf(dir);
  Cluster live(instance);
  std::vector<Record> records = Live(live, Mutations());
  records[4].commands[records[4].commands.size() - 3] ^= 0x20;  // a byte of its Tick's body
  WriteJournal(dir, records);
  auto d = OpenAt(dir, kT0 + 60000);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("journal record 5: command tape entry"), std::string::npos)
      << d.message();
}

// Replay reads the pods' declared use (arbiter.dev/usage) again from the stored pods, and only
// theirs: the pods whose text does not name the annotation are not parsed (issue 27's restart at
// 1M live pods), and a pod that declares one serves it after the restart as before.
TEST(JournalCommandsTest, ReplayedPodsKeepTheirDeclaredUsage) {
  const auto dir = Dir("declared-usage");
  const std::string instance = InstanceOf(dir);
  Json declares = PodIn("default", "declares", 1);
  declares["metadata"]["annotations"] = {{"arbiter.dev/usage", "cpu=250m"}};
  const std::vector<Mutation> ms = {Create(kT0, Namespace("default")), Create(kT0, Node("n1", 2)),
                                    Create(kT0, declares),
                                    Create(kT0, PodIn("default", "plain", 1))};
  Cluster live(instance);
  WriteJournal(dir, Live(live, ms));
  auto d = OpenAt(dir, kT0 + 10000);
  ASSERT_TRUE(d.ok()) << d.message();
  auto usage = [](const Cluster& c, const std::string& pod) {
    const std::string text = RenderMetrics(c, JournalStats{}, kT0 + 10000);
    const std::string series =
        "container_cpu_usage_seconds_total{namespace=\"default\",pod=\"" + pod + "\",container=";
    const size_t at = text.find(series);
    if (at == std::string::npos) return std::string("absent");
    const size_t end = text.find('\n', at);
    return text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1);
  };
  EXPECT_EQ(usage(live, "declares"), "2.5");  // 0.25 cores for 10 s, not the request
  d.value()->Read([&](const Cluster& c) {
    EXPECT_EQ(usage(c, "declares"), "2.5");
    EXPECT_EQ(usage(c, "plain"), usage(live, "plain"));
    return 0;
  });
}

}  // namespace journal_commands_test
}  // namespace arbiter::server
