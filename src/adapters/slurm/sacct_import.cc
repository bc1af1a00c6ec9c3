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

Result<ImportResult> SegmentsFromSacct(const std::vector<SacctRun>& runs, const NameMap& names,
                                       const ImportOptions& opts, const std::string& file) {
  ImportResult r;
  std::set<std::string> jobs, unmapped_accounts, unknown_types;
  int no_usage = 0;
  std::set<std::string> multi_node_jobs;
  for (const SacctRun& run : runs) {
    auto where = [&](const std::string& msg) {
      return Result<ImportResult>::Error(file + ":" + std::to_string(run.line) + ": job " +
                                         run.job_id + ": " + msg);
    };
    ++r.runs;
    jobs.insert(run.cluster + "|" + run.job_id);
    if (!run.start) {
      ++r.not_started;
      continue;
    }
    if (run.account.empty()) return where("no Account: cannot tell which tenant to bill");
    std::string ns;
    if (auto m = names.NamespaceOf(run.account)) {
      ns = *m;
    } else {
      ns = run.account;
      unmapped_accounts.insert(run.account);
    }
    if (!run.end) ++r.running;
    if (run.alloc.nodes > 1) multi_node_jobs.insert(run.cluster + "|" + run.job_id);
    const std::string cluster = run.cluster.empty() ? opts.cluster : run.cluster;
    billing::RunSegment base;
    base.workload = SlurmWorkloadName(ns, cluster, run.job_id);
    base.namespace_ = ns;
    if (auto q = opts.qos_priority.find(run.qos); q != opts.qos_priority.end())
      base.priority = q->second;
    base.node = run.node_list;
    base.start = *run.start;
    base.end = *RunReleased(run);
    // GPUs by model: MIG types become MIG resources (and leave the generic count); other types
    // name the model of their GPUs. Several models in one job give one segment per model.
    int64_t generic = run.alloc.gpus;
    std::vector<std::pair<std::string, int64_t>> models;  // product, count
    ResourceList mig;
    for (const auto& [type, n] : run.alloc.gpu_types) {
      auto product = names.ProductOf(type);
      // The MIG gres types `slurm export` writes ("1g.10gb", "1g.10gb_me") are MIG instances
      // unless the map says otherwise, never whole GPUs.
      if (!product) product = MigResourceOfGresType(type);
      if (product && IsMigResourceName(*product)) {
        mig.Set(*product, mig.Get(*product) + n);
        generic -= n;
        continue;
      }
      if (!product) unknown_types.insert(type);
      models.emplace_back(product ? *product : type, n);
    }
    if (generic < 0) return where("AllocTRES counts more typed GPUs than gres/gpu");
    int64_t typed = 0;
    for (const auto& [p, n] : models) typed += n;
    // Untyped GPUs beyond the typed ones go with the first model (or stay generic without one).
    if (!models.empty()) models.front().second += std::max<int64_t>(0, generic - typed);
    if (run.alloc.cpus > INT64_MAX / 1000 || run.alloc.gpus > INT64_MAX / 1000)
      return where("AllocTRES counts are too large");
    ResourceList req;
    if (run.alloc.cpus > 0) req.Set(kCpu, run.alloc.cpus * 1000);
    if (run.alloc.mem_bytes > 0) req.Set(kMemory, run.alloc.mem_bytes);
    if (models.empty() && generic > 0) req.Set(kGpu, generic * 1000);
    for (const auto& [res, n] : mig.entries()) req.Set(res, n);
    // MIG instances alone: priced from their card, as `slurm export` weighs them.
    if (models.empty() && generic == 0 && !mig.empty())
      if (auto card = MigCardOf(run.node_list, mig, opts)) base.gpu_product = *card;
    // Usage track from the steps.
    const Millis run_ms = base.end - base.start;
    std::optional<int64_t> cpu_ms, mem;
    for (const auto& s : run.steps) {
      if (s.usage.cpu_ms) cpu_ms = cpu_ms.value_or(0) + *s.usage.cpu_ms;
      if (s.usage.mem_bytes) mem = std::max(mem.value_or(0), *s.usage.mem_bytes);
    }
    const bool measured = cpu_ms || mem;
    if (!measured) ++no_usage;
    auto usage_of = [&](const ResourceList& requests) {
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
    };
    // Without step usage nothing measured the run: its usage track is its request, exactly.
    base.usage_from_request = !measured;
    if (models.empty()) {
      billing::RunSegment s = base;
      s.requests = req;
      s.usage = usage_of(req);
      r.segments.push_back(std::move(s));
    } else {
      for (size_t i = 0; i < models.size(); ++i) {
        billing::RunSegment s = base;
        ResourceList q = i == 0 ? req : ResourceList{};
        q.Set(kGpu, models[i].second * 1000);
        s.gpu_product = models[i].first;
        s.requests = q;
        s.usage = usage_of(q);
        r.segments.push_back(std::move(s));
      }
    }
  }
  r.jobs = static_cast<int>(jobs.size());
  auto list = [](const std::set<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!unmapped_accounts.empty())
    r.notes.push_back(
        "accounts billed as namespaces of the same name (not in the policy or --account-map): " +
        list(unmapped_accounts));
  if (!unknown_types.empty())
    r.notes.push_back(
        "gres types without a GPU model (priced by gpuModels under that name, else as a plain "
        "GPU): " +
        list(unknown_types));
  if (!multi_node_jobs.empty())
    r.notes.push_back(std::to_string(multi_node_jobs.size()) + " multi-node job" +
                      (multi_node_jobs.size() == 1 ? "" : "s") +
                      " (gangs): one workload each, billed with AllocTRES totals over its nodes "
                      "(NodeList)");
  if (no_usage > 0)
    r.notes.push_back(std::to_string(no_usage) + " run" + (no_usage == 1 ? "" : "s") +
                      " without step usage (sacct -X, or shorter than JobAcctGatherFrequency): "
                      "usage track = the request track exactly (flagged in the invoices' "
                      "provenance as usage = request)");
  return r;
}

}  // namespace arbiter::slurm
