#include "adapters/slurm/conformance.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "adapters/slurm/sacct_import.h"
#include "core/decimal.h"
#include "core/int128.h"
#include "core/objects.h"
#include "core/resources.h"
#include "core/text.h"

namespace arbiter::slurm {

const std::vector<std::string>& Issue10Items() {
  static const std::vector<std::string> k = {"victim-exits-within-grace", "victim-order-equal-qos",
                                             "pending-reason", "latencies"};
  return k;
}

const char* ToString(Verdict v) {
  switch (v) {
    case Verdict::kAgree:
      return "agree";
    case Verdict::kAgreeByAllowance:
      return "agree (allowance)";
    case Verdict::kExpected:
      return "expected difference";
    case Verdict::kDiffers:
      return "DIFFERS";
    case Verdict::kNoLongerDiffers:
      return "NO LONGER DIFFERS";
  }
  return "?";
}

bool ConformanceReport::ok() const {
  return Count(Verdict::kDiffers) == 0 && Count(Verdict::kNoLongerDiffers) == 0;
}

int ConformanceReport::Count(Verdict v) const {
  return static_cast<int>(std::count_if(points.begin(), points.end(),
                                        [&](const ComparedPoint& p) { return p.verdict == v; }));
}

// ------------------------------------------------------------------ expectations

namespace {

std::string At(const std::string& file, const YAML::Node& n) {
  const int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
  return file + ":" + std::to_string(line) + ": ";
}

Result<Millis> Dur(const YAML::Node& n, const std::string& file, const std::string& what) {
  if (!n.IsScalar())
    return Result<Millis>::Error(At(file, n) + what + ": expected a duration such as 3s");
  auto d = ParseDuration(n.Scalar());
  if (!d.ok()) return Result<Millis>::Error(At(file, n) + what + ": " + d.message());
  return *d;
}

// tolerances: {start, gpuSecondsPerRun}, each a duration.
Status ParseTolerances(const YAML::Node& v, const std::string& file, Expectations& e) {
  if (!v.IsMap()) return Status::Error(At(file, v) + "tolerances: expected a mapping");
  for (auto t = v.begin(); t != v.end(); ++t) {
    const std::string tk = t->first.Scalar();
    auto d = Dur(t->second, file, "tolerances." + tk);
    if (!d.ok()) return d.status();
    if (tk == "start")
      e.start_tolerance = *d;
    else if (tk == "gpuSecondsPerRun")
      e.gpu_seconds_per_run = *d;
    else
      return Status::Error(At(file, t->first) + "tolerances: unknown field " + Quoted(tk) +
                           " (start, gpuSecondsPerRun)");
  }
  return Status::Ok();
}

// The issue-10 item an allowance or expected difference names (it must be one of Issue10Items).
Result<std::string> Issue10ItemOf(const YAML::Node& item, const std::string& file,
                                  const std::string& key) {
  const auto& items = Issue10Items();
  std::string issue;
  if (item["issue10"] && item["issue10"].IsScalar()) issue = item["issue10"].Scalar();
  if (std::find(items.begin(), items.end(), issue) == items.end()) {
    std::string list;
    for (const auto& x : items) list += (list.empty() ? "" : ", ") + x;
    return Result<std::string>::Error(At(file, item) + key +
                                      ": issue10 must name an issue-10 item (" + list + "), got " +
                                      Quoted(issue));
  }
  return issue;
}

Result<Allowance> ParseAllowance(const YAML::Node& item, const std::string& file,
                                 const std::string& issue) {
  Allowance a;
  a.issue10 = issue;
  for (auto f = item.begin(); f != item.end(); ++f) {
    const std::string fk = f->first.Scalar();
    if (fk == "issue10") continue;
    auto d = Dur(f->second, file, "allowances." + fk);
    if (!d.ok()) return Result<Allowance>(d.status());
    if (fk == "startAfterWait")
      a.start_after_wait = *d;
    else if (fk == "gpuSecondsPerPreemptedRun")
      a.gpu_seconds_per_preempted_run = *d;
    else
      return Result<Allowance>::Error(At(file, f->first) + "allowances: unknown field " +
                                      Quoted(fk) +
                                      " (issue10, startAfterWait, gpuSecondsPerPreemptedRun)");
  }
  return a;
}

Result<ExpectedDifference> ParseExpectedDifference(const YAML::Node& item, const std::string& file,
                                                   const std::string& issue) {
  using R = Result<ExpectedDifference>;
  ExpectedDifference d;
  d.issue10 = issue;
  d.line = item.Mark().line + 1;
  for (auto f = item.begin(); f != item.end(); ++f) {
    const std::string fk = f->first.Scalar();
    if (!f->second.IsScalar())
      return R::Error(At(file, f->second) + "differences." + fk + ": expected text");
    if (fk == "job")
      d.job = f->second.Scalar();
    else if (fk == "point")
      d.point = f->second.Scalar();
    else if (fk == "note")
      d.note = f->second.Scalar();
    else if (fk != "issue10")
      return R::Error(At(file, f->first) + "differences: unknown field " + Quoted(fk) +
                      " (job, point, issue10, note)");
  }
  if (d.job.empty() || d.point.empty())
    return R::Error(At(file, item) + "differences: job and point are required");
  return d;
}

// allowances: or differences: (key), a list of mappings, each naming an issue-10 item.
Status ParseExpectationList(const YAML::Node& v, const std::string& key, const std::string& file,
                            Expectations& e) {
  if (!v.IsSequence()) return Status::Error(At(file, v) + key + ": expected a list");
  for (auto it = v.begin(); it != v.end(); ++it) {
    const YAML::Node item = *it;
    if (!item.IsMap()) return Status::Error(At(file, item) + key + ": each entry is a mapping");
    auto issue = Issue10ItemOf(item, file, key);
    if (!issue.ok()) return issue.status();
    if (key == "allowances") {
      auto a = ParseAllowance(item, file, *issue);
      if (!a.ok()) return a.status();
      e.allowances.push_back(*a);
    } else {
      auto d = ParseExpectedDifference(item, file, *issue);
      if (!d.ok()) return d.status();
      e.differences.push_back(*d);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Expectations> Expectations::Parse(const std::string& text, const std::string& file) {
  using R = Result<Expectations>;
  Expectations e;
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    return R::Error(file + ":" + std::to_string(ex.mark.line + 1) + ": not valid YAML: " + ex.msg);
  }
  if (doc.IsNull()) return e;
  if (!doc.IsMap())
    return R::Error(At(file, doc) + "expected a mapping (tolerances, allowances, differences)");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    const std::string key = k.IsScalar() ? k.Scalar() : "";
    Status s = Status::Ok();
    if (key == "tolerances")
      s = ParseTolerances(v, file, e);
    else if (key == "allowances" || key == "differences")
      s = ParseExpectationList(v, key, file, e);
    else
      return R::Error(At(file, k) + "unknown field " + Quoted(key) +
                      " (tolerances, allowances, differences)");
    if (!s.ok()) return R(s);
  }
  return e;
}

Result<Expectations> Expectations::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Result<Expectations>::Error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

// ------------------------------------------------------------------ comparison

namespace {

Result<Millis> SecondsToMs(const nlohmann::json& j, const std::string& what) {
  if (j.is_number_integer()) return static_cast<Millis>(j.get<int64_t>()) * 1000;
  if (j.is_number()) {
    auto d = Decimal::Parse(j.dump());
    if (!d.ok()) return Result<Millis>::Error(what + ": " + d.message());
    return static_cast<Millis>(d->units() / 1000000);
  }
  return Result<Millis>::Error(what + ": expected a number of seconds");
}

std::string Secs(Millis ms) {
  std::string sign = ms < 0 ? "-" : "";
  Millis a = ms < 0 ? -ms : ms;
  std::string s = std::to_string(a / 1000);
  if (a % 1000) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(a % 1000));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    s += f;
  }
  return sign + s;
}

struct Run {
  Millis start = 0, end = 0;
  // Slurm: the record's state is PREEMPTED (killed at the end of its grace time); Arbiter: the run
  // ended with a Terminated event (stopped by a preemption).
  bool preempted_end = false;
};

struct JobSide {
  bool present = false;
  std::string state;
  std::vector<Run> runs;
  std::set<std::string> preemptors;
  bool preemptor_unknown = false;
  int64_t gpus_milli = 0;
  std::optional<Millis> submit;
  std::optional<int64_t> gpu_ms;  // a gang: the sum over its members
  bool gang = false;
  int64_t slurm_nodes = 0;                // Slurm: AllocTRES node= of the first run
  std::set<std::string> first_run_nodes;  // Arbiter: nodes of the first run (of every member)
};

// GPU-milliseconds held (milli-GPU x ms / 1000).
int64_t GpuMs(const JobSide& j) {
  if (j.gpu_ms) return *j.gpu_ms;
  int128 t = 0;
  for (const auto& r : j.runs) t += static_cast<int128>(j.gpus_milli) * (r.end - r.start) / 1000;
  return static_cast<int64_t>(t);
}

// A pod group's members as one job (a Slurm multi-node job): run K from the earliest member's
// start K to the latest member's end K, GPUs and GPU-seconds summed, preemptors united.
JobSide FoldGang(const std::vector<const JobSide*>& members) {
  JobSide g;
  g.gang = true;
  std::set<std::string> phases;
  int64_t gpu_ms = 0;
  for (const JobSide* m : members) {
    g.present = true;
    phases.insert(m->state);
    for (size_t k = 0; k < m->runs.size(); ++k) {
      if (k == g.runs.size()) {
        g.runs.push_back(m->runs[k]);
        continue;
      }
      Run& r = g.runs[k];
      r.start = std::min(r.start, m->runs[k].start);
      r.end = std::max(r.end, m->runs[k].end);
      r.preempted_end = r.preempted_end || m->runs[k].preempted_end;
    }
    g.preemptors.insert(m->preemptors.begin(), m->preemptors.end());
    g.gpus_milli += m->gpus_milli;
    gpu_ms += GpuMs(*m);
    g.first_run_nodes.insert(m->first_run_nodes.begin(), m->first_run_nodes.end());
    if (m->submit && (!g.submit || *m->submit < *g.submit)) g.submit = m->submit;
  }
  g.gpu_ms = gpu_ms;
  for (const auto& p : phases) g.state += (g.state.empty() ? "" : ",") + p;
  return g;
}

std::string SlurmStateAsPhase(const std::string& s) {
  if (s == "COMPLETED") return "Succeeded";
  if (s == "PREEMPTED") return "Preempted";
  if (s == "RUNNING" || s == "COMPLETING" || s == "SUSPENDED") return "Running";
  if (s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED")
    return "Pending";
  return s;
}

// "JobId=12", "JobId=12_3(15)", "JobId=Invalid" -> (job id text, raw id)
std::pair<std::string, std::string> JobToken(std::string_view tok) {
  std::string id(tok), raw;
  if (size_t p = id.find('('); p != std::string::npos) {
    raw = id.substr(
        p + 1, id.find(')', p) == std::string::npos ? std::string::npos : id.find(')', p) - p - 1);
    id = id.substr(0, p);
  }
  return {id, raw};
}

using JobSides = std::map<std::string, JobSide>;

// The Slurm side: a job per "<namespace>/<job name>", and how slurmctld's log names them.
struct SlurmJobs {
  JobSides jobs;
  std::map<std::string, std::string> key_of_id, key_of_raw;  // job ID / raw ID -> key
  std::optional<Millis> earliest_submit;
};

// sacct's records folded per job: its runs (one per start), final state, GPUs and first submission.
Result<SlurmJobs> SlurmJobsOf(const ConformanceInputs& in) {
  using R = Result<SlurmJobs>;
  SlurmJobs out;
  std::map<std::string, std::string> first_id_of_key;
  for (const SacctRun& run : *in.runs) {
    auto ns = in.names ? in.names->NamespaceOf(run.account) : std::nullopt;
    const std::string key = (ns ? *ns : run.account) + "/" + run.job_name;
    if (auto it = first_id_of_key.find(key);
        it != first_id_of_key.end() && it->second != run.job_id)
      return R::Error("two Slurm jobs are " + key + " (" + it->second + " and " + run.job_id +
                      "): job names must be unique per account to compare");
    first_id_of_key[key] = run.job_id;
    out.key_of_id[run.job_id] = key;
    if (!run.job_id_raw.empty()) out.key_of_raw[run.job_id_raw] = key;
    JobSide& j = out.jobs[key];
    if (!j.present && run.submit) {
      j.submit = run.submit;
      if (!out.earliest_submit || *run.submit < *out.earliest_submit)
        out.earliest_submit = run.submit;
    }
    j.present = true;
    j.state = run.state;
    j.gpus_milli = run.alloc.gpus * 1000;
    if (run.start) {
      if (j.runs.empty()) j.slurm_nodes = run.alloc.nodes;
      Run r;
      r.start = *run.start;
      r.end = *RunReleased(run);
      r.preempted_end = run.state == "PREEMPTED";
      j.runs.push_back(r);
    }
    if (run.state == "PREEMPTED") j.preemptor_unknown = true;
  }
  return out;
}

// Who preempted whom, from slurmctld's "... JobId=V ... to reclaim resources for JobId=P" lines.
// With a log every job's preemptors are known; a preemptor outside the compared set is named by
// its JobId.
void ReadSlurmctldPreemptions(const std::string& log_text, SlurmJobs& slurm) {
  for (auto& [k, j] : slurm.jobs) j.preemptor_unknown = false;
  std::istringstream log(log_text);
  std::string line;
  auto find_key = [&](const std::pair<std::string, std::string>& t) -> std::optional<std::string> {
    if (auto it = slurm.key_of_id.find(t.first); it != slurm.key_of_id.end()) return it->second;
    if (!t.second.empty())
      if (auto it = slurm.key_of_raw.find(t.second); it != slurm.key_of_raw.end())
        return it->second;
    return std::nullopt;
  };
  while (std::getline(log, line)) {
    size_t v = std::string::npos;
    if (line.find("preemption grace time for JobId=") != std::string::npos)
      v = line.find("JobId=");
    else if (line.find("preempted JobId=") != std::string::npos)
      v = line.find("JobId=");
    if (v == std::string::npos || line.find("to reclaim resources for JobId=") == std::string::npos)
      continue;
    std::string_view rest(line);
    rest.remove_prefix(v + 6);
    auto victim = JobToken(rest.substr(0, rest.find(' ')));
    size_t p = line.find("to reclaim resources for JobId=");
    std::string_view pt(line);
    pt.remove_prefix(p + 31);
    auto preemptor = JobToken(pt.substr(0, pt.find_first_of(" \r")));
    auto vk = find_key(victim);
    if (!vk) continue;  // a job outside the compared set
    auto pk = find_key(preemptor);
    if (pk)
      slurm.jobs[*vk].preemptors.insert(*pk);
    else if (preemptor.first != "Invalid")
      slurm.jobs[*vk].preemptors.insert("JobId=" + preemptor.first);
  }
}

// The Arbiter side's workloads: phase and GPUs requested (milli-GPU).
Result<JobSides> ArbiterWorkloadsOf(const nlohmann::json& rep) {
  using R = Result<JobSides>;
  JobSides arb;
  for (const auto& w : rep["workloads"]) {
    if (!w.contains("name") || !w["name"].is_string())
      return R::Error("report: a workload without a name");
    JobSide& j = arb[w["name"].get<std::string>()];
    j.present = true;
    j.state = w.value("phase", std::string("?"));
    if (w.contains("requests") && w["requests"].is_string()) {
      const std::string req = w["requests"].get<std::string>();
      const std::string key = "nvidia.com/gpu=";
      size_t p = req.find(key);
      if (p != std::string::npos && (p == 0 || req[p - 1] == ',')) {
        std::string v = req.substr(p + key.size(), req.find(',', p) == std::string::npos
                                                       ? std::string::npos
                                                       : req.find(',', p) - p - key.size());
        auto q = ParseResourceQuantity(kGpu, v);
        if (!q.ok())
          return R::Error("report: " + w["name"].get<std::string>() + " requests: " + q.message());
        j.gpus_milli = *q;
      }
    }
  }
  return arb;
}

// The Arbiter side's runs, submissions and preemptors from the report's events; a run still open
// ends at the report's end.
Status ReadArbiterEvents(const nlohmann::json& rep, JobSides& arb) {
  Millis report_end = 0;
  if (rep.contains("endTime")) {
    auto e = SecondsToMs(rep["endTime"], "report endTime");
    if (e.ok()) report_end = *e;
  }
  for (const auto& e : rep["events"]) {
    const std::string type = e.value("type", std::string());
    if (!e.contains("workload") || !e["workload"].is_string()) continue;
    const std::string wl = e["workload"].get<std::string>();
    auto t = SecondsToMs(e.contains("time") ? e["time"] : nlohmann::json(), "report event time");
    if (!t.ok()) return Status::Error(t.message());
    JobSide& j = arb[wl];
    if (type == "Submitted" && !j.submit)
      j.submit = *t;
    else if (type == "Scheduled") {
      j.runs.push_back(Run{*t, -1, false});
      if (j.runs.size() == 1 && e.contains("node") && e["node"].is_string())
        j.first_run_nodes.insert(e["node"].get<std::string>());
    } else if ((type == "Completed" || type == "Terminated") && !j.runs.empty() &&
               j.runs.back().end < 0) {
      j.runs.back().end = *t;
      j.runs.back().preempted_end = type == "Terminated";
    } else if (type == "Preempted" || type == "Reclaimed") {
      if (e.contains("by") && e["by"].is_string()) j.preemptors.insert(e["by"].get<std::string>());
    }
  }
  for (auto& [k, j] : arb)
    for (auto& r : j.runs)
      if (r.end < 0) r.end = std::max(report_end, r.start);
  return Status::Ok();
}

// A pod group is one job, as a Slurm multi-node job is: its members fold into it, and a preemptor
// that is a member is named by its group.
Status FoldPodGroups(const GangMembers& gangs, JobSides& arb) {
  std::map<std::string, std::string> gang_of;  // member -> group
  for (const auto& [g, members] : gangs)
    for (const auto& m : members) gang_of[m] = g;
  for (const auto& [g, members] : gangs) {
    if (arb.count(g) && !gang_of.count(g))
      return Status::Error("pod group " + g +
                           " has the name of a pod of its namespace: rename one");
    std::vector<const JobSide*> present;
    for (const auto& m : members)
      if (auto it = arb.find(m); it != arb.end()) present.push_back(&it->second);
    if (present.empty()) continue;
    JobSide folded = FoldGang(present);
    for (const auto& m : members) arb.erase(m);
    arb[g] = std::move(folded);
  }
  for (auto& [k, j] : arb) {
    std::set<std::string> named;
    for (const auto& p : j.preemptors) {
      auto it = gang_of.find(p);
      named.insert(it == gang_of.end() ? p : it->second);
    }
    j.preemptors = std::move(named);
  }
  return Status::Ok();
}

// "a,b,c", or "-" for none.
std::string PreemptorsText(const std::set<std::string>& v) {
  if (v.empty()) return "-";
  std::string t;
  for (const auto& x : v) t += (t.empty() ? "" : ",") + x;
  return t;
}

// Compares the two sides job by job into points, each with its verdict: agree, agree by an
// allowance, an expected difference (NO LONGER DIFFERS once it agrees), or DIFFERS.
class ConformanceJudge {
 public:
  ConformanceJudge(const Expectations& ex, Millis t0, ConformanceReport& out)
      : ex_(ex), t0_(t0), out_(out) {
    for (const auto& a : ex.allowances) {
      allowance_start_ += a.start_after_wait;
      allowance_gpu_ += a.gpu_seconds_per_preempted_run;
      allowance_name_ += (allowance_name_.empty() ? "" : ", ") + ("issue10 " + a.issue10);
    }
  }

  void CompareJob(const std::string& key, const JobSide& s, const JobSide& a) {
    ++out_.jobs;
    if (!s.present || !a.present) {
      Add(key, "present", s.present ? "yes" : "no", a.present ? "yes" : "no", false, false, "");
      return;
    }
    if (s.preemptor_unknown) {
      // No log: compare only whether it was preempted.
      Add(key, "preempted", "yes", a.preemptors.empty() ? "no" : "yes", !a.preemptors.empty(),
          false, "");
    } else {
      Add(key, "preempted-by", PreemptorsText(s.preemptors), PreemptorsText(a.preemptors),
          s.preemptors == a.preemptors, false, "");
    }
    const std::string sp = SlurmStateAsPhase(s.state);
    Add(key, "final-state", sp + (sp != s.state ? " (" + s.state + ")" : ""), a.state,
        sp == a.state, false, "");
    Add(key, "runs", std::to_string(s.runs.size()), std::to_string(a.runs.size()),
        s.runs.size() == a.runs.size(), false, "");
    CompareStarts(key, s, a);
    // A gang and a multi-node job: on how many nodes (one member per node).
    if (a.gang || s.slurm_nodes > 1)
      Add(key, "nodes", std::to_string(s.slurm_nodes), std::to_string(a.first_run_nodes.size()),
          s.slurm_nodes == static_cast<int64_t>(a.first_run_nodes.size()), false, "");
    CompareGpuSeconds(key, s, a);
  }

  // An expected difference for a point never compared (a typo, or a job renamed) is a failure too.
  void ReportUnusedDifferences() {
    for (size_t i = 0; i < ex_.differences.size(); ++i) {
      if (used_differences_.count(i)) continue;
      const auto& d = ex_.differences[i];
      out_.points.push_back(
          {d.job, d.point, "", "", "", Verdict::kNoLongerDiffers,
           "expected difference (line " + std::to_string(d.line) + ") names no compared point"});
    }
  }

 private:
  // Start K of both sides (Slurm's relative to t0); a start after a wait gets the allowance.
  void CompareStarts(const std::string& key, const JobSide& s, const JobSide& a) {
    const size_t common = std::min(s.runs.size(), a.runs.size());
    for (size_t k = 0; k < common; ++k) {
      const Millis ss = s.runs[k].start - t0_, as = a.runs[k].start;
      const Millis d = ss - as;
      const bool waited = !(k == 0 && a.submit && as == *a.submit);
      const Millis ad = d < 0 ? -d : d;
      const bool base_ok = ad <= ex_.start_tolerance;
      const bool allow_ok = waited && ad <= ex_.start_tolerance + allowance_start_;
      const std::string name = "start#" + std::to_string(k + 1);
      out_.start_deltas_ms.emplace_back(key + " " + name, d);
      if (waited)
        out_.max_abs_start_waited_ms = std::max(out_.max_abs_start_waited_ms, ad);
      else
        out_.max_abs_start_immediate_ms = std::max(out_.max_abs_start_immediate_ms, ad);
      const Millis tol = ex_.start_tolerance + (waited ? allowance_start_ : 0);
      Add(key, name, Secs(ss), Secs(as), base_ok || allow_ok, !base_ok && allow_ok,
          Secs(d) + " (tolerance " + Secs(tol) + (waited ? ", waited" : ", at submission") + ")");
    }
  }

  // GPU-seconds (GPU-ms internally: milli-GPU x ms / 1000).
  void CompareGpuSeconds(const std::string& key, const JobSide& s, const JobSide& a) {
    const size_t common = std::min(s.runs.size(), a.runs.size());
    const int64_t sg = GpuMs(s), ag = GpuMs(a);
    // The latency allowance covers runs both sides stopped by a preemption and Slurm killed at the
    // end of the grace time (PREEMPTED); a run only one side cut short is a real difference.
    int preempted_runs = 0;
    for (size_t k = 0; k < common; ++k)
      preempted_runs += s.runs[k].preempted_end && a.runs[k].preempted_end ? 1 : 0;
    const int64_t gpus_milli = std::max(s.gpus_milli, a.gpus_milli);
    const int64_t runs = static_cast<int64_t>(std::max(s.runs.size(), a.runs.size()));
    const int64_t base_tol = static_cast<int64_t>(static_cast<int128>(gpus_milli) *
                                                  ex_.gpu_seconds_per_run * runs / 1000);
    const int64_t allow_tol = static_cast<int64_t>(static_cast<int128>(gpus_milli) *
                                                   allowance_gpu_ * preempted_runs / 1000);
    const int64_t d = sg - ag, ad = d < 0 ? -d : d;
    out_.gpu_ms_deltas.emplace_back(key, d);
    Add(key, "gpu-seconds", Secs(sg), Secs(ag), ad <= base_tol + allow_tol,
        ad > base_tol && ad <= base_tol + allow_tol,
        Secs(d) + " (tolerance " + Secs(base_tol + allow_tol) + ")");
  }

  // The expected difference that names this point ("start" names every start#K).
  std::optional<size_t> Expected(const std::string& job, const std::string& point) const {
    for (size_t i = 0; i < ex_.differences.size(); ++i) {
      const auto& d = ex_.differences[i];
      if (d.job != job) continue;
      if (d.point == point || (d.point == "start" && point.rfind("start#", 0) == 0)) return i;
    }
    return std::nullopt;
  }

  void Add(const std::string& job, const std::string& point, std::string s, std::string a,
           bool equal, bool by_allowance, std::string delta) {
    ComparedPoint p{job, point, std::move(s), std::move(a), std::move(delta), Verdict::kAgree, ""};
    auto e = Expected(job, point);
    if (e) {
      used_differences_.insert(*e);
      p.note = "issue10 " + ex_.differences[*e].issue10;
      p.verdict = equal ? Verdict::kNoLongerDiffers : Verdict::kExpected;
    } else if (!equal) {
      p.verdict = Verdict::kDiffers;
    } else if (by_allowance) {
      p.verdict = Verdict::kAgreeByAllowance;
      p.note = allowance_name_;
    }
    out_.points.push_back(std::move(p));
  }

  const Expectations& ex_;
  const Millis t0_;
  ConformanceReport& out_;
  Millis allowance_start_ = 0, allowance_gpu_ = 0;
  std::string allowance_name_;
  std::set<size_t> used_differences_;
};

}  // namespace

Result<ConformanceReport> CompareWithSlurm(const ConformanceInputs& in) {
  using R = Result<ConformanceReport>;
  static const Expectations kDefaults;
  const Expectations& ex = in.expect ? *in.expect : kDefaults;
  const nlohmann::json& rep = *in.report;
  if (!rep.is_object() || !rep.contains("events") || !rep["events"].is_array() ||
      !rep.contains("workloads"))
    return R::Error("the report is not a SimulationReport (no events[] / workloads[])");
  auto slurm = SlurmJobsOf(in);
  if (!slurm.ok()) return R(slurm.status());
  SlurmJobs s = std::move(slurm).value();
  const Millis t0 = in.t0 ? *in.t0 : s.earliest_submit.value_or(0);
  if (in.slurmctld_log) ReadSlurmctldPreemptions(*in.slurmctld_log, s);
  auto arb_read = ArbiterWorkloadsOf(rep);
  if (!arb_read.ok()) return R(arb_read.status());
  JobSides arb = std::move(arb_read).value();
  if (Status st = ReadArbiterEvents(rep, arb); !st.ok()) return R(st);
  if (in.gangs && !in.gangs->empty())
    if (Status st = FoldPodGroups(*in.gangs, arb); !st.ok()) return R(st);

  ConformanceReport out;
  std::set<std::string> keys;
  for (const auto& [k, j] : s.jobs) keys.insert(k);
  for (const auto& [k, j] : arb) keys.insert(k);
  ConformanceJudge judge(ex, t0, out);
  for (const auto& key : keys) judge.CompareJob(key, s.jobs[key], arb[key]);
  judge.ReportUnusedDifferences();
  return out;
}

GangMembers GangMembersOf(const ManifestSet& set) {
  GangMembers out;
  for (const Pod& p : set.pods) {
    auto it = p.meta.labels.find(kPodGroupLabel);
    if (it == p.meta.labels.end() || it->second.empty()) continue;
    out[p.meta.namespace_ + "/" + it->second].push_back(p.meta.namespace_ + "/" + p.meta.name);
  }
  return out;
}

std::string ConformanceTable(const ConformanceReport& r) {
  size_t wj = 3, wp = 5, ws = 5, wa = 7;
  for (const auto& p : r.points) {
    wj = std::max(wj, p.job.size());
    wp = std::max(wp, p.point.size());
    ws = std::max(ws, p.slurm.size());
    wa = std::max(wa, p.arbiter.size());
  }
  auto pad = [](const std::string& s, size_t w) {
    return s + std::string(w > s.size() ? w - s.size() : 0, ' ') + "  ";
  };
  std::ostringstream o;
  o << pad("JOB", wj) << pad("POINT", wp) << pad("SLURM", ws) << pad("ARBITER", wa) << "VERDICT\n";
  for (const auto& p : r.points) {
    o << pad(p.job, wj) << pad(p.point, wp) << pad(p.slurm, ws) << pad(p.arbiter, wa)
      << ToString(p.verdict);
    if (!p.delta.empty()) o << "  " << p.delta;
    if (!p.note.empty()) o << "  [" << p.note << "]";
    o << "\n";
  }
  o << r.jobs << " jobs, " << r.points.size() << " points: " << r.Count(Verdict::kAgree)
    << " agree, " << r.Count(Verdict::kAgreeByAllowance) << " agree with an allowance, "
    << r.Count(Verdict::kExpected) << " expected differences, " << r.Count(Verdict::kDiffers)
    << " unexpected differences, " << r.Count(Verdict::kNoLongerDiffers)
    << " expected differences that no longer occur\n";
  o << "start times, Slurm - Arbiter: max |delta| " << Secs(r.max_abs_start_immediate_ms)
    << " s at submission, " << Secs(r.max_abs_start_waited_ms) << " s after a wait\n";
  return o.str();
}

nlohmann::json ConformanceJson(const ConformanceReport& r) {
  nlohmann::json j;
  j["kind"] = "SlurmConformance";
  j["ok"] = r.ok();
  j["jobs"] = r.jobs;
  j["points"] = nlohmann::json::array();
  for (const auto& p : r.points)
    j["points"].push_back({{"job", p.job},
                           {"point", p.point},
                           {"slurm", p.slurm},
                           {"arbiter", p.arbiter},
                           {"delta", p.delta},
                           {"verdict", ToString(p.verdict)},
                           {"note", p.note}});
  j["maxAbsStartAtSubmissionSeconds"] = Secs(r.max_abs_start_immediate_ms);
  j["maxAbsStartAfterWaitSeconds"] = Secs(r.max_abs_start_waited_ms);
  nlohmann::json sd = nlohmann::json::object(), gd = nlohmann::json::object();
  for (const auto& [k, v] : r.start_deltas_ms) sd[k] = Secs(v);
  for (const auto& [k, v] : r.gpu_ms_deltas) gd[k] = Secs(v);
  j["startDeltaSeconds"] = sd;
  j["gpuSecondsDelta"] = gd;
  return j;
}

}  // namespace arbiter::slurm
