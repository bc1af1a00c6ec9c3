// Snapshots (issue 9): an engine restored from a snapshot taken at any command, given the
// remaining commands, produces byte for byte what the uninterrupted engine produces: the same
// events, run records and final statuses, and the same snapshot at the end. Random pools (the
// property tests' generator, with nodes joining and leaving), a random cut in each.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>

#include "core/engine/engine.h"
#include "core/engine/random_pool.h"
#include "core/serial.h"
#include "sim/simulator.h"

namespace arbiter::engine {
namespace {

using testing_pools::RandomPool;
using testing_pools::Rng;

// Everything the engine gives out, as text.
struct Transcript : EventSink, RunSink {
  std::vector<std::string> lines;
  void OnEvent(const Event& e) override {
    std::ostringstream o;
    o << "E " << e.time << " " << ToString(e.type) << " " << Value(e.workload) << " " << e.node
      << " " << e.by << " " << e.reason << " " << static_cast<int>(e.work_facts) << " " << e.grace
      << " " << e.message;
    lines.push_back(o.str());
  }
  void OnFinished(const WorkloadStatus& s) override {
    std::ostringstream o;
    o << "F " << Value(s.id) << " " << s.key << " " << ToString(s.phase) << " " << s.priority << " "
      << s.last_node << " " << s.first_start << " " << s.finish_time << " " << s.preemptions << " "
      << s.pending_total << " " << s.requests.ToString() << " " << s.message;
    lines.push_back(o.str());
  }
  void OnRun(const RunRecord& r) override {
    std::ostringstream o;
    o << "R " << Value(r.workload) << " " << r.node << " " << r.start << " " << r.end << " "
      << r.stopped_by << " " << r.stop_time;
    lines.push_back(o.str());
  }
};

std::vector<Command> CommandsOf(const ManifestSet& m, const sim::SimOptions& base) {
  std::vector<Command> out;
  sim::SimOptions o = base;
  o.on_command = [&](const Command& c) { out.push_back(c); };
  auto r = sim::RunSimulation(m, o);
  EXPECT_TRUE(r.ok()) << r.message();
  return out;
}

TEST(SnapshotPropertyTest, RestoredEngineContinuesByteForByte) {
  size_t checked = 0, commands = 0, preempted = 0, reclaimed = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = RandomPool(seed);
    Rng r{seed * 104729 + 3};
    if (seed % 2 == 0)  // half the pools change while they run
      for (auto& n : m.nodes) {
        if (r.Chance(30)) n.sim.add_time = r.Uniform(1, 180) * 60000;
        if (r.Chance(30)) n.sim.remove_time = n.sim.add_time + r.Uniform(1, 360) * 60000;
      }
    sim::SimOptions so;
    so.until = 12 * 3600 * 1000;
    so.seed = seed;
    if (seed % 5 == 0) so.placement = PlacementPolicyName::kRandom;  // a policy with its own state
    if (seed % 7 == 0) so.placement = PlacementPolicyName::kFGD;
    const std::vector<Command> cmds = CommandsOf(m, so);
    ASSERT_FALSE(cmds.empty());
    commands += cmds.size();
    EngineOptions eo;
    eo.seed = so.seed;
    eo.placement = so.placement;
    eo.placement_profile = sim::ProfileOfPods(m.pods);
    // The uninterrupted run, snapshotted at three random commands.
    Engine a(eo);
    Transcript ta;
    a.SetSinks(&ta, &ta);
    std::vector<size_t> cuts;
    for (int k = 0; k < 3; ++k)
      cuts.push_back(static_cast<size_t>(r.Uniform(0, static_cast<int64_t>(cmds.size()))));
    std::map<size_t, std::pair<std::string, size_t>> snaps;  // cut -> snapshot, outputs before it
    for (size_t i = 0; i <= cmds.size(); ++i) {
      if (std::find(cuts.begin(), cuts.end(), i) != cuts.end())
        snaps[i] = {a.Snapshot(), ta.lines.size()};
      if (i < cmds.size()) {
        ASSERT_TRUE(a.Apply(cmds[i]).ok()) << CommandName(cmds[i]);
      }
    }
    const std::string final_snapshot = a.Snapshot();
    // Restored at each cut, the rest of the commands: the same outputs, the same end state.
    for (const auto& [cut, saved] : snaps) {
      const auto& [snap, lines_at_cut] = saved;
      auto b = Engine::Restore(snap);
      ASSERT_TRUE(b.ok()) << b.message();
      EXPECT_EQ((*b)->Snapshot(), snap) << "a restored engine snapshots to the same bytes";
      Transcript tb;
      (*b)->SetSinks(&tb, &tb);
      // The rest of the commands as a journal would give them back: encoded, then decoded.
      for (size_t i = cut; i < cmds.size(); ++i) {
        const std::string bytes = EncodeCommand(cmds[i]);
        auto decoded = DecodeCommand(bytes);
        ASSERT_TRUE(decoded.ok()) << decoded.message();
        ASSERT_EQ(EncodeCommand(*decoded), bytes);
        ASSERT_TRUE((*b)->Apply(*decoded).ok()) << CommandName(cmds[i]);
      }
      ASSERT_EQ(ta.lines.size() - lines_at_cut, tb.lines.size())
          << "cut at command " << cut << " of " << cmds.size();
      for (size_t i = 0; i < tb.lines.size(); ++i)
        ASSERT_EQ(ta.lines[lines_at_cut + i], tb.lines[i]) << "output " << i;
      EXPECT_EQ(final_snapshot, (*b)->Snapshot());
      ASSERT_TRUE((*b)->CheckInvariants().ok());
      for (size_t i = lines_at_cut; i < ta.lines.size(); ++i) {
        preempted +=
            ta.lines[i].rfind("E", 0) == 0 && ta.lines[i].find(" Preempted ") != std::string::npos;
        reclaimed +=
            ta.lines[i].rfind("E", 0) == 0 && ta.lines[i].find(" Reclaimed ") != std::string::npos;
      }
    }
    ++checked;
  }
  std::printf(
      "snapshot property: %zu pools, %zu commands, %zu preemptions and %zu reclaims after a cut\n",
      checked, commands, preempted, reclaimed);
  // The runs must exercise the interesting paths after the cuts, or the property proves little.
  EXPECT_GT(preempted, 100u);
  EXPECT_GT(reclaimed, 10u);
}

// Issue 27 (snapshots off the request path): a capture encodes to the bytes Snapshot() gave when
// it was taken, however the engine changes afterwards and even once the engine is gone (it shares
// nothing the engine changes). Random pools, captures at random commands; the engine runs on to the
// end, then is destroyed before the captures are encoded.
TEST(SnapshotPropertyTest, CaptureEncodesToTheSnapshotOfItsTime) {
  size_t captures = 0, moved_on = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = RandomPool(seed);
    Rng r{seed * 7919 + 11};
    sim::SimOptions so;
    so.until = 12 * 3600 * 1000;
    so.seed = seed;
    if (seed % 5 == 0) so.placement = PlacementPolicyName::kRandom;
    const std::vector<Command> cmds = CommandsOf(m, so);
    ASSERT_FALSE(cmds.empty());
    EngineOptions eo;
    eo.seed = so.seed;
    eo.placement = so.placement;
    eo.placement_profile = sim::ProfileOfPods(m.pods);
    auto a = std::make_unique<Engine>(eo);
    std::vector<std::pair<std::shared_ptr<const EngineCapture>, std::string>> taken;
    for (size_t i = 0; i < cmds.size(); ++i) {
      if (r.Chance(10)) taken.emplace_back(a->Capture(), a->Snapshot());
      ASSERT_TRUE(a->Apply(cmds[i]).ok()) << CommandName(cmds[i]);
    }
    const std::string final_snapshot = a->Snapshot();
    a.reset();
    for (const auto& [capture, snapshot] : taken) {
      ASSERT_EQ(Engine::EncodeCapture(*capture), snapshot);
      moved_on += snapshot != final_snapshot;
      ++captures;
    }
  }
  // Captures of busy states, taken long before the engine's end.
  EXPECT_GT(captures, 400u);
  EXPECT_GT(moved_on, captures * 9 / 10);
}

// The chunk freeze (slot_table.h): a capture shares the workload table's chunks rather than
// copying its records, and the engine copies a chunk before it next touches it. A pool of 5,000
// pods (five chunks of 1,024), captured between bursts of commands that bind, finish, delete and
// submit pods in every chunk: each capture still encodes to the snapshot of its time once the
// engine has run on, and the engine's outputs and end state are those of a run never captured.
// Fails if a chunk a capture holds is written (no copy before the write).
TEST(SnapshotPropertyTest, CapturesShareTheTableAndKeepTheirInstant) {
  auto node = [](int i) {
    Node n;
    n.meta.name = "n" + std::to_string(i);
    n.capacity = {{"cpu", 64000}, {"memory", int64_t{256} << 30}};
    n.allocatable = n.capacity;
    return n;
  };
  auto pod = [](int i) {
    Pod p;
    p.meta.name = "p" + std::to_string(i);
    p.meta.namespace_ = "ml";
    Container c;
    c.name = "c";
    c.requests = {{"cpu", 1000 + 100 * (i % 7)}};
    p.containers.push_back(c);
    return p;
  };
  std::vector<Command> cmds;
  Namespace ns;
  ns.meta.name = "ml";
  cmds.push_back(At(0, UpsertNamespace{ns}));
  for (int i = 0; i < 40; ++i) cmds.push_back(At(0, UpsertNode{node(i), i}));
  Rng r{27};
  int next = 0;
  Millis t = 1;
  for (int burst = 0; burst < 12; ++burst) {
    for (int k = 0; k < (burst == 0 ? 5000 : 300); ++k)
      cmds.push_back(At(t, SubmitPod{pod(next++), false, {}}));
    cmds.push_back(At(t++, Tick{}));
    for (int k = 0; k < 400; ++k) {  // ids across the whole table, live or not
      const auto id = static_cast<WorkloadId>(r.Uniform(0, next - 1));
      if (r.Chance(50))
        cmds.push_back(At(t, PodFinished{id, 0}));
      else
        cmds.push_back(At(t, DeletePod{id, 0}));
    }
    cmds.push_back(At(t++, Tick{}));
  }
  Engine plain, captured;
  Transcript tp, tc;
  plain.SetSinks(&tp, &tp);
  captured.SetSinks(&tc, &tc);
  std::vector<std::pair<std::shared_ptr<const EngineCapture>, std::string>> taken;
  for (size_t i = 0; i < cmds.size(); ++i) {
    if (i % 250 == 0) taken.emplace_back(captured.Capture(), plain.Snapshot());
    (void)plain.Apply(cmds[i]);  // some ids are gone or unknown: refused alike by both
    (void)captured.Apply(cmds[i]);
  }
  EXPECT_EQ(tc.lines, tp.lines);
  const std::string final_snapshot = plain.Snapshot();
  EXPECT_EQ(captured.Snapshot(), final_snapshot);
  EXPECT_GT(captured.live_workloads(), 2500u);  // three chunks at least
  size_t moved_on = 0;
  for (const auto& [capture, snapshot] : taken) {
    ASSERT_EQ(Engine::EncodeCapture(*capture), snapshot);
    moved_on += snapshot != final_snapshot;
  }
  EXPECT_GT(taken.size(), 30u);
  EXPECT_GT(moved_on, taken.size() * 9 / 10);
}

TEST(CommandEncodingTest, RefusesWhatIsNotACommand) {
  EXPECT_FALSE(DecodeCommand("nope").ok());
  std::string bytes = EncodeCommand(At(5, RemoveNode{"n1"}));
  auto ok = DecodeCommand(bytes);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->time, 5);
  EXPECT_EQ(std::get<RemoveNode>(ok->op).name, "n1");
  bytes[bytes.size() - 1] ^= 1;
  EXPECT_NE(DecodeCommand(bytes).message().find("checksum"), std::string::npos);
}

TEST(SnapshotTest, RefusesForeignCorruptAndOtherVersions) {
  Engine e;
  ASSERT_TRUE(e.Apply(At(0, UpsertPriorityClass{PriorityClass{
                                ObjectMeta{"high", "", {}, {}, {}}, 100, false,
                                PreemptionPolicy::kPreemptLowerPriority, ""}}))
                  .ok());
  const std::string snap = e.Snapshot();
  ASSERT_TRUE(Engine::Restore(snap).ok());
  auto foreign = Engine::Restore("hello, I am not a snapshot");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.message().find("not an Arbiter state file"), std::string::npos)
      << foreign.message();
  std::string corrupt = snap;
  corrupt[corrupt.size() - 3] ^= 0x5a;
  auto c = Engine::Restore(corrupt);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("checksum"), std::string::npos) << c.message();
  std::string truncated = snap.substr(0, snap.size() - 10);
  auto t = Engine::Restore(truncated);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("corrupt"), std::string::npos) << t.message();
  std::string other = snap;
  const uint32_t next = Engine::kSnapshotVersion + 1;
  other[8] = static_cast<char>(next);  // the format version, just after the magic
  auto v = Engine::Restore(other);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(v.message().find("format version " + std::to_string(next)), std::string::npos)
      << v.message();
}

// Version 3 added resource flavors; version 2 files are still read. A state without ElasticQuotas
// or workloads has the same body in both, so relabelling it as version 2 must restore it.
TEST(SnapshotTest, ReadsVersion2) {
  Engine e;
  ASSERT_TRUE(e.Apply(At(0, UpsertPriorityClass{PriorityClass{
                                ObjectMeta{"high", "", {}, {}, {}}, 100, false,
                                PreemptionPolicy::kPreemptLowerPriority, ""}}))
                  .ok());
  std::string snap = e.Snapshot();
  snap[8] = 2;  // the format version, just after the magic
  auto r = Engine::Restore(snap);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Snapshot(), e.Snapshot());
  snap[8] = 1;
  auto old = Engine::Restore(snap);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.message().find("reads version 2 to " + std::to_string(Engine::kSnapshotVersion)),
            std::string::npos)
      << old.message();
}

// A flavored ElasticQuota survives a command's encoding (journal) with its flavors.
TEST(CommandEncodingTest, ElasticQuotaFlavorsRoundTrip) {
  ElasticQuota q;
  q.meta.name = "q";
  q.meta.namespace_ = "a";
  QuotaFlavor f;
  f.name = "h100";
  f.min.Set("nvidia.com/gpu", 8000);
  f.max = ResourceList{};
  f.max->Set("nvidia.com/gpu", 12000);
  f.node_labels["nvidia.com/gpu.product"] = "H100";
  q.flavors.push_back(f);
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertElasticQuota{q})));
  ASSERT_TRUE(c.ok()) << c.message();
  const ElasticQuota& back = std::get<UpsertElasticQuota>(c->op).quota;
  ASSERT_EQ(back.flavors.size(), 1u);
  EXPECT_EQ(back.flavors[0].name, "h100");
  EXPECT_EQ(back.flavors[0].max->Get("nvidia.com/gpu"), 12000);
  EXPECT_EQ(back.flavors[0].node_labels.at("nvidia.com/gpu.product"), "H100");
}

// Version 4 added PoolPolicy spec.latency: it survives a command's encoding and a snapshot, and
// a version-3 command (no latency fields) still decodes, without the model.
TEST(CommandEncodingTest, PoolPolicyLatencyRoundTrip) {
  PoolPolicy p;
  p.meta.name = "default";
  p.latency = PoolPolicy::SlurmLatency{6000, 2000, 5000, 1000, 10000};
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertPoolPolicy{p})));
  ASSERT_TRUE(c.ok()) << c.message();
  const PoolPolicy& back = std::get<UpsertPoolPolicy>(c->op).policy;
  ASSERT_TRUE(back.latency.has_value());
  EXPECT_EQ(back.latency->grace_end_delay, 6000);
  EXPECT_EQ(back.latency->kill_wait, 2000);
  EXPECT_EQ(back.latency->message_timeout, 5000);
  EXPECT_EQ(back.latency->epilog, 1000);
  EXPECT_EQ(back.latency->cred_expire, 10000);
  Engine e;
  ASSERT_TRUE(e.Apply(At(1, UpsertPoolPolicy{p})).ok());
  auto r = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE((*r)->policy().latency.has_value());
  EXPECT_EQ((*r)->policy().latency->cred_expire, 10000);
  EXPECT_EQ((*r)->Snapshot(), e.Snapshot());
  // Without the block the command's body is the version-3 body plus one "absent" byte.
  PoolPolicy off;
  off.meta.name = "default";
  std::string v4 = EncodeCommand(At(1, UpsertPoolPolicy{off}));
  auto v4c = DecodeCommand(v4);
  ASSERT_TRUE(v4c.ok()) << v4c.message();
  EXPECT_FALSE(std::get<UpsertPoolPolicy>(v4c->op).policy.latency.has_value());
}

// Version 5 added PoolPolicy scheduling.backfillDepth and fairSharing.preemptionStrategies: they
// survive a command's encoding and a snapshot, and version-4 files (without them) still load,
// with the defaults.
TEST(CommandEncodingTest, PoolPolicyDepthAndStrategiesRoundTrip) {
  PoolPolicy p;
  p.meta.name = "default";
  p.backfill_depth = 13;
  p.fair_preemption_strategies = {FairShareStrategy::kLessThanInitialShare};
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertPoolPolicy{p})));
  ASSERT_TRUE(c.ok()) << c.message();
  const PoolPolicy& back = std::get<UpsertPoolPolicy>(c->op).policy;
  EXPECT_EQ(back.backfill_depth, 13);
  EXPECT_EQ(back.fair_preemption_strategies, p.fair_preemption_strategies);
  Engine e;
  ASSERT_TRUE(e.Apply(At(1, UpsertPoolPolicy{p})).ok());
  auto r = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->policy().backfill_depth, 13);
  EXPECT_EQ((*r)->policy().fair_preemption_strategies, p.fair_preemption_strategies);
  EXPECT_EQ((*r)->Snapshot(), e.Snapshot());
}

// The version-5 fields of a PoolPolicy with depth 13 and [LessThanInitialShare]: i32 13, u64 1,
// u32 1 (little-endian), and the later fields after them. Cutting them out of a body and sealing it
// as version 4 gives the file an arbiter of version 4 wrote.
std::string AsVersion4(std::string_view sealed, std::string_view kind) {
  // No node, pod or latency: the body is version 5's.
  auto body =
      serial::Unseal(sealed, kind, kind == "engine" ? Engine::kSnapshotVersion : kCommandVersion);
  EXPECT_TRUE(body.ok()) << body.message();
  const std::string fields("\x0d\0\0\0\x01\0\0\0\0\0\0\0\x01\0\0\0", 16);
  std::string b = *body;
  const size_t at = b.find(fields);
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(b.find(fields, at + 1), std::string::npos);  // one PoolPolicy in the file
  // And the version-10 (command 9) field after them: requeuingStrategy, absent (a 0 byte), and the
  // version-15 (command 14) one: maxSubmittedPerNamespace, 0 (8 bytes).
  EXPECT_EQ(b.substr(at + fields.size(), 9), std::string(9, '\0'));
  b.erase(at, fields.size() + 9);
  return serial::Seal(kind, 4, b);
}

TEST(SnapshotTest, ReadsVersion4) {
  PoolPolicy p;
  p.meta.name = "default";
  p.backfill_depth = 13;
  p.fair_preemption_strategies = {FairShareStrategy::kLessThanInitialShare};
  p.victim_order = VictimOrder::kYoungestFirst;
  Engine e;
  ASSERT_TRUE(e.Apply(At(1, UpsertPoolPolicy{p})).ok());
  auto r = Engine::Restore(AsVersion4(e.Snapshot(), "engine"));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->policy().backfill_depth, 1);
  EXPECT_EQ((*r)->policy().fair_preemption_strategies.size(), 2u);
  EXPECT_EQ((*r)->policy().victim_order,
            VictimOrder::kYoungestFirst);  // the fields before are read as written
  auto c = DecodeCommand(AsVersion4(EncodeCommand(At(1, UpsertPoolPolicy{p})), "command"));
  ASSERT_TRUE(c.ok()) << c.message();
  const PoolPolicy& back = std::get<UpsertPoolPolicy>(c->op).policy;
  EXPECT_EQ(back.backfill_depth, 1);
  EXPECT_EQ(back.fair_preemption_strategies.size(), 2u);
  EXPECT_EQ(back.victim_order, VictimOrder::kYoungestFirst);
}

// Version 6 added node taints, pod tolerations and node affinity: they survive a command's
// encoding and a snapshot (a pending workload keeps them).
TEST(CommandEncodingTest, NodeConstraintsRoundTrip) {
  Node n;
  n.meta.name = "n1";
  n.capacity.Set("cpu", 8000);
  n.allocatable = n.capacity;
  n.taints = {Taint{"dedicated", "ml", TaintEffect::kNoSchedule},
              Taint{"spot", "", TaintEffect::kPreferNoSchedule}};
  Pod p;
  p.meta.name = "p";
  p.meta.namespace_ = "default";
  p.containers.push_back(Container{"c", {}, {}});
  p.containers[0].requests.Set("cpu", 16000);  // waits: larger than the node
  Toleration t;
  t.key = "dedicated";
  t.op = TolerationOperator::kExists;
  t.effect = TaintEffect::kNoExecute;
  t.toleration_seconds = 300000;
  p.tolerations = {t};
  NodeSelectorTerm term;
  term.match_expressions = {{"zone", NodeSelectorOperator::kGt, {"3"}}};
  term.match_fields = {{"metadata.name", NodeSelectorOperator::kIn, {"n1"}}};
  p.node_affinity.required = std::vector<NodeSelectorTerm>{term};
  p.node_affinity.preferred = {{7, term}};
  auto cn = DecodeCommand(EncodeCommand(At(1, UpsertNode{n, 0})));
  ASSERT_TRUE(cn.ok()) << cn.message();
  const Node& nb = std::get<UpsertNode>(cn->op).node;
  ASSERT_EQ(nb.taints.size(), 2u);
  EXPECT_EQ(nb.taints[0].value, "ml");
  EXPECT_EQ(nb.taints[1].effect, TaintEffect::kPreferNoSchedule);
  auto cp = DecodeCommand(EncodeCommand(At(1, SubmitPod{p, false, {}})));
  ASSERT_TRUE(cp.ok()) << cp.message();
  const Pod& pb = std::get<SubmitPod>(cp->op).pod;
  ASSERT_EQ(pb.tolerations.size(), 1u);
  EXPECT_EQ(pb.tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(pb.tolerations[0].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(pb.tolerations[0].toleration_seconds, 300000);
  ASSERT_TRUE(pb.node_affinity.required.has_value());
  EXPECT_EQ((*pb.node_affinity.required)[0].match_expressions[0].op, NodeSelectorOperator::kGt);
  EXPECT_EQ((*pb.node_affinity.required)[0].match_fields[0].values[0], "n1");
  ASSERT_EQ(pb.node_affinity.preferred.size(), 1u);
  EXPECT_EQ(pb.node_affinity.preferred[0].weight, 7);

  Engine e;
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{n, 0})).ok());
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{p, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, Tick{})).ok());
  auto r = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Snapshot(), e.Snapshot());
}

// A version-5 command (no taints on its node) still decodes: the node has none.
TEST(CommandEncodingTest, ReadsVersion5NodeWithoutTaints) {
  Node n;
  n.meta.name = "n1";
  n.sim.remove_time = 0x1122334455667788;  // a marker just before the version-6 field
  auto body = serial::Unseal(EncodeCommand(At(1, UpsertNode{n, 0})), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  const std::string marker("\x88\x77\x66\x55\x44\x33\x22\x11", 8);
  std::string b = *body;
  const size_t at = b.find(marker);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(b.substr(at + 8, 8), std::string(8, '\0'));  // the taints: none
  b.erase(at + 8, 8);
  auto c = DecodeCommand(serial::Seal("command", 5, b));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<UpsertNode>(c->op).node.meta.name, "n1");
  EXPECT_TRUE(std::get<UpsertNode>(c->op).node.taints.empty());
  EXPECT_FALSE(DecodeCommand(serial::Seal("command", 6, b)).ok());  // read as 6: cut short
}

// Version 7 added pod affinity, anti-affinity and topology spread constraints: they survive a
// command's encoding and a snapshot (a pending workload keeps them; so does an unreclaimable
// quota hold).
TEST(CommandEncodingTest, PodTopologyRoundTrip) {
  Node n;
  n.meta.name = "n1";
  n.capacity.Set("cpu", 8000);
  n.allocatable = n.capacity;
  Pod p;
  p.meta.name = "p";
  p.meta.namespace_ = "default";
  p.meta.labels = {{"app", "web"}};
  p.containers.push_back(Container{"c", {}, {}});
  p.containers[0].requests.Set("cpu", 16000);  // waits: larger than the node
  PodAffinityTerm term;
  term.label_selector = LabelSelector{{{"app", "web"}}, {{"tier", SelectorOperator::kIn, {"a"}}}};
  term.namespaces = {"team-b"};
  term.namespace_selector = LabelSelector{};
  term.topology_key = "zone";
  p.pod_affinity.required = {term};
  p.pod_anti_affinity.preferred = {{40, term}};
  TopologySpreadConstraint c;
  c.max_skew = 3;
  c.topology_key = "kubernetes.io/hostname";
  c.label_selector = LabelSelector{{{"app", "web"}}, {}};
  c.min_domains = 2;
  p.topology_spread = {c};
  auto cp = DecodeCommand(EncodeCommand(At(1, SubmitPod{p, false, {}})));
  ASSERT_TRUE(cp.ok()) << cp.message();
  const Pod& pb = std::get<SubmitPod>(cp->op).pod;
  ASSERT_EQ(pb.pod_affinity.required.size(), 1u);
  const PodAffinityTerm& tb = pb.pod_affinity.required[0];
  ASSERT_TRUE(tb.label_selector && tb.namespace_selector);
  EXPECT_EQ(tb.label_selector->match_expressions[0].values[0], "a");
  EXPECT_EQ(tb.namespaces[0], "team-b");
  EXPECT_EQ(tb.topology_key, "zone");
  ASSERT_EQ(pb.pod_anti_affinity.preferred.size(), 1u);
  EXPECT_EQ(pb.pod_anti_affinity.preferred[0].weight, 40);
  ASSERT_EQ(pb.topology_spread.size(), 1u);
  EXPECT_EQ(pb.topology_spread[0].max_skew, 3);
  EXPECT_EQ(pb.topology_spread[0].min_domains, 2);
  EXPECT_TRUE(pb.topology_spread[0].do_not_schedule);

  Engine e;
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{n, 0})).ok());
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{p, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, Tick{})).ok());
  auto r = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Snapshot(), e.Snapshot());
}

// A version-6 command (a pod without pod topology fields) still decodes: the pod has none.
TEST(CommandEncodingTest, ReadsVersion6PodWithoutTopology) {
  Pod p;
  p.meta.name = "p";
  p.meta.namespace_ = "default";
  p.containers.push_back(Container{"c", {}, {}});
  p.active_deadline = 0x1122334455667788;  // a marker before the version-6 and -7 fields
  auto body =
      serial::Unseal(EncodeCommand(At(1, SubmitPod{p, false, {}})), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  const std::string marker("\x88\x77\x66\x55\x44\x33\x22\x11", 8);
  std::string b = *body;
  const size_t at = b.find(marker);
  ASSERT_NE(at, std::string::npos);
  // After it: pod_group (u8), tolerations (u64), node affinity (u8 + u64), then version 7's
  // podAffinity (2 x u64), podAntiAffinity (2 x u64), topologySpreadConstraints (u64) and
  // overhead (u64): none.
  const size_t v7 = at + 8 + 1 + 8 + 1 + 8;
  ASSERT_EQ(b.substr(v7, 48), std::string(48, '\0'));
  b.erase(v7, 48);
  ASSERT_EQ(b.substr(b.size() - 8), std::string(8, '\0'));  // version 11's node (none), last
  b.erase(b.size() - 8);
  auto c = DecodeCommand(serial::Seal("command", 6, b));
  ASSERT_TRUE(c.ok()) << c.message();
  const Pod& back = std::get<SubmitPod>(c->op).pod;
  EXPECT_EQ(back.meta.name, "p");
  EXPECT_TRUE(back.pod_affinity.Empty() && back.pod_anti_affinity.Empty());
  EXPECT_TRUE(back.topology_spread.empty());
  EXPECT_FALSE(DecodeCommand(serial::Seal("command", 7, b)).ok());  // read as 7: cut short
}

}  // namespace
}  // namespace arbiter::engine
