#include "adapters/yaml/manifest_loader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "adapters/io/input_file.h"
#include "adapters/yaml/fast_objects.h"
#include "adapters/yaml/fast_yaml.h"
#include "adapters/yaml/go_field_types.h"
#include "adapters/yaml/manifest_rules.h"
#include "adapters/yaml/node_constraints_loader.h"
#include "adapters/yaml/pod_topology_loader.h"
#include "adapters/yaml/yaml_reader.h"
#include "core/api_kinds.h"
#include "core/int128.h"
#include "core/policy_names.h"
#include "core/quantity.h"
#include "core/resources.h"
#include "core/text.h"

namespace arbiter::yaml {

namespace {

using Field = DocReader::Field;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

std::string Quote(std::string_view s) { return QuotedEcho(s, 256); }

// The kinds a manifest may hold: the one kinds table (core/api_kinds.h) less the served-only ones.
struct KindInfo {
  const char* kind;
  std::string api_version;
  bool namespaced;
};

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kKinds = [] {
    std::vector<KindInfo> v;
    for (const ApiKind& k : ApiKinds())
      if (k.in_manifests) v.push_back({k.kind, k.ApiVersion(), k.namespaced});
    return v;
  }();
  return kKinds;
}

// "supported: v1 LimitRange, Namespace, ..., List; policy/v1 PodDisruptionBudget; ...".
std::string SupportedKindsText() {
  static const std::string kText = [] {
    std::string text = "supported:";
    std::string group;
    for (const KindInfo& k : Kinds()) {
      if (k.api_version != group) {
        if (group == "v1") text += ", List";
        text += std::string(group.empty() ? " " : "; ") + k.api_version + " " + k.kind;
        group = k.api_version;
      } else {
        text += std::string(", ") + k.kind;
      }
    }
    if (group == "v1") text += ", List";
    return text;
  }();
  return kText;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return r;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

// Percentages and counts: minAvailable / maxUnavailable.
std::optional<IntOrPercent> ReadIntOrPercent(DocReader& r, const YAML::Node& n,
                                             const std::string& p) {
  auto t = r.Text(n, p);
  if (!t) return std::nullopt;
  if (!IsQuotedScalar(n) && ResolvePlain(*t) == PlainType::kInt) {
    auto v = r.Int(n, p, 0, kInt32Max);
    if (!v) return std::nullopt;
    return IntOrPercent{false, static_cast<int32_t>(*v)};
  }
  std::string_view s = *t;
  if (s.size() >= 2 && s.back() == '%') {
    std::string_view digits = s.substr(0, s.size() - 1);
    if (digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return IntOrPercent{true, static_cast<int32_t>(std::stoi(std::string(digits)))};
  }
  r.Error(n, p, "expected a non-negative integer (2) or a percentage (\"50%\"), got " + Quote(*t));
  return std::nullopt;
}

// ------------------------------------------------------------------ per-document loading

class DocLoader {
 public:
  DocLoader(DocReader& r, ManifestLoad* out) : r_(r), out_(out) {}

  // Metadata: fills meta, remembers annotation nodes for Pods.
  Field MetaField(ObjectMeta* meta, bool namespaced) {
    return {"metadata", [this, meta, namespaced](const YAML::Node& n, const std::string& p) {
              meta_node_ = n;
              std::vector<Field> fields = {
                  {"name",
                   [this, meta](const YAML::Node& v, const std::string& fp) {
                     name_present_ = true;
                     if (auto s = r_.String(v, fp)) {
                       meta->name = *s;
                       if (!IsDns1123Subdomain(*s))
                         r_.Error(v, fp,
                                  "invalid name " + Quote(*s) +
                                      ": lower-case letters, digits, '-' and '.', starting and "
                                      "ending with a letter or digit");
                     }
                   }},
                  {"namespace",
                   [this, meta, namespaced](const YAML::Node& v, const std::string& fp) {
                     auto s = r_.String(v, fp);
                     if (!s) return;
                     if (!IsDns1123Label(*s)) {
                       r_.Error(v, fp,
                                "invalid namespace " + Quote(*s) +
                                    ": lower-case letters, digits and '-', at most 63");
                       return;
                     }
                     if (namespaced) {
                       meta->namespace_ = *s;
                     } else {
                       r_.Warn(v, fp, "this kind is cluster-scoped; the namespace is ignored");
                     }
                   }},
                  {"labels",
                   [this, meta](const YAML::Node& v, const std::string& fp) {
                     meta->labels = r_.StringMap(v, fp, true);
                     CheckLabels(v, fp, meta->labels);
                   }},
                  {"annotations",
                   [this, meta](const YAML::Node& v, const std::string& fp) {
                     r_.ForEachEntry(v, fp,
                                     [&](const std::string& k, const YAML::Node&,
                                         const YAML::Node& val, const std::string& ap) {
                                       if (val.IsNull()) {
                                         meta->annotations[k] = "";
                                         return;
                                       }
                                       if (auto s = r_.String(val, ap)) {
                                         meta->annotations[k] = *s;
                                         annotation_nodes_.emplace_back(k, val);
                                       }
                                     });
                   }},
              };
              r_.ReadStruct(n, p, fields, kIgnoredMetaFields);
            }};
  }

  void CheckLabels(const YAML::Node& n, const std::string& p,
                   const std::map<std::string, std::string>& labels) {
    for (const auto& [k, v] : labels) {
      std::string lp = ChildPath(p, k);
      if (!IsLabelKey(k))
        r_.ErrorAtLine(0, lp, "invalid label key " + Quote(k));
      else if (!IsLabelValue(v))
        r_.ErrorAtLine(0, lp,
                       "invalid label value " + Quote(v) +
                           ": at most 63 letters, digits, '-', '_' or '.', starting and ending "
                           "with a letter or digit");
    }
    (void)n;
  }

  Field Ignore(std::string_view name) {
    return {name, [](const YAML::Node&, const std::string&) {}};
  }

  // Checks that required metadata is present; applies the namespace default.
  void FinishMeta(ObjectMeta* meta, bool namespaced) {
    if (meta->name.empty() && !name_present_) {
      int line = meta_node_.IsDefined() && !meta_node_.IsNull() ? NodeLine(meta_node_) : 0;
      r_.ErrorAtLine(line, "metadata.name", "is required");
    }
    if (namespaced && meta->namespace_.empty()) meta->namespace_ = "default";
    meta->source = r_.source();
  }

  std::vector<Field> Top(ObjectMeta* meta, bool namespaced) {
    return {Ignore("apiVersion"), Ignore("kind"), MetaField(meta, namespaced)};
  }

  // ---------------------------------------------------------------- Kubernetes kinds

  void LoadNamespace(const YAML::Node& doc) {
    Namespace ns;
    auto fields = Top(&ns.meta, false);
    r_.ReadStruct(doc, "", fields, {"spec", "status"});
    FinishMeta(&ns.meta, false);
    if (!ns.meta.name.empty() && !IsDns1123Label(ns.meta.name))
      r_.ErrorAtLine(0, "metadata.name",
                     "a namespace name must be a DNS label (lower-case letters, digits and '-', "
                     "at most 63)");
    out_->set.namespaces.push_back(std::move(ns));
  }

  void LoadNode(const YAML::Node& doc) {
    Node node;
    bool has_allocatable = false;
    auto fields = Top(&node.meta, false);
    fields.push_back({"spec", [&](const YAML::Node& n, const std::string& p) {
                        r_.ReadStruct(n, p,
                                      {{"unschedulable",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          if (auto b = r_.Bool(v, fp)) node.unschedulable = *b;
                                        }},
                                       {"taints",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          ReadTaints(r_, v, fp, &node.taints);
                                        }}},
                                      kIgnoredNodeSpecFields);
                      }});
    fields.push_back({"status", [&](const YAML::Node& n, const std::string& p) {
                        r_.ReadStruct(n, p,
                                      {{"capacity",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          node.capacity = r_.Resources(v, fp);
                                        }},
                                       {"allocatable",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          has_allocatable = true;
                                          node.allocatable = r_.Resources(v, fp);
                                        }}},
                                      kIgnoredNodeStatusFields);
                      }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&node.meta, false);
    ReadNodeSimAnnotations(&node);
    // allocatable defaults to capacity; resources listed only in capacity are allocatable in full.
    if (!has_allocatable) {
      node.allocatable = node.capacity;
    } else {
      for (const auto& [k, v] : node.capacity.entries())
        if (!node.allocatable.Has(k)) node.allocatable.Set(k, v);
    }
    out_->set.nodes.push_back(std::move(node));
  }

  Container ReadContainer(const YAML::Node& n, const std::string& p, bool init) {
    Container c;
    std::vector<std::string_view> ignored = kIgnoredContainerFields;
    std::vector<std::string_view> warn;
    if (init) {
      warn.push_back("restartPolicy");  // sidecars change the effective-request rule
    } else {
      ignored.push_back("restartPolicy");
    }
    bool named = false;
    r_.ReadStruct(
        n, p,
        {{"name",
          [&](const YAML::Node& v, const std::string& fp) {
            if (auto s = r_.String(v, fp)) {
              c.name = *s;
              named = true;
              if (!IsDns1123Label(*s))
                r_.Error(v, fp, "invalid container name " + Quote(*s) + " (must be a DNS label)");
            }
          }},
         {"resources",
          [&](const YAML::Node& v, const std::string& fp) {
            r_.ReadStruct(
                v, fp,
                {{"requests", [&](const YAML::Node& rv,
                                  const std::string& rp) { c.requests = r_.Resources(rv, rp); }},
                 {"limits", [&](const YAML::Node& lv,
                                const std::string& lp) { c.limits = r_.Resources(lv, lp); }}},
                {"claims"});
          }}},
        ignored, warn);
    if (!named && n.IsMap()) r_.Error(n, ChildPath(p, "name"), "is required");
    // Kubernetes defaulting: a resource with a limit and no request requests its limit.
    for (const auto& [k, v] : c.limits.entries())
      if (!c.requests.Has(k)) c.requests.Set(k, v);
    // Arbiter: extended resources (GPUs, MIG) cannot be overcommitted; a request without a
    // limit gets limit = request.
    for (const auto& [k, v] : c.requests.entries()) {
      auto info = ClassifyResource(k);
      if (info.ok() &&
          (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
           info->kind == ResourceKind::kExtended) &&
          !c.limits.Has(k))
        c.limits.Set(k, v);
    }
    return c;
  }

  // Node simulation annotations: when the node joins and leaves the pool on the virtual clock.
  void ReadNodeSimAnnotations(Node* node) {
    static const std::vector<std::string> kKnown = {"arbiter.dev/add-time",
                                                    "arbiter.dev/remove-time"};
    YAML::Node remove_node;
    for (const auto& [key, n] : annotation_nodes_) {
      if (!StartsWith(key, "arbiter.dev/")) continue;
      std::string p = ChildPath("metadata.annotations", key);
      if (key == "arbiter.dev/add-time") {
        if (auto d = r_.Duration(n, p)) node->sim.add_time = *d;
      } else if (key == "arbiter.dev/remove-time") {
        if (auto d = r_.Duration(n, p)) {
          node->sim.remove_time = *d;
          remove_node = n;
        }
      } else {
        std::string msg = "unknown Arbiter annotation " + Quote(key) + " on a Node";
        if (auto s = DidYouMean(key, kKnown))
          msg += "; did you mean " + Quote(*s) + "?";
        else
          msg += " (known: arbiter.dev/add-time, arbiter.dev/remove-time)";
        r_.Error(n, p, msg);
      }
    }
    if (node->sim.remove_time && *node->sim.remove_time <= node->sim.add_time) {
      r_.Error(remove_node, ChildPath("metadata.annotations", "arbiter.dev/remove-time"),
               "remove-time " + FormatDuration(*node->sim.remove_time) +
                   " must be after add-time " + FormatDuration(node->sim.add_time) +
                   " (a node leaves the pool after it joins)");
      node->sim.remove_time.reset();
    }
  }

  void ReadSimAnnotations(Pod* pod) {
    for (const auto& [key, node] : annotation_nodes_) {
      if (!StartsWith(key, "arbiter.dev/")) continue;
      std::string p = ChildPath("metadata.annotations", key);
      const std::string& text = pod->meta.annotations[key];
      if (key == "arbiter.dev/submit-time") {
        if (auto d = r_.Duration(node, p)) pod->sim.submit_time = *d;
      } else if (key == "arbiter.dev/duration") {
        if (auto d = r_.Duration(node, p)) pod->sim.duration = *d;
      } else if (key == "arbiter.dev/shutdown-time") {
        if (auto d = r_.Duration(node, p)) pod->sim.shutdown_time = *d;
      } else if (key == "arbiter.dev/checkpoint-interval") {
        if (auto d = r_.Duration(node, p)) {
          if (*d == 0)
            r_.Error(node, p, "checkpoint interval must be positive (omit it for no checkpoints)");
          else
            pod->sim.checkpoint_interval = *d;
        }
      } else if (key == "arbiter.dev/preempt-mode") {
        const std::string l = Lower(Trim(text));
        std::string allowed;
        for (const auto& e : PreemptModeNames()) {  // any case
          if (l == e.key) pod->sim.preempt_mode = e.value;
          allowed += (allowed.empty() ? "" : " | ") + std::string(e.manifest);
        }
        if (!pod->sim.preempt_mode)
          r_.Error(node, p, "unknown preempt mode " + Quote(text) + " (allowed: " + allowed + ")");
      } else if (key == "arbiter.dev/exit-code") {
        const std::string t = Trim(text);
        int32_t code = -1;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), code);
        if (ec != std::errc() || end != t.data() + t.size() || code < 0 || code > 255)
          r_.Error(node, p, "exit code must be an integer from 0 to 255, got " + Quote(text));
        else
          pod->sim.exit_code = code;
      } else if (key == "arbiter.dev/requeue-on-preempt") {
        const std::string l = Lower(Trim(text));
        if (l == "true")
          pod->sim.requeue_on_preempt = true;
        else if (l != "false")
          r_.Error(node, p, "expected \"true\" or \"false\", got " + Quote(text));
      } else if (key == "arbiter.dev/qos") {
        if (text.empty())
          r_.Error(node, p, "QoS name is empty");
        else
          pod->sim.qos = text;
      } else if (key == "arbiter.dev/usage") {
        if (auto usage = UsageAnnotation(text, node, p)) pod->sim.usage = *usage;
      } else {
        UnknownPodAnnotation(key, node, p);
      }
    }
  }

  // arbiter.dev/usage: "cpu=4,memory=8Gi,nvidia.com/gpu=1"; nullopt (with an error) when wrong.
  std::optional<ResourceList> UsageAnnotation(const std::string& text, const YAML::Node& node,
                                              const std::string& p) {
    ResourceList usage;
    if (Trim(text).empty()) {
      r_.Error(node, p, "usage is empty (expected e.g. cpu=4,memory=8Gi,nvidia.com/gpu=1)");
      return std::nullopt;
    }
    std::string_view rest = text;
    while (true) {
      size_t comma = rest.find(',');
      std::string item = Trim(rest.substr(0, comma));
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        r_.Error(node, p,
                 "usage item " + Quote(item) +
                     " is not resource=quantity (expected e.g. cpu=4,memory=8Gi)");
        return std::nullopt;
      }
      std::string name = Trim(std::string_view(item).substr(0, eq));
      std::string qty = Trim(std::string_view(item).substr(eq + 1));
      auto info = ClassifyResource(name);
      if (!info.ok()) {
        r_.Error(node, p, info.message());
        return std::nullopt;
      }
      if (usage.Has(name)) {
        r_.Error(node, p, "usage names " + Quote(name) + " twice");
        return std::nullopt;
      }
      auto v = ParseResourceQuantity(name, qty);
      if (!v.ok()) {
        r_.Error(node, p, v.message());
        return std::nullopt;
      }
      usage.Set(name, *v);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    return usage;
  }

  void UnknownPodAnnotation(const std::string& key, const YAML::Node& node, const std::string& p) {
    static const std::vector<std::string> kKnown = {
        "arbiter.dev/submit-time",   "arbiter.dev/duration",
        "arbiter.dev/usage",         "arbiter.dev/checkpoint-interval",
        "arbiter.dev/shutdown-time", "arbiter.dev/preempt-mode",
        "arbiter.dev/qos",           "arbiter.dev/requeue-on-preempt",
        "arbiter.dev/exit-code"};
    std::string msg = "unknown Arbiter annotation " + Quote(key);
    if (auto s = DidYouMean(key, kKnown))
      msg += "; did you mean " + Quote(*s) + "?";
    else {
      msg += " (known: ";
      for (size_t i = 0; i < kKnown.size(); ++i) msg += (i ? ", " : "") + kKnown[i];
      msg += ")";
    }
    r_.Error(node, p, msg);
  }

  void LoadPod(const YAML::Node& doc) {
    Pod pod;
    std::map<size_t, std::vector<std::string>> match_label_keys;  // by spread constraint
    auto fields = Top(&pod.meta, true);
    fields.push_back({"spec", [&](const YAML::Node& n, const std::string& p) {
                        ReadPodSpec(n, p, &pod, &match_label_keys);
                      }});
    fields.push_back(Ignore("status"));
    bool has_spec = false;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const YAML::Node key = it->first;
      if (key.IsScalar() && key.Scalar() == "spec") has_spec = true;
    }
    // The JSON types of the fields read nowhere else (image, args, env, ...): kube's decoder
    // refuses a Pod whose field has another (go_field_types.h).
    CheckPodGoTypes(doc, [this](const YAML::Node& at, const GoTypeProblem& problem) {
      r_.Error(at, problem.path,
               "has the wrong type; kube-apiserver refuses it: " + problem.message);
    });
    r_.ReadStruct(doc, "", fields);
    if (!has_spec) r_.Error(doc, "spec", "is required (a Pod needs spec.containers)");
    FinishMeta(&pod.meta, true);
    ApplyMatchLabelKeys(match_label_keys, &pod);
    ReadSimAnnotations(&pod);
    // Arbiter's own annotations now live in pod.sim; dropping their text keeps a million-pod
    // manifest's memory down.
    for (auto it = pod.meta.annotations.begin(); it != pod.meta.annotations.end();)
      it = StartsWith(it->first, "arbiter.dev/") ? pod.meta.annotations.erase(it) : std::next(it);
    CheckContainerNames(pod);
    out_->set.pods.push_back(std::move(pod));
  }

  void ReadPodSpec(const YAML::Node& n, const std::string& p, Pod* pod,
                   std::map<size_t, std::vector<std::string>>* match_label_keys) {
    bool has_containers = false;
    std::vector<Field> spec = {
        {"containers",
         [&](const YAML::Node& v, const std::string& fp) {
           has_containers = true;
           r_.ForEachItem(v, fp, [&](const YAML::Node& c, const std::string& cp) {
             pod->containers.push_back(ReadContainer(c, cp, false));
           });
         }},
        {"initContainers",
         [&](const YAML::Node& v, const std::string& fp) {
           r_.ForEachItem(v, fp, [&](const YAML::Node& c, const std::string& cp) {
             pod->init_containers.push_back(ReadContainer(c, cp, true));
           });
         }},
        {"priorityClassName",
         [&](const YAML::Node& v, const std::string& fp) {
           if (auto s = r_.String(v, fp)) pod->priority_class_name = *s;
         }},
        {"priority",
         [&](const YAML::Node& v, const std::string& fp) {
           if (auto i = r_.Int(v, fp, kInt32Min, kInt32Max))
             pod->priority = static_cast<int32_t>(*i);
         }},
        {"preemptionPolicy",
         [&](const YAML::Node& v, const std::string& fp) {
           if (auto e = r_.Enum(v, fp, {"PreemptLowerPriority", "Never"}))
             pod->preemption_policy =
                 *e == 0 ? PreemptionPolicy::kPreemptLowerPriority : PreemptionPolicy::kNever;
         }},
        {"terminationGracePeriodSeconds",
         [&](const YAML::Node& v, const std::string& fp) {
           if (auto i = r_.Int(v, fp, 0, std::numeric_limits<int64_t>::max() / 1000))
             pod->termination_grace_period = *i * 1000;
         }},
        {"nodeSelector",
         [&](const YAML::Node& v, const std::string& fp) {
           pod->node_selector = r_.StringMap(v, fp, true);
         }},
        {"tolerations",
         [&](const YAML::Node& v, const std::string& fp) {
           ReadTolerations(r_, v, fp, &pod->tolerations);
         }},
        {"affinity",
         [&](const YAML::Node& v, const std::string& fp) { ReadAffinity(r_, v, fp, pod); }},
        {"topologySpreadConstraints",
         [&](const YAML::Node& v, const std::string& fp) {
           ReadTopologySpread(r_, v, fp, &pod->topology_spread, match_label_keys);
         }},
        {"overhead",
         [&](const YAML::Node& v, const std::string& fp) { pod->overhead = r_.Resources(v, fp); }},
        {"activeDeadlineSeconds",
         [&](const YAML::Node& v, const std::string& fp) {
           // Kubernetes: a positive integer.
           if (auto i = r_.Int(v, fp, 1, std::numeric_limits<int64_t>::max() / 1000))
             pod->active_deadline = *i * 1000;
         }},
    };
    r_.ReadStruct(n, p, spec, kIgnoredPodSpecFields, kWarnedPodSpecFields);
    if (!has_containers && n.IsMap())
      r_.Error(n, ChildPath(p, "containers"), "is required (at least one container)");
  }

  // Container names are unique across containers and init containers.
  void CheckContainerNames(const Pod& pod) {
    std::set<std::string> names;
    auto check = [&](const std::vector<Container>& cs, const char* field) {
      for (size_t i = 0; i < cs.size(); ++i)
        if (!cs[i].name.empty() && !names.insert(cs[i].name).second)
          r_.ErrorAtLine(0, IndexPath(std::string("spec.") + field, i) + ".name",
                         "duplicate container name " + Quote(cs[i].name));
    };
    check(pod.containers, "containers");
    check(pod.init_containers, "initContainers");
  }

  void ReadQuotaHard(ResourceQuota* q, const YAML::Node& n, const std::string& p) {
    static const std::vector<std::string> kObjectCounts = {"services",
                                                           "secrets",
                                                           "configmaps",
                                                           "persistentvolumeclaims",
                                                           "replicationcontrollers",
                                                           "resourcequotas",
                                                           "services.loadbalancers",
                                                           "services.nodeports"};
    r_.ForEachEntry(
        n, p,
        [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& v,
            const std::string& kp) {
          QuotaItem item;
          item.key = key;
          std::string resource;
          if (key == "pods" || key == "count/pods") {
            item.track = QuotaTrack::kCount;
            resource = "pods";
          } else if (StartsWith(key, "count/") ||
                     std::find(kObjectCounts.begin(), kObjectCounts.end(), key) !=
                         kObjectCounts.end()) {
            r_.Warn(key_node, kp,
                    "object-count quotas other than pods are not modelled by Arbiter; ignored");
            return;
          } else if (key == "requests.storage" ||
                     key.find(".storageclass.storage.k8s.io/") != std::string::npos) {
            r_.Warn(key_node, kp,
                    "persistent volume storage quotas are not modelled by Arbiter; ignored");
            return;
          } else if (StartsWith(key, "requests.")) {
            item.track = QuotaTrack::kRequests;
            resource = key.substr(9);
          } else if (StartsWith(key, "limits.")) {
            item.track = QuotaTrack::kLimits;
            resource = key.substr(7);
          } else {
            item.track = QuotaTrack::kRequests;  // bare `cpu`, `memory`, extended names = requests
            resource = key;
          }
          auto info = ClassifyResource(resource);
          bool bare_ok =
              item.track != QuotaTrack::kRequests || StartsWith(key, "requests.") ||
              (info.ok() &&
               (info->kind == ResourceKind::kCpu || info->kind == ResourceKind::kMemory ||
                info->kind == ResourceKind::kStorage || info->kind == ResourceKind::kHugePages ||
                resource.find('/') != std::string::npos));
          if (!info.ok() || !bare_ok) {
            std::string msg = "unknown quota key " + Quote(key);
            if (auto s = DidYouMean(
                    key, {"requests.cpu", "requests.memory", "requests.nvidia.com/gpu",
                          "requests.ephemeral-storage", "limits.cpu", "limits.memory",
                          "limits.ephemeral-storage", "cpu", "memory", "pods", "count/pods"}))
              msg += "; did you mean " + Quote(*s) + "?";
            else
              msg +=
                  " (expected requests.<resource>, limits.<resource>, cpu, memory, pods, "
                  "count/pods "
                  "or an extended resource such as nvidia.com/gpu)";
            r_.Error(key_node, kp, msg);
            return;
          }
          item.resource = resource;
          if (item.track == QuotaTrack::kLimits &&
              (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
               info->kind == ResourceKind::kExtended))
            r_.Warn(key_node, kp,
                    "Kubernetes refuses limits. quotas on extended resources; accepted because GPU "
                    "limits always equal requests (this caps " +
                        resource + " requests too)");
          if (auto h = r_.Quantity(resource, v, kp)) {
            item.hard = *h;
            q->hard.push_back(item);
          }
        });
  }

  // In / NotIn need values; Exists / DoesNotExist must have none (selectors and scopes alike).
  void CheckOperatorValues(const YAML::Node& e, const std::string& path, SelectorOperator op,
                           const std::vector<std::string>& values) {
    bool needs_values = op == SelectorOperator::kIn || op == SelectorOperator::kNotIn;
    if (needs_values && values.empty())
      r_.Error(e, ChildPath(path, "values"), "must not be empty for operator In / NotIn");
    else if (!needs_values && !values.empty())
      r_.Error(e, ChildPath(path, "values"), "must be empty for operator Exists / DoesNotExist");
  }

  std::optional<SelectorOperator> ReadOperator(const YAML::Node& v, const std::string& p) {
    if (auto e = r_.Enum(v, p, {"In", "NotIn", "Exists", "DoesNotExist"}))
      return static_cast<SelectorOperator>(*e);
    return std::nullopt;
  }

  // ResourceQuota scopes and scope selector operators, in Kubernetes' order.
  static const std::vector<std::string>& QuotaScopes() {
    static const std::vector<std::string> k = {"PriorityClass",  "Terminating",
                                               "NotTerminating", "BestEffort",
                                               "NotBestEffort",  "CrossNamespacePodAffinity"};
    return k;
  }
  // One of `allowed` exactly (its index); else kube-apiserver's "Invalid value" with `what`.
  std::optional<size_t> OneOf(const YAML::Node& v, const std::string& path,
                              const std::vector<std::string>& allowed, const char* what) {
    auto t = r_.Text(v, path);
    if (!t) return std::nullopt;
    for (size_t i = 0; i < allowed.size(); ++i)
      if (allowed[i] == *t) return i;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    r_.Error(v, path, "invalid value " + Quote(*t) + ": " + what + " (" + list + ")");
    return std::nullopt;
  }

  // One spec.scopeSelector.matchExpressions[] item, with kube-apiserver's messages
  // (validateScopedResourceSelectorRequirement): an unknown scope or operator, values that do
  // not fit the operator, and an operator other than Exists on a scope other than PriorityClass.
  void ReadScopeRequirement(const YAML::Node& e, const std::string& ep, ResourceQuota* q) {
    const std::vector<std::string>& scopes = QuotaScopes();
    static const std::vector<std::string> kOps = {"In", "NotIn", "Exists", "DoesNotExist"};
    ScopeRequirement req;
    bool seen_scope = false, seen_op = false, bad = false;
    r_.ReadStruct(e, ep,
                  {{"scopeName",
                    [&](const YAML::Node& sv, const std::string& sp) {
                      seen_scope = true;
                      auto s = OneOf(sv, sp, scopes, "unsupported scope");
                      if (!s) {
                        bad = true;
                        return;
                      }
                      req.scope_name = scopes[*s];
                    }},
                   {"operator",
                    [&](const YAML::Node& ov, const std::string& op) {
                      seen_op = true;
                      auto o = OneOf(ov, op, kOps, "not a valid selector operator");
                      if (o)
                        req.op = static_cast<SelectorOperator>(*o);
                      else
                        bad = true;
                    }},
                   {"values", [&](const YAML::Node& vv, const std::string& vp) {
                      req.values = r_.StringList(vv, vp);
                    }}});
    if (!e.IsMap()) return;
    if (!seen_scope) r_.Error(e, ChildPath(ep, "scopeName"), "Required value");
    if (!seen_op) r_.Error(e, ChildPath(ep, "operator"), "Required value");
    if (bad || !seen_scope || !seen_op) return;
    const bool needs_values = req.op == SelectorOperator::kIn || req.op == SelectorOperator::kNotIn;
    if (needs_values && req.values.empty()) {
      r_.Error(e, ChildPath(ep, "values"),
               "Required value: must be at least one value when `operator` is 'In' or 'NotIn' "
               "for scope selector");
      return;
    }
    if (!needs_values && !req.values.empty()) {
      r_.Error(e, ChildPath(ep, "values"),
               "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope "
               "selector");
      return;
    }
    // Only PriorityClass takes In / NotIn / DoesNotExist; the pod-property scopes are Exists.
    if (req.scope_name != "PriorityClass" && req.op != SelectorOperator::kExists) {
      r_.Error(
          e, ChildPath(ep, "operator"),
          "invalid value " + Quote(kOps[static_cast<size_t>(req.op)]) +
              ": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
              "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
              "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity");
      return;
    }
    q->scope_selector.push_back(std::move(req));
  }

  void LoadResourceQuota(const YAML::Node& doc) {
    ResourceQuota q;
    auto fields = Top(&q.meta, true);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(
               n, p,
               {{"hard",
                 [&](const YAML::Node& v, const std::string& fp) { ReadQuotaHard(&q, v, fp); }},
                {"scopes",
                 [&](const YAML::Node& v, const std::string& fp) {
                   r_.ForEachItem(v, fp, [&](const YAML::Node& s, const std::string& sp) {
                     auto e = OneOf(s, sp, QuotaScopes(), "unsupported scope");
                     if (!e) return;
                     q.scope_selector.push_back({s.Scalar(), SelectorOperator::kExists, {}});
                   });
                 }},
                {"scopeSelector", [&](const YAML::Node& v, const std::string& fp) {
                   r_.ReadStruct(
                       v, fp,
                       {{"matchExpressions", [&](const YAML::Node& me, const std::string& mp) {
                           r_.ForEachItem(me, mp, [&](const YAML::Node& e, const std::string& ep) {
                             ReadScopeRequirement(e, ep, &q);
                           });
                         }}});
                 }}});
         }});
    fields.push_back(Ignore("status"));
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&q.meta, true);
    out_->set.resource_quotas.push_back(std::move(q));
  }

  void LoadLimitRange(const YAML::Node& doc) {
    LimitRange lr;
    auto fields = Top(&lr.meta, true);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(n, p, {{"limits", [&](const YAML::Node& v, const std::string& fp) {
                                   r_.ForEachItem(
                                       v, fp, [&](const YAML::Node& item, const std::string& ip) {
                                         ReadLimitRangeItem(item, ip, &lr);
                                       });
                                 }}});
         }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&lr.meta, true);
    out_->set.limit_ranges.push_back(std::move(lr));
  }

  // One item of spec.limits, added to lr->limits unless it is wrong or a PersistentVolumeClaim's.
  void ReadLimitRangeItem(const YAML::Node& item, const std::string& ip, LimitRange* lr) {
    LimitRangeItem li;
    bool has_type = false, pvc = false;
    YAML::Node default_node, default_request_node;
    bool has_default = false, has_default_request = false;
    r_.ReadStruct(
        item, ip,
        {{"type",
          [&](const YAML::Node& t, const std::string& tp) {
            if (auto e = r_.Enum(t, tp, {"Container", "Pod", "PersistentVolumeClaim"})) {
              has_type = true;
              if (*e == 2) {
                pvc = true;
                r_.Warn(t, tp, "PersistentVolumeClaim limits are not modelled by Arbiter; ignored");
              }
              li.type = *e == 1 ? LimitType::kPod : LimitType::kContainer;
            }
          }},
         {"min", [&](const YAML::Node& x, const std::string& xp) { li.min = r_.Resources(x, xp); }},
         {"max", [&](const YAML::Node& x, const std::string& xp) { li.max = r_.Resources(x, xp); }},
         {"default",
          [&](const YAML::Node& x, const std::string& xp) {
            default_node = x;
            has_default = true;
            li.default_limit = r_.Resources(x, xp);
          }},
         {"defaultRequest",
          [&](const YAML::Node& x, const std::string& xp) {
            default_request_node = x;
            has_default_request = true;
            li.default_request = r_.Resources(x, xp);
          }},
         {"maxLimitRequestRatio",
          [&](const YAML::Node& x, const std::string& xp) { MaxLimitRequestRatio(x, xp, &li); }}});
    if (!item.IsMap()) return;
    if (!has_type) {
      r_.Error(item, ChildPath(ip, "type"), "is required (Container or Pod)");
      return;
    }
    if (pvc) return;
    if (li.type == LimitType::kPod) {
      if (has_default)
        r_.Error(default_node, ChildPath(ip, "default"), "may not be set when type is Pod");
      if (has_default_request)
        r_.Error(default_request_node, ChildPath(ip, "defaultRequest"),
                 "may not be set when type is Pod");
    }
    lr->limits.push_back(std::move(li));
  }

  // maxLimitRequestRatio: a ratio of at least 1 per resource.
  void MaxLimitRequestRatio(const YAML::Node& x, const std::string& xp, LimitRangeItem* li) {
    r_.ForEachEntry(x, xp,
                    [&](const std::string& k, const YAML::Node& kn, const YAML::Node& val,
                        const std::string& rp) {
                      auto info = ClassifyResource(k);
                      if (!info.ok()) {
                        r_.Error(kn, rp, info.message());
                        return;
                      }
                      auto t = r_.Text(val, rp);
                      if (!t) return;
                      auto ratio = ParseScaledQuantity(*t, 3);
                      if (!ratio.ok()) {
                        r_.Error(val, rp, "ratio " + Quote(*t) + ": " + ratio.message());
                        return;
                      }
                      if (*ratio < 1000) {
                        r_.Error(val, rp, "ratio " + Quote(*t) + " must be at least 1");
                        return;
                      }
                      li->max_limit_request_ratio_milli.Set(k, *ratio);
                    });
  }

  void LoadPriorityClass(const YAML::Node& doc) {
    PriorityClass pc;
    bool has_value = false;
    auto fields = Top(&pc.meta, false);
    fields.push_back({"value", [&](const YAML::Node& v, const std::string& p) {
                        has_value = true;
                        if (auto i = r_.Int(v, p, kInt32Min, kInt32Max)) {
                          pc.value = static_cast<int32_t>(*i);
                          if (*i > 1000000000)
                            r_.Error(v, p,
                                     "user-defined priorities are at most 1000000000 (higher "
                                     "values are reserved for system-* classes)");
                        }
                      }});
    fields.push_back({"globalDefault", [&](const YAML::Node& v, const std::string& p) {
                        if (auto b = r_.Bool(v, p)) pc.global_default = *b;
                      }});
    fields.push_back({"preemptionPolicy", [&](const YAML::Node& v, const std::string& p) {
                        if (auto e = r_.Enum(v, p, {"PreemptLowerPriority", "Never"}))
                          pc.preemption_policy = *e == 0 ? PreemptionPolicy::kPreemptLowerPriority
                                                         : PreemptionPolicy::kNever;
                      }});
    fields.push_back({"description", [&](const YAML::Node& v, const std::string& p) {
                        if (auto s = r_.String(v, p)) pc.description = *s;
                      }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&pc.meta, false);
    if (!has_value) r_.Error(doc, "value", "is required");
    if (StartsWith(pc.meta.name, "system-"))
      r_.ErrorAtLine(0, "metadata.name", "names starting with system- are reserved by Kubernetes");
    out_->set.priority_classes.push_back(std::move(pc));
  }

  void LoadPdb(const YAML::Node& doc) {
    PodDisruptionBudget pdb;
    auto fields = Top(&pdb.meta, true);
    bool has_selector = false;
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(
               n, p,
               {{"minAvailable",
                 [&](const YAML::Node& v, const std::string& fp) {
                   pdb.min_available = ReadIntOrPercent(r_, v, fp);
                 }},
                {"maxUnavailable",
                 [&](const YAML::Node& v, const std::string& fp) {
                   pdb.max_unavailable = ReadIntOrPercent(r_, v, fp);
                 }},
                {"selector",
                 [&](const YAML::Node& v, const std::string& fp) {
                   has_selector = true;
                   r_.ReadStruct(
                       v, fp,
                       {{"matchLabels",
                         [&](const YAML::Node& ml, const std::string& mp) {
                           pdb.selector.match_labels = r_.StringMap(ml, mp, true);
                           CheckLabels(ml, mp, pdb.selector.match_labels);
                         }},
                        {"matchExpressions", [&](const YAML::Node& me, const std::string& mp) {
                           r_.ForEachItem(me, mp, [&](const YAML::Node& e, const std::string& ep) {
                             LabelRequirement req;
                             bool has_key = false, has_op = false;
                             r_.ReadStruct(
                                 e, ep,
                                 {{"key",
                                   [&](const YAML::Node& kv, const std::string& kp) {
                                     if (auto s = r_.String(kv, kp)) {
                                       has_key = true;
                                       req.key = *s;
                                     }
                                   }},
                                  {"operator",
                                   [&](const YAML::Node& ov, const std::string& op) {
                                     if (auto o = ReadOperator(ov, op)) {
                                       has_op = true;
                                       req.op = *o;
                                     }
                                   }},
                                  {"values", [&](const YAML::Node& vv, const std::string& vp) {
                                     req.values = r_.StringList(vv, vp);
                                   }}});
                             if (!e.IsMap()) return;
                             if (!has_key) r_.Error(e, ChildPath(ep, "key"), "is required");
                             if (!has_op) r_.Error(e, ChildPath(ep, "operator"), "is required");
                             if (!has_key || !has_op) return;
                             CheckOperatorValues(e, ep, req.op, req.values);
                             pdb.selector.match_expressions.push_back(std::move(req));
                           });
                         }}});
                 }}},
               {"unhealthyPodEvictionPolicy"});
         }});
    fields.push_back(Ignore("status"));
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&pdb.meta, true);
    if (!has_selector) r_.Warn(doc, "spec.selector", "no selector: the budget selects no Pod");
    out_->set.pdbs.push_back(std::move(pdb));
  }

  // ---------------------------------------------------------------- Arbiter kinds

  // A ratio such as "1.2" in thousandths.
  std::optional<int64_t> Ratio(const YAML::Node& v, const std::string& p) {
    auto d = r_.NonNegativeDecimal(v, p);
    if (!d) return std::nullopt;
    constexpr int128 kMilliUnits = Decimal::kOne / 1000;
    if (d->units() % kMilliUnits != 0) {
      r_.Error(v, p, "ratio " + Quote(v.Scalar()) + " has more than 3 decimal places");
      return std::nullopt;
    }
    int128 milli = d->units() / kMilliUnits;
    if (milli > 1000000) {
      r_.Error(v, p, "ratio " + Quote(v.Scalar()) + " is too large");
      return std::nullopt;
    }
    return static_cast<int64_t>(milli);
  }

  void LoadPoolPolicy(const YAML::Node& doc) {
    PoolPolicy pp;
    auto fields = Top(&pp.meta, false);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) { PoolPolicySpec(n, p, &pp); }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&pp.meta, false);
    if (out_->set.pool_policy) {
      const SourceRef& first = out_->set.pool_policy->meta.source;
      r_.ErrorAtLine(0, "",
                     "more than one PoolPolicy (the first is " + out_->set.pool_policy->meta.name +
                         " at " + first.file + ":" + std::to_string(first.line) +
                         "); a pool has at most one");
      return;
    }
    out_->set.pool_policy = std::move(pp);
  }

  void PoolPolicySpec(const YAML::Node& n, const std::string& p, PoolPolicy* pp) {
    r_.ReadStruct(
        n, p,
        {{"overcommit",
          [&](const YAML::Node& v, const std::string& fp) { PoolOvercommit(v, fp, pp); }},
         {"quota",
          [&](const YAML::Node& v, const std::string& fp) {
            r_.ReadStruct(
                v, fp,
                {{"whenExceeded",
                  [&](const YAML::Node& x, const std::string& xp) {
                    if (auto e = r_.Enum(x, xp, ManifestNames(QuotaExceededActionNames())))
                      pp->when_quota_exceeded = static_cast<QuotaExceededAction>(*e);
                  }},
                 {"maxSubmittedPerNamespace", [&](const YAML::Node& x, const std::string& xp) {
                    if (auto n = r_.Int(x, xp, 1, kMaxSubmittedPerNamespace))
                      pp->max_submitted_per_namespace = *n;
                  }}});
          }},
         {"placement",
          [&](const YAML::Node& v, const std::string& fp) { PoolPlacement(v, fp, pp); }},
         {"preemption",
          [&](const YAML::Node& v, const std::string& fp) { PoolPreemption(v, fp, pp); }},
         {"scheduling",
          [&](const YAML::Node& v, const std::string& fp) { PoolScheduling(v, fp, pp); }},
         {"fairSharing",
          [&](const YAML::Node& v, const std::string& fp) {
            r_.ReadStruct(
                v, fp, {{"preemptionStrategies", [&](const YAML::Node& x, const std::string& xp) {
                           FairStrategies(x, xp, pp);
                         }}});
          }},
         {"latency",  // Slurm's latencies (slurm4): present = modelled, Slurm's defaults
          [&](const YAML::Node& v, const std::string& fp) { PoolLatency(v, fp, pp); }},
         {"metering", [&](const YAML::Node& v, const std::string& fp) {
            r_.ReadStruct(v, fp,
                          {{"scrapeInterval", [&](const YAML::Node& x, const std::string& xp) {
                              if (auto d = r_.Duration(x, xp)) pp->scrape_interval = *d;
                            }}});
          }}});
  }

  // PoolPolicy spec.overcommit: a ratio per resource; GPUs only 1.0.
  void PoolOvercommit(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    r_.ForEachEntry(v, fp,
                    [&](const std::string& k, const YAML::Node& kn, const YAML::Node& val,
                        const std::string& kp) {
                      if (k == "cpu") {
                        if (auto m = Ratio(val, kp)) pp->cpu_overcommit_milli = *m;
                      } else if (k == "memory") {
                        if (auto m = Ratio(val, kp)) pp->memory_overcommit_milli = *m;
                      } else if (k == "nvidia.com/gpu" || IsMigResourceName(k)) {
                        if (auto m = Ratio(val, kp); m && *m != 1000)
                          r_.Error(val, kp,
                                   "GPUs are never overcommitted: the ratio for " + k +
                                       " must be 1.0 (got " + Quote(val.Scalar()) + ")");
                      } else {
                        std::string msg = "unknown overcommit resource " + Quote(k);
                        if (auto s = DidYouMean(k, {"cpu", "memory", "nvidia.com/gpu"}))
                          msg += "; did you mean " + Quote(*s) + "?";
                        else
                          msg += " (allowed: cpu, memory, nvidia.com/gpu)";
                        r_.Error(kn, kp, msg);
                      }
                    });
  }

  void PoolPlacement(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    r_.ReadStruct(v, fp,
                  {{"policy",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(PlacementPolicyNames())))
                        pp->placement = static_cast<PlacementPolicyName>(*e);
                    }},
                   {"percentageOfNodesToScore", [&](const YAML::Node& x, const std::string& xp) {
                      if (auto i = r_.Int(x, xp, 0, 100))
                        pp->percentage_of_nodes_to_score = static_cast<int32_t>(*i);
                    }}});
  }

  void PoolPreemption(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    r_.ReadStruct(v, fp,
                  {{"type",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(PreemptionTypeNames())))
                        pp->preemption_type = static_cast<PreemptionType>(*e);
                    }},
                   {"mode",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(PreemptModeNames())))
                        pp->preempt_mode = static_cast<PreemptMode>(*e);
                    }},
                   {"disruptionBudgets",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(DisruptionBudgetModeNames())))
                        pp->disruption_budgets = static_cast<DisruptionBudgetMode>(*e);
                    }},
                   {"minRuntime",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto d = r_.Duration(x, xp)) pp->min_runtime = *d;
                    }},
                   {"reclaim",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(ReclaimModeNames())))
                        pp->reclaim = static_cast<ReclaimMode>(*e);
                    }},
                   {"victimOrder",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto e = r_.Enum(x, xp, ManifestNames(VictimOrderNames())))
                        pp->victim_order = static_cast<VictimOrder>(*e);
                    }},
                   {"requeuingStrategy", [&](const YAML::Node& x, const std::string& xp) {
                      RequeuingStrategy(x, xp, pp);
                    }}});
  }

  void PoolScheduling(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    r_.ReadStruct(v, fp,
                  {{"backfill",
                    [&](const YAML::Node& x, const std::string& xp) {
                      if (auto b = r_.Bool(x, xp)) pp->backfill = *b;
                    }},
                   {"backfillDepth", [&](const YAML::Node& x, const std::string& xp) {
                      if (auto d = r_.Int(x, xp, 1, kMaxBackfillDepth))
                        pp->backfill_depth = static_cast<int32_t>(*d);
                    }}});
  }

  void PoolLatency(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    PoolPolicy::SlurmLatency l;
    auto dur = [&](Millis* out) {
      return [this, out](const YAML::Node& x, const std::string& xp) {
        if (auto d = r_.Duration(x, xp)) *out = *d;
      };
    };
    r_.ReadStruct(v, fp,
                  {{"graceEndDelay", dur(&l.grace_end_delay)},
                   {"killWait", dur(&l.kill_wait)},
                   {"messageTimeout", dur(&l.message_timeout)},
                   {"epilog", dur(&l.epilog)},
                   {"credExpire", dur(&l.cred_expire)},
                   {"schedInterval", dur(&l.sched_interval)}});
    pp->latency = l;
  }

  // PoolPolicy spec.fairSharing.preemptionStrategies: each a strategy name, the list one of the
  // sets Kueue's configuration validation accepts ([F], [I], [F, I]); empty keeps the default.
  void FairStrategies(const YAML::Node& x, const std::string& xp, PoolPolicy* pp) {
    std::vector<FairShareStrategy> list;
    bool names_ok = true;
    if (!r_.ForEachItem(x, xp, [&](const YAML::Node& item, const std::string& ip) {
          if (auto e = r_.Enum(item, ip, ManifestNames(FairShareStrategyNames())))
            list.push_back(static_cast<FairShareStrategy>(*e));
          else
            names_ok = false;
        }))
      return;
    if (!names_ok || list.empty()) return;  // Kueue: an empty list is the default
    using S = FairShareStrategy;
    const bool valid =
        list.size() == 1 || (list.size() == 2 && list[0] == S::kLessThanOrEqualToFinalShare &&
                             list[1] == S::kLessThanInitialShare);
    if (!valid) {
      r_.Error(x, xp,
               "unsupported list of strategies (allowed, as Kueue's configuration: "
               "[LessThanOrEqualToFinalShare], [LessThanInitialShare], "
               "[LessThanOrEqualToFinalShare, LessThanInitialShare])");
      return;
    }
    pp->fair_preemption_strategies = std::move(list);
  }

  // PoolPolicy spec.preemption.requeuingStrategy: Kueue's waitForPodsReady.requeuingStrategy
  // back-off fields, in seconds, with Kueue's defaults (60, 3600) and its validation (>= 0); and
  // Arbiter's immediateRequeues (>= 0, default 0): the first preemptions requeued at once.
  void RequeuingStrategy(const YAML::Node& v, const std::string& fp, PoolPolicy* pp) {
    PoolPolicy::RequeueBackoff b;
    auto seconds = [this](Millis* out) {
      return [this, out](const YAML::Node& x, const std::string& xp) {
        auto i = r_.Int(x, xp, -(int64_t{1} << 62), INT32_MAX);
        if (!i) return;
        if (*i < 0) {
          r_.Error(x, xp,
                   "invalid value " + std::to_string(*i) +
                       ": must be greater than or equal to 0 (seconds, as Kueue's)");
          return;
        }
        *out = *i * 1000;
      };
    };
    auto immediate = [this, &b](const YAML::Node& x, const std::string& xp) {
      if (auto i = r_.Int(x, xp, 0, INT32_MAX)) b.immediate = static_cast<int32_t>(*i);
    };
    r_.ReadStruct(v, fp,
                  {{"backoffBaseSeconds", seconds(&b.base)},
                   {"backoffMaxSeconds", seconds(&b.max)},
                   {"immediateRequeues", immediate}});
    pp->requeue_backoff = b;
  }

  // ElasticQuota spec.preemption: Kueue's ClusterQueue preemption field names and values.
  void ElasticPreemption(const YAML::Node& v, const std::string& fp, ElasticQuota* eq) {
    r_.ReadStruct(
        v, fp,
        {{"withinNamespace",
          [&](const YAML::Node& x, const std::string& xp) {
            if (auto e = r_.Enum(x, xp, ManifestNames(WithinNamespacePolicyNames())))
              eq->preemption.within_namespace = static_cast<WithinNamespacePolicy>(*e);
          }},
         {"reclaimWithinCohort",
          [&](const YAML::Node& x, const std::string& xp) {
            if (auto e = r_.Enum(x, xp, ManifestNames(ReclaimModeNames())))
              eq->preemption.reclaim_within_cohort = static_cast<ReclaimMode>(*e);
          }},
         {"borrowWithinCohort", [&](const YAML::Node& x, const std::string& xp) {
            r_.ReadStruct(
                x, xp,
                {{"policy",
                  [&](const YAML::Node& y, const std::string& yp) {
                    if (auto e = r_.Enum(y, yp, ManifestNames(BorrowWithinCohortPolicyNames())))
                      eq->preemption.borrow_within_cohort =
                          static_cast<BorrowWithinCohortPolicy>(*e);
                  }},
                 {"maxPriorityThreshold", [&](const YAML::Node& y, const std::string& yp) {
                    if (auto i = r_.Int(y, yp, INT32_MIN, INT32_MAX))
                      eq->preemption.max_priority_threshold = static_cast<int32_t>(*i);
                  }}});
          }}});
  }

  // ElasticQuota spec.flavors: [{name, min, max, lendingLimit}] in fallback order.
  void QuotaFlavors(const YAML::Node& v, const std::string& fp, ElasticQuota* eq) {
    r_.ForEachItem(v, fp, [&](const YAML::Node& item, const std::string& ip) {
      QuotaFlavor f;
      r_.ReadStruct(item, ip,
                    {{"name",
                      [&](const YAML::Node& x, const std::string& xp) {
                        if (auto s = r_.String(x, xp)) f.name = *s;
                      }},
                     {"min", [&](const YAML::Node& x,
                                 const std::string& xp) { f.min = r_.Resources(x, xp); }},
                     {"max", [&](const YAML::Node& x,
                                 const std::string& xp) { f.max = r_.Resources(x, xp); }},
                     {"lendingLimit", [&](const YAML::Node& x, const std::string& xp) {
                        f.lending_limit = r_.Resources(x, xp);
                      }}});
      if (f.name.empty()) r_.Error(item, ip + ".name", "is required");
      eq->flavors.push_back(std::move(f));
    });
  }

  void LoadResourceFlavor(const YAML::Node& doc) {
    ResourceFlavor rf;
    auto fields = Top(&rf.meta, false);
    fields.push_back({"spec", [&](const YAML::Node& n, const std::string& p) {
                        r_.ReadStruct(n, p,
                                      {{"nodeLabels",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          rf.node_labels = r_.StringMap(v, fp, true);
                                        }}},
                                      {}, {"nodeTaints", "tolerations", "topologyName"});
                      }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&rf.meta, false);
    out_->set.resource_flavors.push_back(std::move(rf));
  }

  void LoadElasticQuota(const YAML::Node& doc) {
    ElasticQuota eq;
    auto fields = Top(&eq.meta, true);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(
               n, p,
               {{"cohort",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto s = r_.String(v, fp)) eq.cohort = *s;
                 }},
                {"min",
                 [&](const YAML::Node& v, const std::string& fp) { eq.min = r_.Resources(v, fp); }},
                {"max",
                 [&](const YAML::Node& v, const std::string& fp) { eq.max = r_.Resources(v, fp); }},
                {"lendingLimit",
                 [&](const YAML::Node& v, const std::string& fp) {
                   eq.lending_limit = r_.Resources(v, fp);
                   for (const auto& [k, x] : eq.lending_limit.entries())
                     eq.lending_limit_set.push_back(k);
                 }},
                {"preemption", [&](const YAML::Node& v,
                                   const std::string& fp) { ElasticPreemption(v, fp, &eq); }},
                {"flavors",
                 [&](const YAML::Node& v, const std::string& fp) { QuotaFlavors(v, fp, &eq); }},
                {"fairSharing", [&](const YAML::Node& v, const std::string& fp) {
                   eq.fair_weight_milli = 1000;  // Kueue's default weight
                   r_.ReadStruct(v, fp,
                                 {{"weight", [&](const YAML::Node& x, const std::string& xp) {
                                     // A Kubernetes quantity (1, 0.5, 500m), kept in thousandths.
                                     if (auto q = r_.Quantity("cpu", x, xp))
                                       eq.fair_weight_milli = *q;
                                   }}});
                 }}});
         }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&eq.meta, true);
    out_->set.elastic_quotas.push_back(std::move(eq));
  }

  std::optional<BillingMode> Mode(const YAML::Node& v, const std::string& p) {
    if (auto e = r_.Enum(v, p, {"Request", "Usage", "Max", "Blended"}))
      return static_cast<BillingMode>(*e);
    return std::nullopt;
  }

  void LoadPriceBook(const YAML::Node& doc) {
    PriceBook pb;
    auto fields = Top(&pb.meta, false);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(
               n, p,
               {{"currency", [&](const YAML::Node& v,
                                 const std::string& fp) { PriceBookCurrency(v, fp, &pb); }},
                {"effectiveFrom",
                 [&](const YAML::Node& v, const std::string& fp) {
                   auto t = r_.Text(v, fp);
                   if (!t) return;
                   auto ms = ParseRfc3339(*t);
                   if (!ms.ok())
                     r_.Error(v, fp, ms.message());
                   else
                     pb.effective_from = *ms;
                 }},
                {"mode",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto m = Mode(v, fp)) pb.mode = *m;
                 }},
                {"blendedRequestWeight",
                 [&](const YAML::Node& v, const std::string& fp) {
                   auto d = r_.NonNegativeDecimal(v, fp);
                   if (!d) return;
                   if (*d > Decimal::FromInt(1))
                     r_.Error(v, fp, "weight " + Quote(v.Scalar()) + " must be between 0 and 1");
                   else
                     pb.blended_request_weight = *d;
                 }},
                {"prices",
                 [&](const YAML::Node& v, const std::string& fp) { PriceBookPrices(v, fp, &pb); }},
                {"gpuModels",
                 [&](const YAML::Node& v, const std::string& fp) {
                   r_.ForEachEntry(v, fp,
                                   [&](const std::string& k, const YAML::Node&,
                                       const YAML::Node& val, const std::string& kp) {
                                     if (auto d = r_.NonNegativeDecimal(val, kp))
                                       pb.gpu_models[k] = *d;
                                   });
                 }},
                {"migRule",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r_.Enum(v, fp, {"Compute", "Memory", "Max"}))
                     pb.mig_rule = static_cast<MigRule>(*e);
                 }},
                {"preemptionCredit",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r_.Enum(v, fp, {"None", "LostWork"}))
                     pb.preemption_credit = static_cast<CreditPolicy>(*e);
                 }},
                {"shareIdle",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r_.Enum(v, fp, {"None", "Weighted", "Even"}))
                     pb.share_idle = static_cast<IdleSharing>(*e);
                 }},
                {"namespaceModes", [&](const YAML::Node& v, const std::string& fp) {
                   PriceBookNamespaceModes(v, fp, &pb);
                 }}});
         }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&pb.meta, false);
    out_->set.price_books.push_back(std::move(pb));
  }

  // PriceBook spec.currency: an ISO 4217 code.
  void PriceBookCurrency(const YAML::Node& v, const std::string& fp, PriceBook* pb) {
    auto s = r_.String(v, fp);
    if (!s) return;
    if (s->size() != 3 ||
        !std::all_of(s->begin(), s->end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
      r_.Error(v, fp, "currency " + Quote(*s) + " is not an ISO 4217 code (e.g. USD, EUR, CNY)");
    else
      pb->currency = *s;
  }

  // PriceBook spec.prices: a price per resource.
  void PriceBookPrices(const YAML::Node& v, const std::string& fp, PriceBook* pb) {
    r_.ForEachEntry(v, fp,
                    [&](const std::string& k, const YAML::Node& kn, const YAML::Node& val,
                        const std::string& kp) {
                      auto info = ClassifyResource(k);
                      if (!info.ok()) {
                        r_.Error(kn, kp, info.message());
                        return;
                      }
                      if (auto d = r_.NonNegativeDecimal(val, kp)) pb->prices[k] = *d;
                    });
  }

  // PriceBook spec.namespaceModes: a billing mode per namespace.
  void PriceBookNamespaceModes(const YAML::Node& v, const std::string& fp, PriceBook* pb) {
    r_.ForEachEntry(v, fp,
                    [&](const std::string& k, const YAML::Node& kn, const YAML::Node& val,
                        const std::string& kp) {
                      if (!IsDns1123Label(k)) {
                        r_.Error(kn, kp, "invalid namespace " + Quote(k));
                        return;
                      }
                      if (auto m = Mode(val, kp)) pb->namespace_modes[k] = *m;
                    });
  }

  void LoadPodGroup(const YAML::Node& doc) {
    PodGroup g;
    auto fields = Top(&g.meta, true);
    fields.push_back({"spec", [&](const YAML::Node& n, const std::string& p) {
                        r_.ReadStruct(n, p,
                                      {{"minMember",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          if (auto i = r_.Int(v, fp, 1, kInt32Max))
                                            g.min_member = static_cast<int32_t>(*i);
                                        }},
                                       {"scheduleTimeoutSeconds",
                                        [&](const YAML::Node& v, const std::string& fp) {
                                          if (auto i = r_.Int(v, fp, 0, kInt32Max))
                                            g.schedule_timeout = *i * 1000;
                                        }}},
                                      {}, {"minResources", "minTaskMember"});
                      }});
    fields.push_back(Ignore("status"));
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&g.meta, true);
    out_->set.pod_groups.push_back(std::move(g));
  }

  void LoadQoS(const YAML::Node& doc) {
    QoS q;
    auto fields = Top(&q.meta, false);
    fields.push_back(
        {"spec", [&](const YAML::Node& n, const std::string& p) {
           r_.ReadStruct(
               n, p,
               {{"priority",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto i = r_.Int(v, fp, 0, kInt32Max)) q.priority = static_cast<int32_t>(*i);
                 }},
                {"preempt", [&](const YAML::Node& v,
                                const std::string& fp) { q.preempt = r_.StringList(v, fp); }},
                {"preemptMode",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r_.Enum(v, fp, ManifestNames(PreemptModeNames())))
                     q.preempt_mode = static_cast<PreemptMode>(*e);
                 }},
                {"graceTime",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto d = r_.Duration(v, fp)) q.grace_time = *d;
                 }},
                {"namespaces", [&](const YAML::Node& v, const std::string& fp) {
                   if (v.IsNull()) return;  // as kube-apiserver prunes a null: every namespace
                   q.namespaces = r_.StringList(v, fp);
                   for (size_t i = 0; i < q.namespaces->size(); ++i)
                     if (!IsDns1123Label((*q.namespaces)[i]))
                       r_.Error(v, fp + "[" + std::to_string(i) + "]",
                                "invalid namespace " + Quote((*q.namespaces)[i]) +
                                    ": lower-case letters, digits and '-', at most 63");
                 }}});
         }});
    r_.ReadStruct(doc, "", fields);
    FinishMeta(&q.meta, false);
    out_->set.qos.push_back(std::move(q));
  }

 private:
  DocReader& r_;
  ManifestLoad* out_;
  YAML::Node meta_node_;
  bool name_present_ = false;
  std::vector<std::pair<std::string, YAML::Node>> annotation_nodes_;
};

// Reads apiVersion, kind and metadata.name/namespace without reporting anything, so that
// every later diagnostic can name the object.
struct Header {
  std::string api_version, kind, name, ns;
  YAML::Node api_node, kind_node;
};

Header Prescan(const YAML::Node& doc) {
  Header h;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node key = it->first;  // copies: yaml-cpp iterators return pairs by value
    const YAML::Node v = it->second;
    if (!key.IsScalar()) continue;
    const std::string k = key.Scalar();
    if (k == "apiVersion" && v.IsScalar()) {
      h.api_version = v.Scalar();
      h.api_node = v;
    } else if (k == "kind" && v.IsScalar()) {
      h.kind = v.Scalar();
      h.kind_node = v;
    } else if (k == "metadata" && v.IsMap()) {
      for (auto m = v.begin(); m != v.end(); ++m) {
        const YAML::Node mk = m->first, mv = m->second;
        if (!mk.IsScalar() || !mv.IsScalar()) continue;
        if (mk.Scalar() == "name") h.name = mv.Scalar();
        if (mk.Scalar() == "namespace") h.ns = mv.Scalar();
      }
    }
  }
  return h;
}

// `line`: the document's line when the tree has no marks (the fast reader's), else 0.
void LoadDocument(const YAML::Node& doc, const std::string& file, ManifestLoad* out, int line = 0) {
  SourceRef source{file, line > 0 ? line : std::max(1, NodeLine(doc))};
  DocReader r(file, source, &out->diagnostics, &out->locator);
  if (!doc.IsMap()) {
    std::string what = doc.IsScalar() ? "text" : doc.IsSequence() ? "a list" : "not a mapping";
    r.Error(doc, "",
            "document is " + what +
                ", not a manifest object (expected a mapping with apiVersion, kind, metadata)");
    return;
  }
  Header h = Prescan(doc);
  if (h.kind.empty()) {
    r.Error(doc, "kind", "is required (" + SupportedKindsText() + ")");
    return;
  }
  const KindInfo* info = nullptr;
  for (const auto& k : Kinds())
    if (h.kind == k.kind) info = &k;
  if (!info) {
    std::vector<std::string> names;
    for (const auto& k : Kinds()) names.emplace_back(k.kind);
    std::string msg = "unknown kind " + Quote(h.kind);
    if (auto s = DidYouMean(h.kind, names)) msg += "; did you mean " + Quote(*s) + "?";
    r.Error(h.kind_node, "kind", msg + " (" + SupportedKindsText() + ")");
    return;
  }
  std::string display = h.name;
  if (info->namespaced && !h.name.empty())
    display = (h.ns.empty() ? "default" : h.ns) + "/" + h.name;
  r.SetObject(info->kind, display);
  if (h.api_version.empty()) {
    r.Error(doc, "apiVersion",
            std::string("is required (") + info->kind + " is " + info->api_version + ")");
    return;
  }
  if (h.api_version != info->api_version) {
    r.Error(h.api_node, "apiVersion",
            "unsupported apiVersion " + Quote(h.api_version) + " for " + info->kind +
                " (expected " + info->api_version + "; " + SupportedKindsText() + ")");
    return;
  }
  DocLoader loader(r, out);
  std::string kind = info->kind;
  if (kind == "Namespace")
    loader.LoadNamespace(doc);
  else if (kind == "Node")
    loader.LoadNode(doc);
  else if (kind == "Pod")
    loader.LoadPod(doc);
  else if (kind == "ResourceQuota")
    loader.LoadResourceQuota(doc);
  else if (kind == "LimitRange")
    loader.LoadLimitRange(doc);
  else if (kind == "PriorityClass")
    loader.LoadPriorityClass(doc);
  else if (kind == "PodDisruptionBudget")
    loader.LoadPdb(doc);
  else if (kind == "PoolPolicy")
    loader.LoadPoolPolicy(doc);
  else if (kind == "ElasticQuota")
    loader.LoadElasticQuota(doc);
  else if (kind == "PriceBook")
    loader.LoadPriceBook(doc);
  else if (kind == "QoS")
    loader.LoadQoS(doc);
  else if (kind == "PodGroup")
    loader.LoadPodGroup(doc);
  else if (kind == "ResourceFlavor")
    loader.LoadResourceFlavor(doc);
}

// yaml-cpp 0.7 loops forever, allocating a null document per turn, when a document starts with
// a token no rule consumes (e.g. a lone `,`: jbeder/yaml-cpp#1040, fixed upstream in #1319).
// This event handler drives the parser once without building nodes and reports where two
// successive documents start at the same position, i.e. where LoadAll would never return.
class StuckDocumentDetector : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  // Line (1-based) where the parser stops making progress, or 0. Throws YAML::Exception on
  // syntax errors, like LoadAll.
  static int StuckLine(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StuckDocumentDetector d;
    int last_pos = -1;
    while (parser.HandleNextDocument(d)) {
      if (d.start_.pos == last_pos) return d.start_.line + 1;
      last_pos = d.start_.pos;
    }
    return 0;
  }

 private:
  YAML::Mark start_;
};

}  // namespace

// The `items` of a v1 List document (an undefined node when it has none).
YAML::Node ListItems(const YAML::Node& doc) {
  if (!doc.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node key = it->first;
    if (key.IsScalar() && key.Scalar() == "items") return it->second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// True for a document with kind: List (what `kubectl get ... -o yaml` prints for several objects).
bool IsListDocument(const YAML::Node& doc) {
  if (!doc.IsMap()) return false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node key = it->first, v = it->second;
    if (key.IsScalar() && key.Scalar() == "kind") return v.IsScalar() && v.Scalar() == "List";
  }
  return false;
}

// Checks a v1 List's own fields (its items are loaded as documents of their own, each with its
// own line). Anything else in it is an error.
void CheckList(const YAML::Node& doc, const std::string& file, ManifestLoad* out) {
  SourceRef source{file, std::max(1, NodeLine(doc))};
  DocReader r(file, source, &out->diagnostics, &out->locator);
  r.SetObject("List", "");
  std::string api_version;
  r.ReadStruct(
      doc, "",
      {{"apiVersion",
        [&](const YAML::Node& v, const std::string& p) {
          if (auto t = r.Text(v, p)) api_version = *t;
          if (api_version != "v1")
            r.Error(v, p, "a List is apiVersion v1, got " + QuotedEcho(api_version));
        }},
       {"kind", [](const YAML::Node&, const std::string&) {}},
       {"metadata",
        [&](const YAML::Node& v, const std::string& p) {
          r.ReadStruct(v, p, {}, {"resourceVersion", "continue", "remainingItemCount", "selfLink"});
        }},
       {"items", [&](const YAML::Node& v, const std::string& p) {
          r.ForEachItem(v, p, [&](const YAML::Node& item, const std::string& ip) {
            if (IsListDocument(item))
              r.Error(item, ip,
                      "a List inside a List is not supported; list the objects themselves");
          });
        }}});
}

// A document's text inside its file: [begin, end) and the number of lines before it.
struct DocText {
  int line = 0;  // SourceRef line of the object (its root node)
  std::shared_ptr<const std::string> text;
  size_t begin = 0, end = 0;
  int lines_before = 0;
  size_t doc = 0;  // which document of the piece (a piece holds several only with directives)
  int item = -1;   // an object of a v1 List: its index in the List's items
};

// Every loaded document's text, so the SourceLocator can find a field's line on demand by
// parsing that one document again.
class DocIndex {
 public:
  void Add(const std::string& file, DocText d) {
    auto& v = by_file_[file];
    if (!v.empty() && v.back().line >= d.line) sorted_ = false;
    v.push_back(std::move(d));
  }

  int Resolve(const SourceRef& object, std::string_view path) {
    auto f = by_file_.find(object.file);
    if (f == by_file_.end()) return 0;
    auto& v = f->second;
    if (!sorted_) {
      for (auto& [name, docs] : by_file_)
        std::stable_sort(docs.begin(), docs.end(),
                         [](const DocText& a, const DocText& b) { return a.line < b.line; });
      sorted_ = true;
    }
    auto it = std::lower_bound(v.begin(), v.end(), object.line,
                               [](const DocText& d, int line) { return d.line < line; });
    if (it == v.end() || it->line != object.line) return 0;
    try {
      LineOffsetScope offset(it->lines_before);
      std::vector<YAML::Node> docs =
          YAML::LoadAll(it->text->substr(it->begin, it->end - it->begin));
      if (it->doc >= docs.size()) return 0;
      if (it->item < 0) return WalkLine(docs[it->doc], path);
      const YAML::Node items = ListItems(docs[it->doc]);
      if (!items.IsSequence() || static_cast<size_t>(it->item) >= items.size()) return 0;
      return WalkLine(items[static_cast<size_t>(it->item)], path);
    } catch (const std::exception&) {
      return 0;
    }
  }

 private:
  // Follows `a.b[key][0].c` from the root; the line of the deepest part found (a map key's own
  // line, or a list item's).
  static int WalkLine(YAML::Node node, std::string_view path) {
    int best = NodeLine(node);
    while (!path.empty()) {
      if (path[0] == '.') {
        path.remove_prefix(1);
        continue;
      }
      std::string_view seg;
      if (path[0] == '[') {
        size_t close = path.find(']');
        if (close == std::string_view::npos) break;
        seg = path.substr(1, close - 1);
        path.remove_prefix(close + 1);
      } else {
        size_t stop = path.find_first_of(".[");
        seg = path.substr(0, stop);
        path.remove_prefix(stop == std::string_view::npos ? path.size() : stop);
      }
      YAML::Node next;
      if (node.IsMap()) {
        bool found = false;
        for (auto it = node.begin(); it != node.end(); ++it) {
          const YAML::Node key = it->first;
          if (key.IsScalar() && key.Scalar() == seg) {
            best = NodeLine(key);
            next = it->second;
            found = true;
            break;
          }
        }
        if (!found) break;
      } else if (node.IsSequence() && !seg.empty() &&
                 std::all_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        size_t i = std::stoul(std::string(seg));
        if (i >= node.size()) break;
        next = node[i];
        best = NodeLine(next);
      } else {
        break;
      }
      node.reset(next);  // rebind (operator= would assign through to the parent's node)
    }
    return best;
  }

  std::unordered_map<std::string, std::vector<DocText>> by_file_;
  bool sorted_ = true;
};

namespace {

struct Chunk {
  size_t begin, end;
  int lines_before;
};

bool IsMarker(const std::string& t, size_t pos, const char* marker) {
  if (t.compare(pos, 3, marker) != 0) return false;
  size_t after = pos + 3;
  return after >= t.size() || t[after] == ' ' || t[after] == '\t' || t[after] == '\r' ||
         t[after] == '\n';
}

// Splits a YAML stream at its document markers (`---` and `...` at the start of a line, which
// YAML forbids inside any scalar), so that documents are parsed one at a time: memory stays that
// of one document, not of the whole stream. Streams with directives (`%YAML`, `%TAG`) are left in
// one piece (a directive belongs to the document after it).
std::vector<Chunk> SplitDocuments(const std::string& t) {
  std::vector<Chunk> out;
  size_t begin = 0;
  int line = 0, begin_line = 0;
  for (size_t pos = 0; pos < t.size();) {
    size_t eol = t.find('\n', pos);
    size_t next = eol == std::string::npos ? t.size() : eol + 1;
    const size_t at = pos == 0 && t.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : pos;  // after a BOM
    if (at < t.size() && t[at] == '%') return {{0, t.size(), 0}};
    if (IsMarker(t, pos, "---") && pos > begin) {
      out.push_back({begin, pos, begin_line});
      begin = pos;
      begin_line = line;
    } else if (IsMarker(t, pos, "...")) {
      out.push_back({begin, next, begin_line});
      begin = next;
      begin_line = line + 1;
    }
    pos = next;
    ++line;
  }
  if (begin < t.size()) out.push_back({begin, t.size(), begin_line});
  return out;
}

// The line (0-based, in `text`) of the last line at or before `line` whose indentation holds a
// tab, or -1.
int TabIndentedLine(std::string_view text, int line) {
  int found = -1, n = 0;
  size_t pos = 0;
  while (pos <= text.size() && n <= line) {
    size_t eol = text.find('\n', pos);
    std::string_view l =
        text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    const size_t indent_end = l.find_first_not_of(" \t");
    const std::string_view indent =
        l.substr(0, indent_end == std::string_view::npos ? l.size() : indent_end);
    if (indent.find('\t') != std::string_view::npos && indent_end != std::string_view::npos)
      found = n;
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
    ++n;
  }
  return found;
}

// Length of the text before the first ": " on line `line` (0-based) of `text`.
size_t LongestKeyOnLine(std::string_view text, int line) {
  size_t pos = 0;
  for (int n = 0; n < line; ++n) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return 0;
    ++pos;
  }
  const size_t eol = text.find('\n', pos);
  const std::string_view l =
      text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
  const size_t colon = l.find(':');
  return colon == std::string_view::npos ? l.size() : colon;
}

// yaml-cpp's words ("illegal map value", "end of map flow not found") in terms of what the user
// wrote, and the line to report (0-based in `piece`).
struct YamlProblem {
  int line;
  std::string message;
};
YamlProblem ExplainYamlError(const YAML::Exception& e, std::string_view piece) {
  const int line = e.mark.is_null() ? 0 : e.mark.line;
  const std::string raw = e.msg.empty() ? std::string(e.what()) : e.msg;
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr)
    return {
        line,
        "lists and mappings nested more than 2000 levels deep; no manifest is, so this is not the "
        "file you meant or it was generated wrong"};
  if (int tab = TabIndentedLine(piece, line); tab >= 0)
    return {
        tab,
        "a tab in the indentation: YAML indents with spaces only (replace the tabs with spaces)"};
  auto starts = [&](const char* p) { return raw.rfind(p, 0) == 0; };
  std::string m;
  if (starts(YAML::ErrorMsg::INVALID_ESCAPE)) {
    const std::string c = Echo(raw.substr(std::strlen(YAML::ErrorMsg::INVALID_ESCAPE)), 8);
    m = "unknown escape \"\\" + c +
        "\" in a double-quoted string: write \\\\ for a backslash, or use single "
        "quotes, in which a backslash is plain text";
  } else if (starts(YAML::ErrorMsg::INVALID_HEX) || starts(YAML::ErrorMsg::INVALID_UNICODE)) {
    m = "a bad \\x, \\u or \\U escape in a double-quoted string: write \\\\ for a backslash, or "
        "use single quotes";
  } else if (raw == YAML::ErrorMsg::MAP_VALUE && LongestKeyOnLine(piece, line) > 1024) {
    m = "a mapping key longer than 1024 characters (YAML's limit for a plain key)";
  } else if (raw == YAML::ErrorMsg::MAP_VALUE) {
    m = "a mapping value where none can start: a key on the line of a list item or of another "
        "value, or an "
        "unquoted value with \": \" in it (quote the value)";
  } else if (raw == YAML::ErrorMsg::BLOCK_ENTRY) {
    m = "a list item (\"- \") where no list can start: check its indentation against the lines "
        "above";
  } else if (raw == YAML::ErrorMsg::MAP_KEY) {
    m = "a \"? \" mapping key where none can start: check the indentation";
  } else if (raw == YAML::ErrorMsg::END_OF_MAP_FLOW) {
    m = "a \"{\" without its closing \"}\"";
  } else if (raw == YAML::ErrorMsg::END_OF_SEQ_FLOW) {
    m = "a \"[\" without its closing \"]\"";
  } else if (raw == YAML::ErrorMsg::END_OF_MAP || raw == YAML::ErrorMsg::END_OF_SEQ) {
    m = "a mapping or list that does not end where its indentation says: check the indentation of "
        "this line";
  } else if (raw == YAML::ErrorMsg::FLOW_END) {
    m = "a closing \"]\" or \"}\" without its opening one";
  } else if (raw == YAML::ErrorMsg::EOF_IN_SCALAR) {
    m = "a quoted string that is never closed (its closing quote is missing)";
  } else if (raw == YAML::ErrorMsg::DOC_IN_SCALAR) {
    m = "a document marker (--- or ...) inside a quoted string that is never closed";
  } else if (raw == YAML::ErrorMsg::UNKNOWN_ANCHOR) {
    m = "an alias (*name) refers to an anchor (&name) that is not defined before it";
  } else if (raw == YAML::ErrorMsg::CHAR_IN_BLOCK) {
    m = "text on the line of a block scalar's | or > (the text belongs on the lines below, "
        "indented)";
  } else {
    m = Echo(raw, 200);
  }
  return {line, "not valid YAML: " + m};
}

// The scalar value of a top-level field of a mapping, or "".
std::string TopScalar(const YAML::Node& doc, std::string_view field) {
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node key = it->first, v = it->second;
    if (key.IsScalar() && key.Scalar() == field) return v.IsScalar() ? v.Scalar() : "";
  }
  return "";
}

// Loads a Pod or Node document read by the fast reader (fast_yaml.h); false (and nothing
// added) when the document is outside its subset, of another kind, or has anything to report:
// the caller then loads it with yaml-cpp, whose marks give every message its exact line.
bool LoadChunkFast(const std::shared_ptr<const std::string>& text, const Chunk& c,
                   const std::string& file, DocIndex& index, ManifestLoad* out) {
  auto doc = ParseFastDocument(std::string_view(*text).substr(c.begin, c.end - c.begin));
  if (!doc || !doc->root.IsMap()) return false;
  const std::string kind = TopScalar(doc->root, "kind");
  if (kind != "Pod" && kind != "Node") return false;
  const int line = doc->line + 1 + c.lines_before;
  const size_t diagnostics = out->diagnostics.items.size();
  const size_t pods = out->set.pods.size(), nodes = out->set.nodes.size();
  LoadDocument(doc->root, file, out, line);
  if (out->diagnostics.items.size() != diagnostics) {
    out->diagnostics.items.erase(
        out->diagnostics.items.begin() + static_cast<std::ptrdiff_t>(diagnostics),
        out->diagnostics.items.end());
    out->set.pods.erase(out->set.pods.begin() + static_cast<std::ptrdiff_t>(pods),
                        out->set.pods.end());
    out->set.nodes.erase(out->set.nodes.begin() + static_cast<std::ptrdiff_t>(nodes),
                         out->set.nodes.end());
    return false;
  }
  index.Add(file, {line, text, c.begin, c.end, c.lines_before, 0});
  return true;
}

void LoadChunk(const std::shared_ptr<const std::string>& text, const Chunk& c,
               const std::string& file, DocIndex& index, ManifestLoad* out) {
  if (out->fast_yaml && LoadChunkFast(text, c, file, index, out)) return;
  const std::string piece = text->substr(c.begin, c.end - c.begin);
  std::vector<YAML::Node> docs;
  try {
    if (int stuck = StuckDocumentDetector::StuckLine(piece)) {
      out->diagnostics.Add({Severity::kError, file, stuck + c.lines_before, "", "", "",
                            "not valid YAML: unexpected character at the start of a document"});
      return;
    }
    docs = YAML::LoadAll(piece);
  } catch (const YAML::Exception& e) {
    const YamlProblem p = ExplainYamlError(e, piece);
    out->diagnostics.Add(
        {Severity::kError, file, p.line + 1 + c.lines_before, "", "", "", p.message});
    return;
  } catch (const std::exception& e) {
    out->diagnostics.Add({Severity::kError, file, c.lines_before + 1, "", "", "",
                          std::string("cannot parse: ") + e.what()});
    return;
  }
  LineOffsetScope offset(c.lines_before);
  for (const auto& doc : docs) {
    if (!doc.IsDefined() || doc.IsNull()) continue;  // empty document
    int line = std::max(1, NodeLine(doc));
    const size_t doc_index = static_cast<size_t>(&doc - docs.data());
    try {
      if (IsListDocument(doc)) {
        // kubectl's v1 List: every item is an object with its own line (and its own index entry,
        // so that cross-object messages find the lines of its fields too).
        CheckList(doc, file, out);
        const YAML::Node all = ListItems(doc);
        int k = 0;
        for (auto it = all.begin(); all.IsSequence() && it != all.end(); ++it, ++k) {
          const YAML::Node item = *it;
          if (IsListDocument(item)) continue;
          index.Add(file, {std::max(1, NodeLine(item)), text, c.begin, c.end, c.lines_before,
                           doc_index, k});
          LoadDocument(item, file, out);
        }
        continue;
      }
      index.Add(file, {line, text, c.begin, c.end, c.lines_before, doc_index});
      LoadDocument(doc, file, out);
    } catch (const std::exception& e) {  // yaml-cpp or allocation failure: report, never throw
      out->diagnostics.Add(
          {Severity::kError, file, line, "", "", "",
           std::string("internal error while loading this document: ") + e.what()});
    }
  }
}

// Documents go in batches: the direct path (fast_objects.h) builds a batch's Pods and Nodes on
// up to out->threads threads, each on its own contiguous share; then, in document order, the
// loader takes the objects built and loads every other document the usual way (LoadChunk). So
// the result (objects, their order, diagnostics, the index) does not depend on the threads.
void LoadChunks(const std::shared_ptr<const std::string>& text, const std::vector<Chunk>& chunks,
                const std::string& file, DocIndex& index, ManifestLoad* out) {
  if (!out->fast_yaml) {
    for (const Chunk& c : chunks) LoadChunk(text, c, file, index, out);
    return;
  }
  const size_t threads = static_cast<size_t>(std::max(
      1, out->threads > 0 ? out->threads
                          : std::min(2, static_cast<int>(std::thread::hardware_concurrency()))));
  constexpr size_t kBatch = 8192;
  std::vector<DirectObject> built(std::min(kBatch, chunks.size()));
  std::vector<FastReader> readers(threads);
  const std::string_view all = *text;
  for (size_t b = 0; b < chunks.size(); b += kBatch) {
    const size_t e = std::min(chunks.size(), b + kBatch);
    auto build = [&](size_t from, size_t to, FastReader* reader) {
      for (size_t i = from; i < to; ++i) {
        const Chunk& c = chunks[i];
        DirectObject& d = built[i - b];
        try {
          BuildDirect(*reader, all.substr(c.begin, c.end - c.begin), file, c.lines_before, &d);
        } catch (const std::exception&) {  // e.g. out of memory: the usual path reports it
          d.kind = DirectObject::Kind::kNone;
        }
      }
    };
    const size_t n = std::min(threads, e - b);
    std::vector<std::thread> helpers;
    helpers.reserve(n - 1);  // never destroyed unjoined by a throwing emplace_back
    for (size_t t = 1; t < n; ++t) {
      const size_t from = b + (e - b) * t / n, to = b + (e - b) * (t + 1) / n;
      try {
        helpers.emplace_back(build, from, to, &readers[t]);
      } catch (const std::system_error&) {  // no thread to be had (limits): this one does it
        build(from, to, &readers[t]);
      }
    }
    build(b, b + (e - b) / n, &readers[0]);
    for (auto& h : helpers) h.join();
    for (size_t i = b; i < e; ++i) {
      DirectObject& d = built[i - b];
      const Chunk& c = chunks[i];
      if (d.kind == DirectObject::Kind::kNone) {
        LoadChunk(text, c, file, index, out);
        continue;
      }
      if (d.kind == DirectObject::Kind::kPod)
        out->set.pods.push_back(std::move(d.pod));
      else
        out->set.nodes.push_back(std::move(d.node));
      index.Add(file, {d.line, text, c.begin, c.end, c.lines_before, 0});
    }
  }
}

void LoadText(std::shared_ptr<const std::string> text, const std::string& file, ManifestLoad* out) {
  std::shared_ptr<DocIndex> index = out->doc_index;
  if (!index) {
    index = std::make_shared<DocIndex>();
    out->doc_index = index;
    out->locator.SetResolver(
        [index](const SourceRef& o, std::string_view p) { return index->Resolve(o, p); });
  }
  if (const io::TextPosition nul = io::FindNul(*text); nul.line > 0) {  // yaml-cpp reads up to it
    out->diagnostics.Add({Severity::kError, file, static_cast<int>(nul.line), "", "", "",
                          "not YAML text: a NUL byte (column " + std::to_string(nul.column) +
                              "): this is binary data, not a text file"});
    return;
  }
  const std::vector<Chunk> chunks = SplitDocuments(*text);
  // Room for one Pod per piece (usually one object each), growing geometrically across files.
  out->set.pods.reserve(
      std::max(out->set.pods.size() + chunks.size(), 2 * out->set.pods.capacity()));
  LoadChunks(text, chunks, file, *index, out);
}

}  // namespace

void LoadManifestText(const std::string& text, const std::string& file, ManifestLoad* out) {
  LoadText(std::make_shared<const std::string>(text), file, out);
  ResolvePodGroups(&out->set);
  ResolveFlavors(&out->set);
}

void LoadManifestNode(const YAML::Node& doc, const std::string& file, ManifestLoad* out) {
  try {
    if (doc.IsDefined() && !doc.IsNull()) LoadDocument(doc, file, out, 1);
  } catch (const std::exception& e) {  // yaml-cpp or allocation failure: report, never throw
    out->diagnostics.Add({Severity::kError, file, 1, "", "", "",
                          std::string("internal error while loading this object: ") + e.what()});
  }
  ResolvePodGroups(&out->set);
  ResolveFlavors(&out->set);
}

ManifestLoad LoadManifestFiles(const std::vector<std::string>& paths) {
  ManifestLoad out;
  for (const auto& p : paths) {
    std::string text;
    const io::ReadProblem problem = io::ReadInput(p, io::kManifestInput, &text);
    if (!problem.ok()) {
      out.diagnostics.Add({Severity::kError, io::InputName(p), static_cast<int>(problem.line), "",
                           "", "",
                           problem.line ? "not YAML text: " + problem.reason
                                        : "cannot read file: " + problem.reason});
      continue;
    }
    LoadText(std::make_shared<const std::string>(std::move(text)), io::InputName(p), &out);
  }
  ResolvePodGroups(&out.set);
  ResolveFlavors(&out.set);
  ValidateManifestSet(out.set, &out.locator, &out.diagnostics);
  return out;
}

}  // namespace arbiter::yaml
