#include "adapters/kube/table.h"

#include <algorithm>
#include <map>

#include "adapters/json/member.h"
#include "adapters/json/sparse_parse.h"
#include "adapters/kube/status.h"
#include "core/quantity.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

const char* kNameDoc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* kAgeDoc =
    "CreationTimestamp is a timestamp representing the server time when this object was created.";

Column NameColumn() { return {"Name", "string", "name", kNameDoc, 0}; }
Column AgeColumn() { return {"Age", "string", "", kAgeDoc, 0}; }
Column Str(std::string name, std::string doc, int priority = 0) {
  return {std::move(name), "string", "", std::move(doc), priority};
}

using json_member::MemberAt;

std::string S(const json& v, std::string_view fallback = "") {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return std::string(fallback);
}

std::string OrNone(const json& v) {
  std::string s = S(v);
  return s.empty() ? "<none>" : s;
}

std::string Since(const json& timestamp, Millis now) {
  if (!timestamp.is_string()) return "<unknown>";
  auto t = ParseRfc3339(timestamp.get<std::string>());
  if (!t.ok()) return "<unknown>";
  return HumanDuration(now - *t);
}

std::string Age(const json& obj, Millis now) {
  return Since(MemberAt(obj, {"metadata", "creationTimestamp"}), now);
}

// "nvidia.com/gpu: 12, cpu: 4": a resource map, sorted by name.
std::string ResourceList(const json& m) {
  if (!m.is_object() || m.empty()) return "<none>";
  std::string out;
  for (auto it = m.begin(); it != m.end(); ++it)
    out += (out.empty() ? "" : ", ") + it.key() + ": " + S(it.value());
  return out;
}

bool IsBytes(const std::string& resource) {
  return resource.find("memory") != std::string::npos ||
         resource.find("storage") != std::string::npos || resource.rfind("hugepages-", 0) == 0;
}

// used - min per resource where positive.
std::string Borrowed(const json& used, const json& min) {
  if (!used.is_object()) return "<none>";
  std::string out;
  for (auto it = used.begin(); it != used.end(); ++it) {
    const std::string& res = it.key();
    const int scale = IsBytes(res) ? 0 : 3;
    auto u = ParseScaledQuantity(S(it.value()), scale);
    if (!u.ok()) continue;
    int64_t m = 0;
    if (min.is_object() && min.contains(res)) {
      auto mm = ParseScaledQuantity(S(min[res]), scale);
      if (mm.ok()) m = *mm;
    }
    if (*u <= m) continue;
    const int64_t b = *u - m;
    out += (out.empty() ? "" : ", ") + res + ": " + (scale == 0 ? FormatBytes(b) : FormatMillis(b));
  }
  return out.empty() ? "<none>" : out;
}

// ---------------------------------------------------------------- pods

std::string PodStatus(const json& pod) {
  std::string reason = S(MemberAt(pod, {"status", "phase"}), "Pending");
  if (!S(MemberAt(pod, {"status", "reason"})).empty())
    reason = S(MemberAt(pod, {"status", "reason"}));
  bool has_running = false;
  const json& cs = MemberAt(pod, {"status", "containerStatuses"});
  if (cs.is_array()) {
    for (auto it = cs.rbegin(); it != cs.rend(); ++it) {
      const json& st = MemberAt(*it, {"state"});
      if (!S(MemberAt(st, {"waiting", "reason"})).empty()) {
        reason = S(MemberAt(st, {"waiting", "reason"}));
      } else if (!S(MemberAt(st, {"terminated", "reason"})).empty()) {
        reason = S(MemberAt(st, {"terminated", "reason"}));
      } else if (MemberAt(st, {"terminated"}).is_object()) {
        const json& t = MemberAt(st, {"terminated"});
        reason = MemberAt(t, {"signal"}).is_number() && MemberAt(t, {"signal"}) != 0
                     ? "Signal:" + S(MemberAt(t, {"signal"}))
                     : "ExitCode:" + S(MemberAt(t, {"exitCode"}), "0");
      } else if (MemberAt(*it, {"ready"}) == true && MemberAt(st, {"running"}).is_object()) {
        has_running = true;
      }
    }
  }
  if (reason == "Completed" && has_running) reason = "Running";
  // Not scheduled yet: why it waits (the PodScheduled=False reason) says more than any container
  // state the pod may carry (ContainerCreating).
  if (S(MemberAt(pod, {"status", "phase"}), "Pending") == "Pending" &&
      S(MemberAt(pod, {"spec", "nodeName"})).empty()) {
    const json& conds = MemberAt(pod, {"status", "conditions"});
    if (conds.is_array())
      for (const auto& c : conds)
        if (S(MemberAt(c, {"type"})) == "PodScheduled" && S(MemberAt(c, {"status"})) == "False" &&
            !S(MemberAt(c, {"reason"})).empty())
          reason = S(MemberAt(c, {"reason"}));
  }
  if (MemberAt(pod, {"metadata", "deletionTimestamp"}).is_string()) reason = "Terminating";
  return reason;
}

json PodCells(const json& pod, Millis now) {
  const json& containers = MemberAt(pod, {"spec", "containers"});
  const size_t total = containers.is_array() ? containers.size() : 0;
  size_t ready = 0;
  int64_t restarts = 0;
  const json& cs = MemberAt(pod, {"status", "containerStatuses"});
  if (cs.is_array()) {
    for (const auto& c : cs) {
      if (MemberAt(c, {"ready"}) == true) ++ready;
      if (MemberAt(c, {"restartCount"}).is_number_integer())
        restarts += MemberAt(c, {"restartCount"}).get<int64_t>();
    }
  } else if (S(MemberAt(pod, {"status", "phase"})) == "Running") {
    // A virtual pod without container statuses: ready when its Ready condition is.
    const json& conds = MemberAt(pod, {"status", "conditions"});
    if (conds.is_array())
      for (const auto& c : conds)
        if (S(MemberAt(c, {"type"})) == "Ready" && S(MemberAt(c, {"status"})) == "True")
          ready = total;
  }
  std::string gates = "<none>";
  const json& rg = MemberAt(pod, {"spec", "readinessGates"});
  if (rg.is_array() && !rg.empty()) {
    size_t ok = 0;
    const json& conds = MemberAt(pod, {"status", "conditions"});
    for (const auto& g : rg)
      if (conds.is_array())
        for (const auto& c : conds)
          if (S(MemberAt(c, {"type"})) == S(MemberAt(g, {"conditionType"})) &&
              S(MemberAt(c, {"status"})) == "True")
            ++ok;
    gates = std::to_string(ok) + "/" + std::to_string(rg.size());
  }
  return json::array(
      {S(MemberAt(pod, {"metadata", "name"})), std::to_string(ready) + "/" + std::to_string(total),
       PodStatus(pod), std::to_string(restarts), Age(pod, now),
       OrNone(MemberAt(pod, {"status", "podIP"})), OrNone(MemberAt(pod, {"spec", "nodeName"})),
       OrNone(MemberAt(pod, {"status", "nominatedNodeName"})), gates});
}

// What PodCells and PodStatus read: a row of a Pod kept as text parses these alone (its
// containers counted, their specs skipped).
const json_sparse::Keep& PodReads() {
  using json_sparse::Count;
  using json_sparse::Members;
  using json_sparse::Whole;
  static const json_sparse::Keep kReads = Members(
      {{"metadata",
        Members(
            {{"name", Whole()}, {"creationTimestamp", Whole()}, {"deletionTimestamp", Whole()}})},
       {"spec",
        Members({{"containers", Count()}, {"readinessGates", Whole()}, {"nodeName", Whole()}})},
       {"status",
        Members(
            {{"phase", Whole()},
             {"reason", Whole()},
             {"podIP", Whole()},
             {"nominatedNodeName", Whole()},
             {"conditions", Members({{"type", Whole()}, {"status", Whole()}, {"reason", Whole()}})},
             {"containerStatuses",
              Members({{"ready", Whole()},
                       {"restartCount", Whole()},
                       {"state", Members({{"waiting", Members({{"reason", Whole()}})},
                                          {"terminated", Members({{"reason", Whole()},
                                                                  {"signal", Whole()},
                                                                  {"exitCode", Whole()}})},
                                          {"running", Members({})}})}})}})}});
  return kReads;
}

// ---------------------------------------------------------------- nodes

json NodeCells(const json& node, Millis now) {
  std::string status = "Ready";
  const json& conds = MemberAt(node, {"status", "conditions"});
  if (conds.is_array() && !conds.empty()) {
    status = "Unknown";
    for (const auto& c : conds)
      if (S(MemberAt(c, {"type"})) == "Ready")
        status = S(MemberAt(c, {"status"})) == "True"    ? "Ready"
                 : S(MemberAt(c, {"status"})) == "False" ? "NotReady"
                                                         : "Unknown";
  }
  if (MemberAt(node, {"spec", "unschedulable"}) == true) status += ",SchedulingDisabled";
  std::vector<std::string> roles;
  const json& labels = MemberAt(node, {"metadata", "labels"});
  if (labels.is_object())
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      const std::string& k = it.key();
      if (k.rfind("node-role.kubernetes.io/", 0) == 0 && k.size() > 24)
        roles.push_back(k.substr(24));
      else if (k == "kubernetes.io/role")
        roles.push_back(S(it.value()));
    }
  std::sort(roles.begin(), roles.end());
  std::string role_text;
  for (const auto& r : roles) role_text += (role_text.empty() ? "" : ",") + r;
  std::string internal = "<none>", external = "<none>";
  const json& addrs = MemberAt(node, {"status", "addresses"});
  if (addrs.is_array())
    for (const auto& a : addrs) {
      if (S(MemberAt(a, {"type"})) == "InternalIP" && internal == "<none>")
        internal = S(MemberAt(a, {"address"}));
      if (S(MemberAt(a, {"type"})) == "ExternalIP" && external == "<none>")
        external = S(MemberAt(a, {"address"}));
    }
  const json& info = MemberAt(node, {"status", "nodeInfo"});
  std::string gpu = S(MemberAt(node, {"status", "capacity", "nvidia.com/gpu"}));
  return json::array(
      {S(MemberAt(node, {"metadata", "name"})), status, role_text.empty() ? "<none>" : role_text,
       Age(node, now), S(MemberAt(info, {"kubeletVersion"})), internal, external,
       OrNone(MemberAt(info, {"osImage"})), OrNone(MemberAt(info, {"kernelVersion"})),
       OrNone(MemberAt(info, {"containerRuntimeVersion"})), gpu.empty() ? "0" : gpu,
       OrNone(MemberAt(labels, {"nvidia.com/gpu.product"}))});
}

// ---------------------------------------------------------------- quotas

json QuotaCells(const json& q, Millis now) {
  const json& hard = MemberAt(q, {"status", "hard"}).is_object() ? MemberAt(q, {"status", "hard"})
                                                                 : MemberAt(q, {"spec", "hard"});
  const json& used = MemberAt(q, {"status", "used"});
  std::string request, limit;
  if (hard.is_object())
    for (auto it = hard.begin(); it != hard.end(); ++it) {
      std::string u = used.is_object() && used.contains(it.key()) ? S(used[it.key()]) : "0";
      std::string piece = it.key() + ": " + u + "/" + S(it.value());
      std::string& target = it.key().rfind("limits.", 0) == 0 ? limit : request;
      target += (target.empty() ? "" : ", ") + piece;
    }
  return json::array({S(MemberAt(q, {"metadata", "name"})), Age(q, now), request, limit});
}

json ElasticQuotaCells(const json& q, Millis now) {
  const json& used = MemberAt(q, {"status", "used"});
  const json& min = MemberAt(q, {"spec", "min"});
  return json::array({S(MemberAt(q, {"metadata", "name"})), ResourceList(used), ResourceList(min),
                      ResourceList(MemberAt(q, {"spec", "max"})), Borrowed(used, min), Age(q, now),
                      OrNone(MemberAt(q, {"spec", "cohort"})),
                      OrNone(MemberAt(q, {"status", "fairShare"}))});
}

// ---------------------------------------------------------------- events

json EventCells(const json& e, Millis now) {
  json last = MemberAt(e, {"lastTimestamp"});
  if (!last.is_string()) last = MemberAt(e, {"eventTime"});
  if (!last.is_string()) last = MemberAt(e, {"metadata", "creationTimestamp"});
  json first = MemberAt(e, {"firstTimestamp"});
  if (!first.is_string()) first = MemberAt(e, {"eventTime"});
  if (!first.is_string()) first = last;
  const int64_t count =
      MemberAt(e, {"count"}).is_number_integer() ? MemberAt(e, {"count"}).get<int64_t>() : 1;
  std::string last_seen = Since(last, now);
  if (count > 1) last_seen += " (x" + std::to_string(count) + " over " + Since(first, now) + ")";
  std::string kind = S(MemberAt(e, {"involvedObject", "kind"}));
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::string source = S(MemberAt(e, {"source", "component"}));
  if (source.empty()) source = S(MemberAt(e, {"reportingComponent"}));
  if (!S(MemberAt(e, {"source", "host"})).empty())
    source += ", " + S(MemberAt(e, {"source", "host"}));
  return json::array({last_seen, S(MemberAt(e, {"type"})), S(MemberAt(e, {"reason"})),
                      kind + "/" + S(MemberAt(e, {"involvedObject", "name"})),
                      S(MemberAt(e, {"involvedObject", "fieldPath"})), source,
                      S(MemberAt(e, {"message"})), Since(first, now), std::to_string(count),
                      S(MemberAt(e, {"metadata", "name"}))});
}

std::string IntOrNA(const json& v) { return v.is_null() ? "N/A" : S(v); }

}  // namespace

IncludeObject ParseIncludeObject(std::string_view text) {
  if (text == "None") return IncludeObject::kNone;
  if (text == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

bool WantsTable(std::string_view accept) {
  size_t pos = 0;
  while ((pos = accept.find("as=Table", pos)) != std::string_view::npos) {
    size_t start = accept.rfind(',', pos);
    size_t end = accept.find(',', pos);
    std::string_view media =
        accept.substr(start == std::string_view::npos ? 0 : start + 1,
                      end == std::string_view::npos ? std::string_view::npos : end - start - 1);
    if (media.find("g=meta.k8s.io") != std::string_view::npos &&
        (media.find("v=v1;") != std::string_view::npos ||
         media.find("v=v1beta1") != std::string_view::npos ||
         (media.size() >= 4 && media.substr(media.size() - 4) == "v=v1")))
      return true;
    pos += 8;
  }
  return false;
}

namespace {

// ------------------------------------------------------------------ one printer per kind

std::vector<Column> PodColumns() {
  return {
      NameColumn(),
      Str("Ready", "The aggregate readiness state of this pod for accepting traffic."),
      Str("Status",
          "The aggregate status of the containers in this pod (a pending pod: why it waits)."),
      Str("Restarts", "The number of times the containers in this pod have been restarted."),
      AgeColumn(),
      Str("IP", "IP address allocated to the pod.", 1),
      Str("Node", "NodeName is the node the pod is bound to.", 1),
      Str("Nominated Node", "The node the pod will run on once preemption victims have left.", 1),
      Str("Readiness Gates", "Pod's readiness gates.", 1)};
}

std::vector<Column> NodeColumns() {
  return {NameColumn(),
          Str("Status", "The status of the node"),
          Str("Roles", "The roles of the node"),
          AgeColumn(),
          Str("Version", "Kubelet Version reported by the node."),
          Str("Internal-IP", "List of internal IPs.", 1),
          Str("External-IP", "List of external IPs.", 1),
          Str("OS-Image", "OS Image reported by the node.", 1),
          Str("Kernel-Version", "Kernel Version reported by the node.", 1),
          Str("Container-Runtime", "Container Runtime Version reported by the node.", 1),
          Str("GPU", "nvidia.com/gpu capacity.", 1),
          Str("GPU-Product", "The nvidia.com/gpu.product label.", 1)};
}

std::vector<Column> NamespaceColumns() {
  return {NameColumn(), Str("Status", "The status of the namespace"), AgeColumn()};
}

std::vector<Column> ResourceQuotaColumns() {
  return {NameColumn(), AgeColumn(),
          Str("Request",
              "Request represents a minimum amount of cpu/memory that a container may consume."),
          Str("Limit",
              "Limits control the maximum amount of cpu/memory that a container may use "
              "independent of contention on the node.")};
}

std::vector<Column> LimitRangeColumns() {
  return {NameColumn(), {"Created At", "date", "", kAgeDoc, 0}};
}

std::vector<Column> EventColumns() {
  return {Str("Last Seen", "The last time this event was seen"),
          Str("Type", "Type of this event (Normal, Warning)"),
          Str("Reason", "Why the action was taken."),
          Str("Object", "The object that this event is about."),
          Str("Subobject", "The subobject (e.g. a container) this event is about.", 1),
          Str("Source", "The component reporting this event.", 1),
          Str("Message", "A human-readable description of the status of this operation."),
          Str("First Seen", "The first time this event was seen", 1),
          Str("Count", "The number of times this event has occurred.", 1),
          {"Name", "string", "name", kNameDoc, 1}};
}

std::vector<Column> PriorityClassColumns() {
  return {
      NameColumn(),
      {"Value", "integer", "", "The value of this priority class.", 0},
      {"Global-Default", "boolean", "", "Whether this is the global default priority class.", 0},
      AgeColumn(),
      Str("PreemptionPolicy", "The policy for preempting pods with lower priority.")};
}

std::vector<Column> PodDisruptionBudgetColumns() {
  return {
      NameColumn(),
      Str("Min Available", "The minimum number of pods that must be available."),
      Str("Max Unavailable", "The maximum number of pods that may be unavailable."),
      {"Allowed Disruptions", "integer", "", "How many pod disruptions are currently allowed.", 0},
      AgeColumn()};
}

std::vector<Column> ElasticQuotaColumns() {
  return {NameColumn(),
          Str("Used", "Resources the namespace's running workloads request."),
          Str("Min", "Guaranteed resources."),
          Str("Max", "Ceiling, borrowing included."),
          Str("Borrowed", "Used above min: lent by the cohort."),
          AgeColumn(),
          Str("Cohort", "The cohort.", 1),
          Str("Fair Share", "Weighted dominant-resource share of what the cohort lends.", 1)};
}

std::vector<Column> QoSColumns() {
  return {NameColumn(),
          {"Priority", "integer", "", "QoS priority.", 0},
          Str("Preempt", "QoS this one may preempt."),
          Str("Preempt Mode", "Requeue or Cancel."),
          AgeColumn()};
}

std::vector<Column> PriceBookColumns() {
  return {NameColumn(), Str("Currency", "ISO 4217 code."), Str("Mode", "Metering mode."),
          Str("Effective From", "When the prices start to apply."), AgeColumn()};
}

json NamespaceCells(const json& o, Millis now) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  return json::array({name, S(MemberAt(o, {"status", "phase"}), "Active"), Age(o, now)});
}

json LimitRangeCells(const json& o, Millis) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  return json::array({name, S(MemberAt(o, {"metadata", "creationTimestamp"}))});
}

json PriorityClassCells(const json& o, Millis now) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  return json::array({name,
                      MemberAt(o, {"value"}).is_number_integer() ? MemberAt(o, {"value"}) : json(0),
                      MemberAt(o, {"globalDefault"}) == true, Age(o, now),
                      S(MemberAt(o, {"preemptionPolicy"}), "PreemptLowerPriority")});
}

json PodDisruptionBudgetCells(const json& o, Millis now) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  return json::array({name, IntOrNA(MemberAt(o, {"spec", "minAvailable"})),
                      IntOrNA(MemberAt(o, {"spec", "maxUnavailable"})),
                      MemberAt(o, {"status", "disruptionsAllowed"}).is_number_integer()
                          ? MemberAt(o, {"status", "disruptionsAllowed"})
                          : json(0),
                      Age(o, now)});
}

json QoSCells(const json& o, Millis now) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  std::string preempt;
  const json& p = MemberAt(o, {"spec", "preempt"});
  if (p.is_array())
    for (const auto& x : p) preempt += (preempt.empty() ? "" : ",") + S(x);
  return json::array({name,
                      MemberAt(o, {"spec", "priority"}).is_number_integer()
                          ? MemberAt(o, {"spec", "priority"})
                          : json(0),
                      preempt.empty() ? "<none>" : preempt,
                      OrNone(MemberAt(o, {"spec", "preemptMode"})), Age(o, now)});
}

json PriceBookCells(const json& o, Millis now) {
  const std::string name = S(MemberAt(o, {"metadata", "name"}));
  return json::array(
      {name, S(MemberAt(o, {"spec", "currency"}), "USD"), S(MemberAt(o, {"spec", "mode"}), "Max"),
       S(MemberAt(o, {"spec", "effectiveFrom"}), "1970-01-01T00:00:00Z"), Age(o, now)});
}

std::vector<Column> JobColumns() {
  return {NameColumn(),
          Str("Status", "Status of the job."),
          Str("Completions", "The number of pods which reached phase Succeeded."),
          Str("Duration", "Time required to complete the job."),
          AgeColumn(),
          Str("Containers", "Names of each container in the template.", 1),
          Str("Images", "Images referenced by each container in the template.", 1),
          Str("Selector", "A label query over pods that should match the pod count.", 1)};
}

bool HasTrueCondition(const json& o, const char* type) {
  const json& conds = MemberAt(o, {"status", "conditions"});
  if (!conds.is_array()) return false;
  for (const auto& c : conds)
    if (S(MemberAt(c, {"type"})) == type && S(MemberAt(c, {"status"})) == "True") return true;
  return false;
}

// kube's printJob: the first of Complete, Failed, Terminating, Suspended, FailureTarget,
// SuccessCriteriaMet, else Running.
std::string JobStatus(const json& o) {
  for (const char* c : {"Complete", "Failed"})
    if (HasTrueCondition(o, c)) return c;
  if (MemberAt(o, {"metadata", "deletionTimestamp"}).is_string()) return "Terminating";
  for (const char* c : {"Suspended", "FailureTarget", "SuccessCriteriaMet"})
    if (HasTrueCondition(o, c)) return c;
  return "Running";
}

std::string JobCompletions(const json& o) {
  const json& succeeded = MemberAt(o, {"status", "succeeded"});
  const std::string done = succeeded.is_number_integer() ? succeeded.dump() : "0";
  const json& completions = MemberAt(o, {"spec", "completions"});
  if (completions.is_number_integer()) return done + "/" + completions.dump();
  const json& parallelism = MemberAt(o, {"spec", "parallelism"});
  if (parallelism.is_number_integer() && parallelism.get<int64_t>() > 1)
    return done + "/1 of " + parallelism.dump();
  return done + "/1";
}

std::string JobDuration(const json& o, Millis now) {
  const json& start = MemberAt(o, {"status", "startTime"});
  if (!start.is_string()) return "";
  auto from = ParseRfc3339(start.get<std::string>());
  if (!from.ok()) return "";
  const json& end = MemberAt(o, {"status", "completionTime"});
  if (!end.is_string()) return HumanDuration(now - *from);
  auto to = ParseRfc3339(end.get<std::string>());
  return to.ok() ? HumanDuration(*to - *from) : "";
}

json JobCells(const json& o, Millis now) {
  std::string names, images, selector;
  const json& containers = MemberAt(o, {"spec", "template", "spec", "containers"});
  if (containers.is_array())
    for (const auto& c : containers) {
      names += (names.empty() ? "" : ",") + S(MemberAt(c, {"name"}));
      images += (images.empty() ? "" : ",") + S(MemberAt(c, {"image"}));
    }
  const json& labels = MemberAt(o, {"spec", "selector", "matchLabels"});
  if (labels.is_object())
    for (const auto& [k, v] : labels.items())
      selector += (selector.empty() ? "" : ",") + k + "=" + S(v);
  return json::array({S(MemberAt(o, {"metadata", "name"})), JobStatus(o), JobCompletions(o),
                      JobDuration(o, now), Age(o, now), names, images,
                      selector.empty() ? "<none>" : selector});
}

std::vector<Column> DefaultColumns() { return {NameColumn(), AgeColumn()}; }
json DefaultCells(const json& o, Millis now) {
  return json::array({S(MemberAt(o, {"metadata", "name"})), Age(o, now)});
}

const json_sparse::Keep& DefaultReads() {
  using json_sparse::Members;
  using json_sparse::Whole;
  static const json_sparse::Keep kReads =
      Members({{"metadata", Members({{"name", Whole()}, {"creationTimestamp", Whole()}})}});
  return kReads;
}

const TablePrinter kDefaultPrinter = {DefaultColumns, DefaultCells, &DefaultReads()};

}  // namespace

const TablePrinter& TablePrinterOf(KindId id) {
  static const TablePrinter kPod = {PodColumns, PodCells, &PodReads()},
                            kNode = {NodeColumns, NodeCells},
                            kNamespace = {NamespaceColumns, NamespaceCells},
                            kQuota = {ResourceQuotaColumns, QuotaCells},
                            kLimitRange = {LimitRangeColumns, LimitRangeCells},
                            kEvent = {EventColumns, EventCells},
                            kPriorityClass = {PriorityClassColumns, PriorityClassCells},
                            kPdb = {PodDisruptionBudgetColumns, PodDisruptionBudgetCells},
                            kElastic = {ElasticQuotaColumns, ElasticQuotaCells},
                            kQoS = {QoSColumns, QoSCells},
                            kPriceBook = {PriceBookColumns, PriceBookCells},
                            kJob = {JobColumns, JobCells};
  switch (id) {
    case KindId::kPod:
      return kPod;
    case KindId::kNode:
      return kNode;
    case KindId::kNamespace:
      return kNamespace;
    case KindId::kResourceQuota:
      return kQuota;
    case KindId::kLimitRange:
      return kLimitRange;
    case KindId::kEvent:
      return kEvent;
    case KindId::kPriorityClass:
      return kPriorityClass;
    case KindId::kPodDisruptionBudget:
      return kPdb;
    case KindId::kElasticQuota:
      return kElastic;
    case KindId::kQoS:
      return kQoS;
    case KindId::kPriceBook:
      return kPriceBook;
    case KindId::kJob:
      return kJob;
    case KindId::kPoolPolicy:
    case KindId::kResourceFlavor:
    case KindId::kPodGroup:
      return kDefaultPrinter;
  }
  return kDefaultPrinter;
}

namespace {
// A resource's printer: its kind's, or NAME AGE for a kind not in the kinds table.
const TablePrinter& PrinterOf(const ResourceInfo& r) {
  const ApiKind* k = FindApiKind(r.kind);
  return k ? TablePrinterOf(k->id) : kDefaultPrinter;
}
}  // namespace

std::vector<Column> ColumnsOf(const ResourceInfo& r) { return PrinterOf(r).columns(); }

json CellsOf(const ResourceInfo& r, const json& o, Millis now) {
  return PrinterOf(r).cells(o, now);
}

namespace {
json ColumnsJson(const ResourceInfo& r) {
  json cols = json::array();
  for (const auto& c : ColumnsOf(r)) {
    json j = {{"name", c.name},
              {"type", c.type},
              {"format", c.format},
              {"description", c.description},
              {"priority", c.priority}};
    cols.push_back(std::move(j));
  }
  return cols;
}
}  // namespace

json MakeTable(const ResourceInfo& r, const std::vector<const json*>& objects, Millis now,
               IncludeObject include, const json& list_metadata) {
  json rows = json::array();
  for (const json* o : objects) {
    json row = {{"cells", CellsOf(r, *o, now)}};
    if (include == IncludeObject::kObject) {
      row["object"] = *o;
    } else if (include == IncludeObject::kMetadata) {
      row["object"] = {
          {"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata",
           MemberAt(*o, {"metadata"}).is_object() ? MemberAt(*o, {"metadata"}) : json::object()}};
    }
    rows.push_back(std::move(row));
  }
  return json{{"kind", "Table"},
              {"apiVersion", "meta.k8s.io/v1"},
              {"metadata", list_metadata.is_object() ? list_metadata : json::object()},
              {"columnDefinitions", ColumnsJson(r)},
              {"rows", rows}};
}

// Keys in nlohmann's (sorted) order, so the text is what dumping the whole Table would give.
void TableOpen(std::string& out, const ResourceInfo& r, const json& list_metadata) {
  out += "{\"apiVersion\":\"meta.k8s.io/v1\",\"columnDefinitions\":";
  AppendWireJson(out, ColumnsJson(r));
  out += ",\"kind\":\"Table\",\"metadata\":";
  AppendWireJson(out, list_metadata.is_object() ? list_metadata : json::object());
  out += ",\"rows\":[";
}

namespace {
// A row as TableRow and TableRowFromText write it: its cells, then `object` (the object's text,
// kObject) or a PartialObjectMetadata of `object` (its metadata's text, kMetadata), which the
// caller appends between OpenRow and CloseRow, straight into `out`.
void OpenRow(std::string& out, const json& cells, IncludeObject include, bool first) {
  if (!first) out += ',';
  out += "{\"cells\":";
  AppendWireJson(out, cells);
  if (include == IncludeObject::kObject) {
    out += ",\"object\":";
  } else if (include == IncludeObject::kMetadata) {
    out +=
        ",\"object\":{\"apiVersion\":\"meta.k8s.io/"
        "v1\",\"kind\":\"PartialObjectMetadata\",\"metadata\":";
  }
}

void CloseRow(std::string& out, IncludeObject include) {
  if (include == IncludeObject::kMetadata) out += '}';
  out += '}';
}
}  // namespace

void TableRow(std::string& out, const ResourceInfo& r, const json& o, Millis now,
              IncludeObject include, bool first) {
  OpenRow(out, CellsOf(r, o, now), include, first);
  if (include == IncludeObject::kObject) {
    AppendWireJson(out, o);
  } else if (include == IncludeObject::kMetadata) {
    const json& m = MemberAt(o, {"metadata"});
    AppendWireJson(out, m.is_object() ? m : json::object());
  }
  CloseRow(out, include);
}

void TableClose(std::string& out) { out += "]}"; }

bool TableRowFromText(std::string& out, const ResourceInfo& r, std::string_view text, Millis now,
                      IncludeObject include, bool first) {
  const TablePrinter& printer = PrinterOf(r);
  json part;
  if (!printer.reads) {  // the whole object parsed: its row as from its tree
    part = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (part.is_discarded() || !part.is_object()) return false;
    TableRow(out, r, part, now, include, first);
    return true;
  }
  json_sparse::RawMember metadata{"metadata", {}, false};
  if (!json_sparse::Parse(text, *printer.reads, part, &metadata) || !part.is_object()) return false;
  OpenRow(out, printer.cells(part, now), include, first);
  if (include == IncludeObject::kObject)
    out += text;
  else if (include == IncludeObject::kMetadata)  // as TableRow: a metadata not an object is {}
    out += metadata.found && metadata.text.starts_with('{') ? metadata.text : "{}";
  CloseRow(out, include);
  return true;
}

json MakeTable(const ResourceInfo& r, const std::vector<json>& objects, Millis now,
               IncludeObject include, const json& list_metadata) {
  std::vector<const json*> ptrs;
  ptrs.reserve(objects.size());
  for (const auto& o : objects) ptrs.push_back(&o);
  return MakeTable(r, ptrs, now, include, list_metadata);
}

std::string HumanDuration(Millis d) {
  const int64_t seconds = d / 1000;
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace arbiter::kube
