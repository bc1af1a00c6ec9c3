#include "adapters/slurm/sacct_import.h"

#include <algorithm>
#include <set>

#include "adapters/slurm/slurm_names.h"
#include "core/int128.h"
#include "core/resources.h"
#include "core/text.h"

namespace arbiter::slurm {

namespace {
constexpr int64_t kMaxUsageMillicores = int64_t{1000000} * 1000;

// The GPU model whose card prices a run's MIG instances: its node's, else the one model of the
// policy's nodes with those MIG resources; nullopt when unknown (then prices[nvidia.com/gpu]).
std::optional<std::string> MigCardOf(const std::string& node_list, const ResourceList& mig,
                                     const ImportOptions& opts) {
  if (auto n = opts.node_gpu_product.find(node_list); n != opts.node_gpu_product.end())
    return n->second;
  std::optional<std::string> product;
  for (const auto& [res, count] : mig.entries()) {
    auto m = opts.mig_gpu_product.find(res);
    if (m == opts.mig_gpu_product.end() || (product && *product != m->second)) return std::nullopt;
    product = m->second;
  }
  return product;
}
}  // namespace

std::string SlurmWorkloadName(const std::string& ns, const std::string& cluster,
                              const std::string& job_id) {
  return ns + "/slurm-" + cluster + "-" + job_id;
}

std::optional<Millis> RunReleased(const SacctRun& run) {
  if (!run.start) return std::nullopt;
  std::optional<Millis> end = run.end;
  if (!end && run.elapsed) end = *run.start + *run.elapsed;
  for (const auto& s : run.steps)
    if (s.end && (!end || *s.end > *end)) end = s.end;
  if (!end) end = run.start;  // started, no End, no Elapsed: nothing measurable
  return std::max(*end, *run.start);
}

namespace {

// What the notes of an import count across its runs.
struct ImportTally {
  std::set<std::string> unmapped_accounts, unknown_types, multi_node_jobs;
  int no_usage = 0;
};

// A run's GPUs by model: MIG types become MIG resources (and leave the generic count); other types
// name the model of their GPUs.
struct GpusOfRun {
  int64_t generic = 0;                                  // gres/gpu less the MIG instances
  std::vector<std::pair<std::string, int64_t>> models;  // product, count
  ResourceList mig;
};

GpusOfRun GpusByModel(const SacctRun& run, const NameMap& names, ImportTally& tally) {
  GpusOfRun g;
  g.generic = run.alloc.gpus;
  for (const auto& [type, n] : run.alloc.gpu_types) {
    auto product = names.ProductOf(type);
    // The MIG gres types `slurm export` writes ("1g.10gb", "1g.10gb_me") are MIG instances
    // unless the map says otherwise, never whole GPUs.
    if (!product) product = MigResourceOfGresType(type);
    if (product && IsMigResourceName(*product)) {
      g.mig.Set(*product, g.mig.Get(*product) + n);
      g.generic -= n;
      continue;
    }
    if (!product) tally.unknown_types.insert(type);
    g.models.emplace_back(product ? *product : type, n);
  }
  return g;
}

// The usage the steps measured: CPU time summed, memory the largest peak.
struct StepUsageOfRun {
  std::optional<int64_t> cpu_ms, mem;

  explicit StepUsageOfRun(const SacctRun& run) {
    for (const auto& s : run.steps) {
      if (s.usage.cpu_ms) cpu_ms = cpu_ms.value_or(0) + *s.usage.cpu_ms;
      if (s.usage.mem_bytes) mem = std::max(mem.value_or(0), *s.usage.mem_bytes);
    }
  }
  bool measured() const { return cpu_ms || mem; }
  // The usage track of a segment that requests `requests` over a run of run_ms.
  ResourceList Of(const ResourceList& requests, Millis run_ms) const {
    ResourceList u = requests;
    if (cpu_ms && requests.Has(kCpu))
      // Mean cores; a corrupt CPU time cannot push it past a million cores.
      u.Set(kCpu, run_ms > 0
                      ? static_cast<int64_t>(std::min<int128>(
                            static_cast<int128>(*cpu_ms) * 1000 / run_ms, kMaxUsageMillicores))
                      : 0);
    if (mem && requests.Has(kMemory)) u.Set(kMemory, *mem);
    u.Compact();
    return u;
  }
};

// The segments of one started run: one, or one per GPU model (the first with the CPU, memory and
// MIG requests). An error names what is wrong with the run.
Status AddRunSegments(const SacctRun& run, const NameMap& names, const ImportOptions& opts,
                      ImportTally& tally, ImportResult& r) {
  if (run.account.empty()) return Status::Error("no Account: cannot tell which tenant to bill");
  std::string ns;
  if (auto m = names.NamespaceOf(run.account)) {
    ns = *m;
  } else {
    ns = run.account;
    tally.unmapped_accounts.insert(run.account);
  }
  if (!run.end) ++r.running;
  if (run.alloc.nodes > 1) tally.multi_node_jobs.insert(run.cluster + "|" + run.job_id);
  const std::string cluster = run.cluster.empty() ? opts.cluster : run.cluster;
  billing::RunSegment base;
  base.workload = SlurmWorkloadName(ns, cluster, run.job_id);
  base.namespace_ = ns;
  if (auto q = opts.qos_priority.find(run.qos); q != opts.qos_priority.end())
    base.priority = q->second;
  base.node = run.node_list;
  base.start = *run.start;
  base.end = *RunReleased(run);
  // Several models in one job give one segment per model.
  GpusOfRun gpus = GpusByModel(run, names, tally);
  auto& models = gpus.models;
  if (gpus.generic < 0) return Status::Error("AllocTRES counts more typed GPUs than gres/gpu");
  int64_t typed = 0;
  for (const auto& [p, n] : models) typed += n;
  // Untyped GPUs beyond the typed ones go with the first model (or stay generic without one).
  if (!models.empty()) models.front().second += std::max<int64_t>(0, gpus.generic - typed);
  if (run.alloc.cpus > INT64_MAX / 1000 || run.alloc.gpus > INT64_MAX / 1000)
    return Status::Error("AllocTRES counts are too large");
  ResourceList req;
  if (run.alloc.cpus > 0) req.Set(kCpu, run.alloc.cpus * 1000);
  if (run.alloc.mem_bytes > 0) req.Set(kMemory, run.alloc.mem_bytes);
  if (models.empty() && gpus.generic > 0) req.Set(kGpu, gpus.generic * 1000);
  for (const auto& [res, n] : gpus.mig.entries()) req.Set(res, n);
  // MIG instances alone: priced from their card, as `slurm export` weighs them.
  if (models.empty() && gpus.generic == 0 && !gpus.mig.empty())
    if (auto card = MigCardOf(run.node_list, gpus.mig, opts)) base.gpu_product = *card;
  // Usage track from the steps.
  const Millis run_ms = base.end - base.start;
  const StepUsageOfRun usage(run);
  if (!usage.measured()) ++tally.no_usage;
  // Without step usage nothing measured the run: its usage track is its request, exactly.
  base.usage_from_request = !usage.measured();
  if (models.empty()) {
    billing::RunSegment s = base;
    s.requests = req;
    s.usage = usage.Of(req, run_ms);
    r.segments.push_back(std::move(s));
    return Status::Ok();
  }
  for (size_t i = 0; i < models.size(); ++i) {
    billing::RunSegment s = base;
    ResourceList q = i == 0 ? req : ResourceList{};
    q.Set(kGpu, models[i].second * 1000);
    s.gpu_product = models[i].first;
    s.requests = q;
    s.usage = usage.Of(q, run_ms);
    r.segments.push_back(std::move(s));
  }
  return Status::Ok();
}

// What the reader of the invoices should know about how the runs were read.
void AddImportNotes(const ImportTally& tally, ImportResult& r) {
  auto list = [](const std::set<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!tally.unmapped_accounts.empty())
    r.notes.push_back(
        "accounts billed as namespaces of the same name (not in the policy or --account-map): " +
        list(tally.unmapped_accounts));
  if (!tally.unknown_types.empty())
    r.notes.push_back(
        "gres types without a GPU model (priced by gpuModels under that name, else as a plain "
        "GPU): " +
        list(tally.unknown_types));
  const auto& multi_node_jobs = tally.multi_node_jobs;
  if (!multi_node_jobs.empty())
    r.notes.push_back(std::to_string(multi_node_jobs.size()) + " multi-node job" +
                      (multi_node_jobs.size() == 1 ? "" : "s") +
                      " (gangs): one workload each, billed with AllocTRES totals over its nodes "
                      "(NodeList)");
  const int no_usage = tally.no_usage;
  if (no_usage > 0)
    r.notes.push_back(std::to_string(no_usage) + " run" + (no_usage == 1 ? "" : "s") +
                      " without step usage (sacct -X, or shorter than JobAcctGatherFrequency): "
                      "usage track = the request track exactly (flagged in the invoices' "
                      "provenance as usage = request)");
}

}  // namespace

Result<ImportResult> SegmentsFromSacct(const std::vector<SacctRun>& runs, const NameMap& names,
                                       const ImportOptions& opts, const std::string& file) {
  ImportResult r;
  std::set<std::string> jobs;
  ImportTally tally;
  for (const SacctRun& run : runs) {
    ++r.runs;
    jobs.insert(run.cluster + "|" + run.job_id);
    if (!run.start) {
      ++r.not_started;
      continue;
    }
    if (Status s = AddRunSegments(run, names, opts, tally, r); !s.ok())
      return Result<ImportResult>::Error(file + ":" + std::to_string(run.line) + ": job " +
                                         run.job_id + ": " + s.message());
  }
  r.jobs = static_cast<int>(jobs.size());
  AddImportNotes(tally, r);
  return r;
}

}  // namespace arbiter::slurm
