#include "adapters/prometheus/metering_config.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace arbiter::prometheus {

Status ValidateMeteringConfig(const MeteringConfig& c) {
  billing::MeterConfig m;
  m.scrape_interval = c.scrape_interval;
  if (Status s = billing::ValidateMeterConfig(m); !s.ok())
    return Status::Error("scrapeInterval: " + s.message());
  if (c.page < c.scrape_interval || c.page % c.scrape_interval != 0)
    return Status::Error("page " + FormatDuration(c.page) +
                         " must be a multiple of scrapeInterval " +
                         FormatDuration(c.scrape_interval));
  if (c.page / c.scrape_interval > 11000)
    return Status::Error("page " + FormatDuration(c.page) + " holds more than 11000 points of " +
                         FormatDuration(c.scrape_interval) +
                         " (Prometheus' limit per series); use a shorter page");
  if (c.request_gap_bridge < 0) return Status::Error("requestGapBridge must not be negative");
  if (c.timeout < 1000) return Status::Error("timeout must be at least 1s");
  if (c.retries < 0 || c.retries > 20) return Status::Error("retries must be between 0 and 20");
  for (const std::string* name : {&c.pod_phase, &c.pod_info, &c.requests, &c.node_labels,
                                  &c.cpu_usage, &c.memory_usage, &c.gpu_usage})
    if (name->empty()) return Status::Error("a series name is empty");
  for (const std::string* label :
       {&c.label_namespace, &c.label_pod, &c.label_container, &c.label_node, &c.label_resource,
        &c.label_mig_profile, &c.label_gpu_product, &c.label_gpu_replicas, &c.label_gpu_device,
        &c.label_mig_instance})
    if (label->empty()) return Status::Error("a label name is empty");
  return Status::Ok();
}

namespace {

size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return d[b.size()];
}

std::string Unknown(const std::string& where, const std::string& key,
                    const std::vector<std::string>& known) {
  std::string best;
  size_t bd = 4;
  for (const auto& k : known) {
    size_t d = Distance(key, k);
    if (d < bd) bd = d, best = k;
  }
  return where + ": unknown field \"" + key + "\"" +
         (best.empty() ? "" : "; did you mean \"" + best + "\"?");
}

struct Reader {
  std::string path;
  std::string err;
  bool Fail(const YAML::Node& n, const std::string& msg) {
    if (err.empty()) err = path + ":" + std::to_string(n.Mark().line + 1) + ": " + msg;
    return false;
  }
  bool Str(const YAML::Node& n, const std::string& field, std::string* out) {
    if (!n.IsScalar()) return Fail(n, field + ": must be a string");
    *out = n.as<std::string>();
    return true;
  }
  bool Dur(const YAML::Node& n, const std::string& field, Millis* out) {
    if (!n.IsScalar()) return Fail(n, field + ": must be a duration like 30s");
    auto d = ParseDuration(n.as<std::string>());
    if (!d.ok()) return Fail(n, field + ": " + d.message());
    *out = *d;
    return true;
  }
  // Reads a map of string fields; unknown keys are errors.
  bool Fields(const YAML::Node& n, const std::string& where,
              const std::map<std::string, std::string*>& fields) {
    if (!n.IsMap()) return Fail(n, where + ": must be a mapping");
    std::vector<std::string> known;
    for (const auto& [k, v] : fields) known.push_back(k);
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.as<std::string>();
      auto f = fields.find(k);
      if (f == fields.end()) return Fail(it->first, Unknown(where, k, known));
      if (!Str(it->second, where + "." + k, f->second)) return false;
    }
    return true;
  }
};

// kind, apiVersion and the top-level fields of a PrometheusMetering document.
Status CheckMeteringDocument(YAML::Node doc, const std::string& path) {
  if (!doc.IsMap())
    return Status::Error(path + ": expected a PrometheusMetering document (a mapping)");
  std::string api, kind;
  if (doc["apiVersion"]) api = doc["apiVersion"].as<std::string>();
  if (doc["kind"]) kind = doc["kind"].as<std::string>();
  if (kind != "PrometheusMetering")
    return Status::Error(path + ": kind must be PrometheusMetering (got \"" + kind + "\")");
  if (api != "arbiter.dev/v1alpha1")
    return Status::Error(path + ": apiVersion must be arbiter.dev/v1alpha1");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (k != "apiVersion" && k != "kind" && k != "metadata" && k != "spec")
      return Status::Error(
          path + ":" + std::to_string(it->first.Mark().line + 1) + ": " +
          Unknown("PrometheusMetering", k, {"apiVersion", "kind", "metadata", "spec"}));
  }
  return Status::Ok();
}

// spec.retries: a whole number 0..20.
bool ReadRetries(Reader& r, const YAML::Node& v, MeteringConfig& c) {
  std::string t;
  if (!r.Str(v, "spec.retries", &t)) return false;
  if (t.empty() || t.size() > 2 || t.find_first_not_of("0123456789") != std::string::npos)
    return r.Fail(v, "spec.retries: must be a whole number between 0 and 20");
  c.retries = std::stoi(t);
  return true;
}

// spec.gpuUsage: {metric, scale: Ratio | Percent}.
bool ReadGpuUsage(Reader& r, const YAML::Node& v, MeteringConfig& c) {
  std::string scale = "Ratio";
  bool ok = r.Fields(v, "spec.gpuUsage", {{"metric", &c.gpu_usage}, {"scale", &scale}});
  if (ok && scale != "Ratio" && scale != "Percent")
    ok = r.Fail(v["scale"], "spec.gpuUsage.scale: must be Ratio (0..1) or Percent (0..100)");
  c.gpu_percent = scale == "Percent";
  return ok;
}

// spec.resources: KSM resource label -> resource name.
bool ReadResourceNames(Reader& r, const YAML::Node& v, MeteringConfig& c) {
  if (!v.IsMap())
    return r.Fail(v, "spec.resources: must map KSM resource labels to resource names");
  bool ok = true;
  for (auto jt = v.begin(); jt != v.end() && ok; ++jt) {
    std::string name;
    ok = r.Str(jt->second, "spec.resources." + jt->first.as<std::string>(), &name);
    if (ok) c.resources[jt->first.as<std::string>()] = name;
  }
  return ok;
}

// One field of spec (key: value) into c; false with r.err when it is wrong.
bool ReadMeteringSpecField(Reader& r, const YAML::Node& key, const YAML::Node& v,
                           MeteringConfig& c) {
  static const std::vector<std::string> known = {
      "scrapeInterval", "page",   "requestGapBridge", "timeout", "retries",
      "selector",       "series", "gpuUsage",         "labels",  "resources"};
  const std::string k = key.as<std::string>();
  if (k == "scrapeInterval") return r.Dur(v, "spec.scrapeInterval", &c.scrape_interval);
  if (k == "page") return r.Dur(v, "spec.page", &c.page);
  if (k == "requestGapBridge") return r.Dur(v, "spec.requestGapBridge", &c.request_gap_bridge);
  if (k == "timeout") return r.Dur(v, "spec.timeout", &c.timeout);
  if (k == "retries") return ReadRetries(r, v, c);
  if (k == "selector") return r.Str(v, "spec.selector", &c.selector);
  if (k == "series")
    return r.Fields(v, "spec.series",
                    {{"podPhase", &c.pod_phase},
                     {"podInfo", &c.pod_info},
                     {"requests", &c.requests},
                     {"nodeLabels", &c.node_labels},
                     {"cpuUsage", &c.cpu_usage},
                     {"memoryUsage", &c.memory_usage}});
  if (k == "gpuUsage") return ReadGpuUsage(r, v, c);
  if (k == "labels")
    return r.Fields(v, "spec.labels",
                    {{"namespace", &c.label_namespace},
                     {"pod", &c.label_pod},
                     {"container", &c.label_container},
                     {"node", &c.label_node},
                     {"resource", &c.label_resource},
                     {"migProfile", &c.label_mig_profile},
                     {"gpuProduct", &c.label_gpu_product},
                     {"gpuReplicas", &c.label_gpu_replicas},
                     {"gpuDevice", &c.label_gpu_device},
                     {"migInstance", &c.label_mig_instance}});
  if (k == "resources") return ReadResourceNames(r, v, c);
  return r.Fail(key, Unknown("spec", k, known));
}

}  // namespace

Result<MeteringConfig> LoadMeteringConfig(const std::string& path) {
  using R = Result<MeteringConfig>;
  MeteringConfig c;
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return R::Error(path + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    return R::Error(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  Reader r{path, ""};
  try {
    if (Status s = CheckMeteringDocument(doc, path); !s.ok()) return R::Error(s.message());
    YAML::Node spec = doc["spec"];
    if (spec) {
      if (!spec.IsMap()) return R::Error(path + ": spec must be a mapping");
      for (auto it = spec.begin(); it != spec.end(); ++it)
        if (!ReadMeteringSpecField(r, it->first, it->second, c)) return R::Error(r.err);
    }
  } catch (const YAML::Exception& e) {
    return R::Error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (Status s = ValidateMeteringConfig(c); !s.ok()) return R::Error(path + ": " + s.message());
  return c;
}

std::string ResourceFromKsmLabel(std::string_view label, const MeteringConfig& c) {
  if (auto it = c.resources.find(std::string(label)); it != c.resources.end()) return it->second;
  if (label == "cpu" || label == "memory") return std::string(label);
  if (label == "ephemeral_storage") return "ephemeral-storage";
  if (label == "nvidia_com_gpu") return "nvidia.com/gpu";
  if (label == "nvidia_com_gpu_shared") return "nvidia.com/gpu.shared";
  constexpr std::string_view kMig = "nvidia_com_mig_";
  if (label.substr(0, kMig.size()) == kMig) {
    // <g>g_<m>gb[_me]: "1g_10gb" -> "1g.10gb", "1g_10gb_me" -> "1g.10gb+me"
    std::string p(label.substr(kMig.size()));
    size_t u = p.find('_');
    if (u != std::string::npos) {
      p[u] = '.';
      size_t me = p.find("_me");
      if (me != std::string::npos && me + 3 == p.size()) p.replace(me, 3, "+me");
      return "nvidia.com/mig-" + p;
    }
  }
  constexpr std::string_view kHuge = "hugepages_";
  if (label.substr(0, kHuge.size()) == kHuge)
    return "hugepages-" + std::string(label.substr(kHuge.size()));
  return std::string(label);
}

}  // namespace arbiter::prometheus
