// Engine benchmarks (issues 3, 9 and 10): placements per second without preemption, preemption
// decisions per second on a full pool, pod groups (gangs) placed and preempting (for room, and for
// quota and room together), single pods preempting for quota and room together, placements with
// backfill reservations held, snapshot + restore of a busy engine, and a large timeline
// simulation; and the quota check the daemon runs on every pod create (NeverAdmissible).
//   5,000 nodes × 8 GPUs, 50,000 pending pods of mixed shapes, single core.
// Rates are given twice: per second of wall time (the `.../s` counters) and per second of the
// thread's CPU time in the measured Tick (`.../cpu_s`), which is what one quiet core would do;
// the shared build machine's wall times are several times its CPU times.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>

#include "core/engine/engine.h"
#include "driver/object_commands.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

Node MakeNode(int i) {
  Node n;
  char name[32];
  std::snprintf(name, sizeof name, "node-%05d", i);
  n.meta.name = name;
  n.meta.labels["nvidia.com/gpu.product"] =
      i % 4 == 0 ? "NVIDIA-H100-80GB-HBM3" : "NVIDIA-A100-SXM4-80GB";
  n.capacity = {{"cpu", 128000}, {"memory", int64_t{1} << 40}, {"nvidia.com/gpu", 8000}};
  n.allocatable = n.capacity;
  return n;
}

Pod MakePod(int i, int32_t kind, const char* pc) {
  Pod p;
  p.meta.name = "pod-" + std::to_string(i);
  p.meta.namespace_ = "team-" + std::to_string(i % 3);
  Container c;
  c.name = "c";
  switch (kind % 6) {
    case 0:
      c.requests = {{"cpu", 4000}, {"memory", int64_t{16} << 30}, {"nvidia.com/gpu", 1000}};
      break;
    case 1:
      c.requests = {{"cpu", 8000}, {"memory", int64_t{32} << 30}, {"nvidia.com/gpu", 2000}};
      break;
    case 2:
      c.requests = {{"cpu", 2000}, {"memory", int64_t{8} << 30}, {"nvidia.com/gpu", 500}};
      break;
    case 3:
      c.requests = {{"cpu", 1000}, {"memory", int64_t{4} << 30}};
      break;
    case 4:
      c.requests = {{"cpu", 16000}, {"memory", int64_t{64} << 30}, {"nvidia.com/gpu", 4000}};
      break;
    default:
      c.requests = {{"cpu", 2000}, {"memory", int64_t{8} << 30}, {"nvidia.com/gpu", 250}};
      break;
  }
  p.containers.push_back(c);
  if (pc) p.priority_class_name = pc;
  p.sim.duration = 3600000;
  return p;
}

ManifestSet Pool(int nodes) {
  ManifestSet m;
  for (int i = 0; i < nodes; ++i) m.nodes.push_back(MakeNode(i));
  PriorityClass low, high;
  low.meta.name = "low";
  low.value = 1000;
  high.meta.name = "high";
  high.value = 10000;
  m.priority_classes = {low, high};
  return m;
}

// The engine with the pool of `m` (its policy objects, as every driver loads them, and its
// nodes); pods are submitted by the benchmarks.
std::unique_ptr<engine::Engine> Build(const ManifestSet& m) {
  auto e = std::make_unique<engine::Engine>();
  for (engine::CommandOp& op : driver::PolicyUpsertCommands(m))
    (void)e->Apply(engine::Command{0, std::move(op)});
  for (const auto& n : m.nodes) (void)e->Apply(engine::At(0, engine::UpsertNode{n, 0}));
  return e;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// `count` things done in `cpu` seconds of CPU time (summed over the iterations).
benchmark::Counter PerCpuSecond(double count, double cpu) {
  return benchmark::Counter(cpu > 0 ? count / cpu : 0);
}

struct Count : engine::EventSink {
  engine::EventType type;
  size_t n = 0;
  explicit Count(engine::EventType t) : type(t) {}
  void OnEvent(const engine::Event& e) override { n += e.type == type; }
};

// Placements per second: 50,000 pending pods placed in one scheduling cycle.
void BM_Placement(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = static_cast<int>(state.range(1));
  ManifestSet m = Pool(nodes);
  // Shapes 0, 2, 3, 5 (1 GPU, half a GPU, CPU only, a quarter GPU) twice as often as the larger
  // ones. They ask for 47,500 GPUs of the pool's 40,000: 43,688 pods are placed (`placed`), the
  // rest fail, and their failed attempts (a fit scan, a preemption search) count in the CPU time.
  const int mix[] = {0, 2, 3, 5, 0, 2, 3, 5, 1, 4};
  for (int i = 0; i < pods; ++i) m.pods.push_back(MakePod(i, mix[i % 10], "low"));
  size_t placed = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    Count scheduled(engine::EventType::kScheduled);
    e->SetSinks(&scheduled, nullptr);
    for (const auto& p : m.pods) (void)e->Apply(engine::At(0, engine::SubmitPod{p, false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(0, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    placed = scheduled.n;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(placed) * static_cast<double>(state.iterations());
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["placements/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["placements/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_Placement)
    ->Args({5000, 50000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Preemption decisions per second: the pool is full of low-priority 1-GPU pods; high-priority
// pods of mixed shapes arrive and each must choose a node and a minimal victim set.
void BM_Preemption(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int preemptors = static_cast<int>(state.range(1));
  ManifestSet m = Pool(nodes);
  for (int i = 0; i < nodes * 8; ++i) m.pods.push_back(MakePod(i, 0, "low"));
  for (int i = 0; i < preemptors; ++i)
    m.pods.push_back(MakePod(nodes * 8 + i, i % 2 ? 1 : 4, "high"));
  size_t decisions = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    Count preempting(engine::EventType::kPreempting);
    e->SetSinks(&preempting, nullptr);
    for (int i = 0; i < nodes * 8; ++i)
      (void)e->Apply(engine::At(0, engine::SubmitPod{m.pods[static_cast<size_t>(i)], false, {}}));
    (void)e->Apply(engine::At(0, engine::Tick{}));
    for (size_t i = static_cast<size_t>(nodes) * 8; i < m.pods.size(); ++i)
      (void)e->Apply(engine::At(1000, engine::SubmitPod{m.pods[i], false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(1000, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    decisions = preempting.n;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(decisions) * static_cast<double>(state.iterations());
  state.counters["decisions"] = static_cast<double>(decisions);
  state.counters["decisions/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["decisions/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_Preemption)
    ->Args({5000, 5000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// A member of pod group `group` (minMember `size`).
Pod GangMember(int group, int member, int size, int32_t kind, const char* pc) {
  Pod p = MakePod(group * 1000 + member, kind, pc);
  p.meta.name = "g" + std::to_string(group) + "-" + std::to_string(member);
  p.meta.namespace_ = "team-" + std::to_string(group % 3);
  p.pod_group = PodGroupRef{"g" + std::to_string(group), size};
  return p;
}

// Pod groups placed all-or-nothing: 4,000 groups of 8 one-GPU members (32,000 pods) on the empty
// pool, one cycle. Counts member placements.
void BM_GangPlacement(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int groups = static_cast<int>(state.range(1));
  constexpr int kSize = 8;
  ManifestSet m = Pool(nodes);
  for (int g = 0; g < groups; ++g)
    for (int k = 0; k < kSize; ++k) m.pods.push_back(GangMember(g, k, kSize, 0, "low"));
  size_t placed = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    Count scheduled(engine::EventType::kScheduled);
    e->SetSinks(&scheduled, nullptr);
    for (const auto& p : m.pods) (void)e->Apply(engine::At(0, engine::SubmitPod{p, false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(0, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    placed = scheduled.n;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(placed) * static_cast<double>(state.iterations());
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["placements/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["placements/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_GangPlacement)
    ->Args({5000, 4000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Gang preemption: the pool full of low-priority 1-GPU pods; high-priority pod groups of 4
// two-GPU members arrive, and each group must find room for all its members or evict nothing.
// Counts the groups that preempt (one decision each).
void BM_GangPreemption(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int groups = static_cast<int>(state.range(1));
  constexpr int kSize = 4;
  ManifestSet m = Pool(nodes);
  std::vector<Pod> gang;
  for (int g = 0; g < groups; ++g)
    for (int k = 0; k < kSize; ++k) gang.push_back(GangMember(g, k, kSize, 1, "high"));
  size_t decisions = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    Count preempting(engine::EventType::kPreempting);
    e->SetSinks(&preempting, nullptr);
    for (int i = 0; i < nodes * 8; ++i)
      (void)e->Apply(engine::At(0, engine::SubmitPod{MakePod(i, 0, "low"), false, {}}));
    (void)e->Apply(engine::At(0, engine::Tick{}));
    for (const auto& p : gang) (void)e->Apply(engine::At(1000, engine::SubmitPod{p, false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(1000, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    decisions = preempting.n / kSize;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(decisions) * static_cast<double>(state.iterations());
  state.counters["group_decisions"] = static_cast<double>(decisions);
  state.counters["group_decisions/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["group_decisions/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_GangPreemption)
    ->Args({5000, 1000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Gang quota preemption with node preemption (issue 10): team-a lends its whole min (8 GPUs per
// group) to team-b, whose 1-GPU borrowers run one per node on the first `8 x groups` nodes; every
// node is otherwise full of low-priority 1-GPU pods of a namespace without quota. team-a's
// high-priority groups of 4 two-GPU members each reclaim 8 borrowers (freeing the quota but one
// GPU per node) and preempt a low-priority pod next to 4 of them for room: one combined plan per
// group. Counts the groups that preempt (one decision each).
void BM_GangReclaimPreemption(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int groups = static_cast<int>(state.range(1));
  constexpr int kSize = 4;
  const int borrowers = 8 * groups;
  ManifestSet m = Pool(nodes);
  ElasticQuota lender, borrower;
  lender.meta.name = lender.meta.namespace_ = "team-a";
  lender.cohort = borrower.cohort = "c";
  lender.min = {{"nvidia.com/gpu", int64_t{borrowers} * 1000}};
  borrower.meta.name = borrower.meta.namespace_ = "team-b";
  std::vector<Pod>
      pool_pods;  // the borrowers (placed first, by their node selectors), then the rest
  for (int i = 0; i < borrowers; ++i) {
    Pod p = MakePod(i, 0, "low");
    p.meta.name = "b-" + std::to_string(i);
    p.meta.namespace_ = "team-b";
    p.node_selector["kubernetes.io/hostname"] = m.nodes[static_cast<size_t>(i)].meta.name;
    pool_pods.push_back(p);
  }
  for (int i = 0; i < nodes * 8 - borrowers; ++i) {
    Pod p = MakePod(i, 0, "low");
    p.meta.namespace_ = "batch";
    pool_pods.push_back(p);
  }
  std::vector<Pod> gang;
  for (int g = 0; g < groups; ++g)
    for (int k = 0; k < kSize; ++k) {
      Pod p = GangMember(g, k, kSize, 1, "high");
      p.meta.namespace_ = "team-a";
      gang.push_back(p);
    }
  size_t decisions = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    for (const ElasticQuota& q : {lender, borrower})
      (void)e->Apply(engine::At(0, engine::UpsertElasticQuota{q}));
    Count preempting(engine::EventType::kPreempting);
    e->SetSinks(&preempting, nullptr);
    for (size_t i = 0; i < pool_pods.size(); ++i) {
      (void)e->Apply(engine::At(0, engine::SubmitPod{pool_pods[i], false, {}}));
      if (i + 1 == static_cast<size_t>(borrowers)) (void)e->Apply(engine::At(0, engine::Tick{}));
    }
    (void)e->Apply(engine::At(0, engine::Tick{}));
    for (const auto& p : gang) (void)e->Apply(engine::At(1000, engine::SubmitPod{p, false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(1000, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    decisions = preempting.n / kSize;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(decisions) * static_cast<double>(state.iterations());
  state.counters["group_decisions"] = static_cast<double>(decisions);
  state.counters["group_decisions/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["group_decisions/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_GangReclaimPreemption)
    ->Args({5000, 100})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Quota preemption with node preemption for single pods (issue 10): as above, team-a lends its
// whole min to team-b, whose 1-GPU borrowers run one per node on the first `2 x preemptors`
// nodes of a pool otherwise full of low-priority 1-GPU pods of a namespace without quota.
// team-a's high-priority 2-GPU pods each reclaim 2 borrowers (freeing the quota but one GPU per
// node) and preempt a low-priority pod for room: one combined plan each. Counts the pods that
// preempt (one decision each).
void BM_ReclaimPreemption(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int preemptors = static_cast<int>(state.range(1));
  const int borrowers = 2 * preemptors;
  ManifestSet m = Pool(nodes);
  ElasticQuota lender, borrower;
  lender.meta.name = lender.meta.namespace_ = "team-a";
  lender.cohort = borrower.cohort = "c";
  lender.min = {{"nvidia.com/gpu", int64_t{borrowers} * 1000}};
  borrower.meta.name = borrower.meta.namespace_ = "team-b";
  std::vector<Pod> pool_pods;  // the borrowers (placed first, by their node selectors), the rest
  for (int i = 0; i < borrowers; ++i) {
    Pod p = MakePod(i, 0, "low");
    p.meta.name = "b-" + std::to_string(i);
    p.meta.namespace_ = "team-b";
    p.node_selector["kubernetes.io/hostname"] = m.nodes[static_cast<size_t>(i)].meta.name;
    pool_pods.push_back(p);
  }
  for (int i = 0; i < nodes * 8 - borrowers; ++i) {
    Pod p = MakePod(i, 0, "low");
    p.meta.namespace_ = "batch";
    pool_pods.push_back(p);
  }
  std::vector<Pod> reclaimers;
  for (int i = 0; i < preemptors; ++i) {
    Pod p = MakePod(nodes * 8 + i, 1, "high");
    p.meta.namespace_ = "team-a";
    reclaimers.push_back(p);
  }
  size_t decisions = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    for (const ElasticQuota& q : {lender, borrower})
      (void)e->Apply(engine::At(0, engine::UpsertElasticQuota{q}));
    Count preempting(engine::EventType::kPreempting);
    e->SetSinks(&preempting, nullptr);
    for (size_t i = 0; i < pool_pods.size(); ++i) {
      (void)e->Apply(engine::At(0, engine::SubmitPod{pool_pods[i], false, {}}));
      if (i + 1 == static_cast<size_t>(borrowers)) (void)e->Apply(engine::At(0, engine::Tick{}));
    }
    (void)e->Apply(engine::At(0, engine::Tick{}));
    for (const auto& p : reclaimers)
      (void)e->Apply(engine::At(1000, engine::SubmitPod{p, false, {}}));
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(1000, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    decisions = preempting.n;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(decisions) * static_cast<double>(state.iterations());
  state.counters["decisions"] = static_cast<double>(decisions);
  state.counters["decisions/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["decisions/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_ReclaimPreemption)
    ->Args({5000, 100})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Placements while backfill reservations are held: every node runs 7 one-GPU pods with time
// limits (ends staggered over 7 hours); whole-node jobs of four shapes wait at the head of the
// queue with reservations; then 5,000 one-GPU pods with time limits of 30 min to 8 h fill the
// free GPUs, those on a reserved node only if they do not delay the reservation.
void BM_BackfillPlacement(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  ManifestSet m = Pool(nodes);
  std::vector<Pod> running, big, small;
  for (int i = 0; i < nodes * 7; ++i) {
    Pod p = MakePod(i, 0, "low");
    p.active_deadline = 3600000 * int64_t{1 + i % 7};
    running.push_back(std::move(p));
  }
  for (int i = 0; i < 4; ++i) {
    Pod p = MakePod(nodes * 8 + i, 0, "low");
    p.containers[0].requests = {
        {"cpu", 1000 * (i + 1)}, {"memory", int64_t{8} << 30}, {"nvidia.com/gpu", 8000}};
    p.sim.submit_time = 1000;
    big.push_back(std::move(p));
  }
  for (int i = 0; i < nodes; ++i) {
    Pod p = MakePod(nodes * 9 + i, 0, "low");
    p.active_deadline = 1800000 * int64_t{1 + i % 16};
    p.sim.submit_time = 2000;
    small.push_back(std::move(p));
  }
  size_t placed = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto e = Build(m);
    Count scheduled(engine::EventType::kScheduled);
    e->SetSinks(&scheduled, nullptr);
    for (const auto& p : running) (void)e->Apply(engine::At(0, engine::SubmitPod{p, false, {}}));
    (void)e->Apply(engine::At(0, engine::Tick{}));
    for (const auto& p : big) (void)e->Apply(engine::At(1000, engine::SubmitPod{p, false, {}}));
    (void)e->Apply(engine::At(1000, engine::Tick{}));
    for (const auto& p : small) (void)e->Apply(engine::At(2000, engine::SubmitPod{p, false, {}}));
    scheduled.n = 0;
    state.ResumeTiming();
    const double t0 = ThreadCpuSeconds();
    (void)e->Apply(engine::At(2000, engine::Tick{}));
    cpu += ThreadCpuSeconds() - t0;
    state.PauseTiming();
    placed = scheduled.n;
    state.ResumeTiming();
  }
  const double total = static_cast<double>(placed) * static_cast<double>(state.iterations());
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["placements/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["placements/cpu_s"] = PerCpuSecond(total, cpu);
}
BENCHMARK(BM_BackfillPlacement)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// Engine::NeverAdmissible, which the daemon asks on every pod create in a namespace with a
// ResourceQuota (Cluster::AdmitQuota): a pod that fits, in a namespace with `quotas`
// ResourceQuotas of 5 hard items each, on a busy engine (1,000 nodes, 8,000 pods running). It
// builds a scratch Workload, resolves the class, applies the LimitRanges (none here) and checks
// every quota's scopes, container constraints and hard limits.
void BM_NeverAdmissible(benchmark::State& state) {
  const int quotas = static_cast<int>(state.range(0));
  ManifestSet m = Pool(1000);
  for (int i = 0; i < quotas; ++i) {
    ResourceQuota q;
    q.meta.name = "quota-" + std::to_string(i);
    q.meta.namespace_ = "team-0";
    q.hard = {{"pods", QuotaTrack::kCount, "pods", 100000},
              {"count/pods", QuotaTrack::kCount, "pods", 100000},
              {"requests.cpu", QuotaTrack::kRequests, "cpu", int64_t{1} << 40},
              {"requests.memory", QuotaTrack::kRequests, "memory", int64_t{1} << 50},
              {"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 1000000}};
    m.resource_quotas.push_back(q);
  }
  auto e = Build(m);
  for (int i = 0; i < 8000; ++i)
    (void)e->Apply(engine::At(0, engine::SubmitPod{MakePod(i, 0, "low"), false, {}}));
  (void)e->Apply(engine::At(0, engine::Tick{}));
  const Pod pod = MakePod(3 * 100000, 0, "low");  // in team-0
  for (auto _ : state) {
    auto never = e->NeverAdmissible(pod);
    if (never) state.SkipWithError(never->c_str());
    benchmark::DoNotOptimize(never);
  }
}
BENCHMARK(BM_NeverAdmissible)->Arg(1)->Arg(4);

// Snapshot and restore of a busy engine: 5,000 nodes, 40,000 running pods, 5,000 waiting.
void BM_Snapshot(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  ManifestSet m = Pool(nodes);
  auto e = Build(m);
  for (int i = 0; i < nodes * 8; ++i)
    (void)e->Apply(engine::At(0, engine::SubmitPod{MakePod(i, 0, "low"), false, {}}));
  for (int i = 0; i < nodes; ++i)
    (void)e->Apply(engine::At(0, engine::SubmitPod{MakePod(nodes * 8 + i, 1, "low"), false, {}}));
  (void)e->Apply(engine::At(0, engine::Tick{}));
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string snap = e->Snapshot();
    auto restored = engine::Engine::Restore(snap);
    if (!restored.ok()) state.SkipWithError(restored.message().c_str());
    bytes = snap.size();
    benchmark::DoNotOptimize(restored);
  }
  state.counters["snapshot_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["live_workloads"] = static_cast<double>(e->live_workloads());
}
BENCHMARK(BM_Snapshot)->Arg(5000)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// A timeline simulation: arrivals spread over time, finite durations, mixed priorities.
void BM_Timeline(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = static_cast<int>(state.range(1));
  ManifestSet m = Pool(nodes);
  m.pods.reserve(static_cast<size_t>(pods));
  for (int i = 0; i < pods; ++i) {
    Pod p = MakePod(i, i * 7, i % 10 == 0 ? "high" : "low");
    p.sim.submit_time = int64_t{i} * 50;  // 20 arrivals per second
    p.sim.duration = 600000 + (i % 17) * 60000;
    m.pods.push_back(std::move(p));
  }
  for (auto _ : state) {
    auto r = sim::RunSimulation(m, {});
    benchmark::DoNotOptimize(r);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  state.counters["maxRSS_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_Timeline)
    ->Args({1000, 100000})
    ->Args({10000, 1000000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
