#include "adapters/kube/protobuf_body.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>

namespace arbiter::kube {
namespace {

using json = nlohmann::json;

struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// One field of a message: its number, wire type, and value (varint, or the bytes of a
// length-delimited or fixed-width field).
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  std::string_view bytes;
};

// Reads the fields of one message in order; throws Malformed on truncated or invalid input.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool Done() const { return pos_ == data_.size(); }

  Field Next() {
    const uint64_t key = Varint();
    Field f;
    f.wire = static_cast<uint32_t>(key & 7);
    const uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffff)
      throw Malformed("invalid field number " + std::to_string(number));
    f.number = static_cast<uint32_t>(number);
    switch (f.wire) {
      case kVarint:
        f.varint = Varint();
        break;
      case kFixed64:
        f.bytes = Take(8);
        break;
      case kFixed32:
        f.bytes = Take(4);
        break;
      case kBytes: {
        const uint64_t n = Varint();
        if (n > data_.size() - pos_)
          throw Malformed("field " + std::to_string(f.number) + " is truncated");
        f.bytes = Take(static_cast<size_t>(n));
        break;
      }
      default:
        throw Malformed("field " + std::to_string(f.number) + " has unsupported wire type " +
                        std::to_string(f.wire));
    }
    return f;
  }

  // A bare varint (an element of a packed repeated field).
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) throw Malformed("truncated varint");
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw Malformed("varint longer than 10 bytes");
  }

 private:
  std::string_view Take(size_t n) {
    if (n > data_.size() - pos_) throw Malformed("truncated field");
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// Calls `on` for every field of `msg`.
void Each(std::string_view msg, const std::function<void(const Field&)>& on) {
  Reader r(msg);
  while (!r.Done()) on(r.Next());
}

void Want(const Field& f, uint32_t wire, const char* name) {
  if (f.wire != wire)
    throw Malformed(std::string(name) + " (field " + std::to_string(f.number) + ") has wire type " +
                    std::to_string(f.wire) + ", want " + std::to_string(wire));
}

// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF), as
// JSON strings must be: the JSON path's parser refuses the rest, and so does this decoder.
bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (n > s.size() - i - 1) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = cp << 6 | (cc & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

std::string Str(const Field& f, const char* name) {
  Want(f, kBytes, name);
  if (!ValidUtf8(f.bytes))
    throw Malformed(std::string(name) + " (field " + std::to_string(f.number) +
                    ") is not valid UTF-8");
  return std::string(f.bytes);
}

int64_t Int(const Field& f, const char* name) {
  Want(f, kVarint, name);
  return static_cast<int64_t>(f.varint);
}

// Sets obj[key] to a non-empty string (JSON omitempty).
void SetStr(json& obj, const char* key, const Field& f) {
  std::string s = Str(f, key);
  if (!s.empty()) obj[key] = std::move(s);
}

// A map<string, V> entry {1 key, 2 value}; `value` decodes the value field.
void MapEntry(json& map, const Field& f, const char* name,
              const std::function<json(const Field&)>& value) {
  Want(f, kBytes, name);
  std::string key;
  json v = value(Field{2, kBytes, 0, {}});
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) key = Str(e, name);
    if (e.number == 2) v = value(e);
  });
  map[key] = std::move(v);
}

json StringValue(const Field& f) { return Str(f, "map value"); }

// resource.Quantity {1 string}, a map value.
json QuantityValue(const Field& q) {
  std::string s;
  Want(q, kBytes, "quantity");
  Each(q.bytes, [&](const Field& g) {
    if (g.number == 1) s = Str(g, "quantity");
  });
  return s;
}

json ObjectMeta(std::string_view msg) {
  json m = json::object();
  Each(msg, [&](const Field& f) {
    switch (f.number) {
      case 1:
        return SetStr(m, "name", f);
      case 2:
        return SetStr(m, "generateName", f);
      case 3:
        return SetStr(m, "namespace", f);
      case 11:
        return MapEntry(m["labels"], f, "labels", StringValue);
      case 12:
        return MapEntry(m["annotations"], f, "annotations", StringValue);
      case 14:
        m["finalizers"].push_back(Str(f, "finalizers"));
        return;
      default:
        return;
    }
  });
  return m;
}

// LabelSelectorRequirement {1 key, 2 operator, 3 values} and ScopedResourceSelectorRequirement
// {1 scopeName, 2 operator, 3 values} share a layout; `first` names field 1.
json Requirement(const Field& f, const char* first) {
  Want(f, kBytes, "matchExpressions");
  json r = json::object();
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) r[first] = Str(e, first);
    if (e.number == 2) r["operator"] = Str(e, "operator");
    if (e.number == 3) r["values"].push_back(Str(e, "values"));
  });
  return r;
}

json LabelSelectorJson(const Field& f) {
  Want(f, kBytes, "selector");
  json s = json::object();
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) MapEntry(s["matchLabels"], e, "matchLabels", StringValue);
    if (e.number == 2) s["matchExpressions"].push_back(Requirement(e, "key"));
  });
  return s;
}

// IntOrString {1 type (0 int, 1 string), 2 intVal, 3 strVal}.
json IntOrString(const Field& f, const char* name) {
  Want(f, kBytes, name);
  int64_t type = 0;
  int32_t int_val = 0;
  std::string str_val;
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) type = Int(e, name);
    if (e.number == 2) int_val = static_cast<int32_t>(Int(e, name));
    if (e.number == 3) str_val = Str(e, name);
  });
  if (type == 1) return str_val;
  if (type != 0)
    throw Malformed(std::string(name) + " has IntOrString type " + std::to_string(type));
  return int_val;
}

// Namespace {1 metadata, 2 spec {1 finalizers}, 3 status}.
void Namespace(const Field& f, json& obj) {
  if (f.number != 2) return;
  Want(f, kBytes, "spec");
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) obj["spec"]["finalizers"].push_back(Str(e, "spec.finalizers"));
  });
}

// ResourceQuota {1 metadata, 2 spec {1 hard map<string, Quantity {1 string}>, 2 scopes,
// 3 scopeSelector {1 matchExpressions}}, 3 status}.
void ResourceQuota(const Field& f, json& obj) {
  if (f.number != 2) return;
  Want(f, kBytes, "spec");
  json& spec = obj["spec"] = json::object();
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) MapEntry(spec["hard"], e, "spec.hard", QuantityValue);
    if (e.number == 2) spec["scopes"].push_back(Str(e, "spec.scopes"));
    if (e.number == 3) {
      Want(e, kBytes, "spec.scopeSelector");
      json& sel = spec["scopeSelector"] = json::object();
      Each(e.bytes, [&](const Field& g) {
        if (g.number == 1) sel["matchExpressions"].push_back(Requirement(g, "scopeName"));
      });
    }
  });
}

// PriorityClass {1 metadata, 2 value, 3 globalDefault, 4 description, 5 preemptionPolicy}.
void PriorityClass(const Field& f, json& obj) {
  if (f.number == 2) obj["value"] = static_cast<int32_t>(Int(f, "value"));
  if (f.number == 3 && Int(f, "globalDefault") != 0) obj["globalDefault"] = true;
  if (f.number == 4) SetStr(obj, "description", f);
  if (f.number == 5) obj["preemptionPolicy"] = Str(f, "preemptionPolicy");
}

// PodDisruptionBudget {1 metadata, 2 spec {1 minAvailable, 2 selector, 3 maxUnavailable,
// 4 unhealthyPodEvictionPolicy}, 3 status}.
void PodDisruptionBudget(const Field& f, json& obj) {
  if (f.number != 2) return;
  Want(f, kBytes, "spec");
  json& spec = obj["spec"] = json::object();
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) spec["minAvailable"] = IntOrString(e, "spec.minAvailable");
    if (e.number == 2) spec["selector"] = LabelSelectorJson(e);
    if (e.number == 3) spec["maxUnavailable"] = IntOrString(e, "spec.maxUnavailable");
    if (e.number == 4)
      spec["unhealthyPodEvictionPolicy"] = Str(e, "spec.unhealthyPodEvictionPolicy");
  });
}

// SelfSubjectAccessReview {1 metadata, 2 spec {1 resourceAttributes {1 namespace, 2 verb,
// 3 group, 4 version, 5 resource, 6 subresource, 7 name}, 2 nonResourceAttributes {1 path,
// 2 verb}}, 3 status} (`kubectl auth can-i`; the selectors of resourceAttributes are skipped).
void SelfSubjectAccessReview(const Field& f, json& obj) {
  if (f.number != 2) return;
  Want(f, kBytes, "spec");
  json& spec = obj["spec"] = json::object();
  static constexpr const char* kResource[] = {"namespace", "verb",        "group", "version",
                                              "resource",  "subresource", "name"};
  Each(f.bytes, [&](const Field& e) {
    if (e.number != 1 && e.number != 2) return;
    Want(e, kBytes, "spec");
    const bool res = e.number == 1;
    json& a = spec[res ? "resourceAttributes" : "nonResourceAttributes"] = json::object();
    Each(e.bytes, [&](const Field& g) {
      if (res && g.number >= 1 && g.number <= 7) SetStr(a, kResource[g.number - 1], g);
      if (!res && g.number == 1) SetStr(a, "path", g);
      if (!res && g.number == 2) SetStr(a, "verb", g);
    });
  });
}

// SelfSubjectReview {1 metadata, 2 status}: nothing to read (`kubectl auth whoami`).
void SelfSubjectReview(const Field&, json&) {}

// DeleteOptions {1 gracePeriodSeconds, 2 preconditions {1 uid, 2 resourceVersion},
// 3 orphanDependents, 4 propagationPolicy, 5 dryRun, 6 ignoreStoreReadError...}: proto2
// optionals, so a field sent is a member even when empty ("" and 0 included, as Go's pointers
// are then non-nil); the JSON path decodes and checks the result.
json DeleteOptionsJson(std::string_view msg) {
  json o = json::object();
  Each(msg, [&](const Field& f) {
    switch (f.number) {
      case 1:
        o["gracePeriodSeconds"] = Int(f, "gracePeriodSeconds");
        return;
      case 2: {
        Want(f, kBytes, "preconditions");
        json& p = o["preconditions"];
        if (!p.is_object()) p = json::object();
        Each(f.bytes, [&](const Field& e) {
          if (e.number == 1) p["uid"] = Str(e, "preconditions.uid");
          if (e.number == 2) p["resourceVersion"] = Str(e, "preconditions.resourceVersion");
        });
        return;
      }
      case 3:
        o["orphanDependents"] = Int(f, "orphanDependents") != 0;
        return;
      case 4:
        o["propagationPolicy"] = Str(f, "propagationPolicy");
        return;
      case 5:
        o["dryRun"].push_back(Str(f, "dryRun"));
        return;
      case 6:
        o["ignoreStoreReadErrorWithClusterBreakingPotential"] =
            Int(f, "ignoreStoreReadErrorWithClusterBreakingPotential") != 0;
        return;
      default:
        return;
    }
  });
  return o;
}

// Eviction {1 metadata, 2 deleteOptions} (policy/v1, pods/eviction).
void Eviction(const Field& f, json& obj) {
  if (f.number != 2) return;
  Want(f, kBytes, "deleteOptions");
  obj["deleteOptions"] = DeleteOptionsJson(f.bytes);
}

// --- batch/v1 Job (`kubectl create job`) and the PodSpec it shares with v1 Pod ---
//
// gogo-protobuf writes every non-pointer field of a message, empty or not (a Container's
// terminationMessagePath "", its resources {}, a PodSpec's hostNetwork false, ...), and a pointer
// field only when it is set. So: a decoded non-pointer field that is empty is left out (JSON's
// omitempty); a decoded pointer field sent is a member even when 0, "" or false (`completions: 0`
// means something). A field of JobSpec, PodTemplateSpec, PodSpec, Container, ContainerPort,
// SecurityContext, EnvVar or ResourceRequirements that is not decoded refuses the body when it
// holds something (NotDecoded), rather than the object being created without it.

// Thrown for such a field: "PATH (field N) is not decoded". DecodeProtobufBody answers it as
// kUnsupportedKind (415, as kube-apiserver answers a body it cannot decode in that media type):
// the body is well-formed and the same object sent as JSON is accepted, so it is the media type,
// not the request, that the daemon refuses (a 400 would tell the client its object is wrong).
struct NotDecoded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How deep Empty looks into bytes it has no schema for; deeper, they count as a value.
constexpr int kMaxEmptyDepth = 16;

// Whether a field without a schema holds nothing: a zero varint or fixed-width value, empty
// bytes, or bytes that parse as a message all of whose fields hold nothing (an empty struct as
// gogo writes it: its strings "", its ints 0, its structs the same, kMaxEmptyDepth levels down).
// A string that happens to parse so (e.g. "\x08\x00") counts as empty; no real value does.
bool Empty(const Field& f, int depth = 0) {
  if (f.wire == kVarint) return f.varint == 0;
  if (f.wire != kBytes) return f.bytes.find_first_not_of('\0') == std::string_view::npos;
  if (f.bytes.empty()) return true;
  if (depth >= kMaxEmptyDepth) return false;
  try {
    Reader r(f.bytes);
    while (!r.Done())
      if (!Empty(r.Next(), depth + 1)) return false;
    return true;
  } catch (const Malformed&) {
    return false;  // not a message: a non-empty string or bytes
  }
}

// A field a message's decoder leaves out: its JSON name, and whether it is a pointer to a scalar
// (*bool, *string: sent only when set, so sent at all is a value, false and "" included).
struct Skipped {
  uint32_t number;
  const char* name;
  bool pointer = false;
};

// Refuses `f` (a field of the message at `path` that is not decoded) unless it holds nothing.
// A field number not in `skipped` (newer than the .proto read) is named by its number only.
template <size_t N>
void Undecoded(const Field& f, const std::string& path, const Skipped (&skipped)[N]) {
  const Skipped* s = nullptr;
  for (const Skipped& k : skipped)
    if (k.number == f.number) s = &k;
  if (!(s && s->pointer) && Empty(f)) return;
  throw NotDecoded((s ? path + "." + s->name : path) + " (field " + std::to_string(f.number) +
                   ") is not decoded");
}
void Undecoded(const Field& f, const std::string& path) {
  if (!Empty(f))
    throw NotDecoded(path + " (field " + std::to_string(f.number) + ") is not decoded");
}

// EnvVar {1 name, 2 value, 3 valueFrom}.
json EnvVar(const Field& f, const std::string& path) {
  Want(f, kBytes, "env");
  json v = {{"name", ""}};  // `json:"name"`: always a member
  static constexpr Skipped kSkipped[] = {{3, "valueFrom"}};
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1)
      v["name"] = Str(e, "env.name");
    else if (e.number == 2)
      SetStr(v, "value", e);
    else
      Undecoded(e, path, kSkipped);
  });
  return v;
}

// ResourceRequirements {1 limits, 2 requests: map<string, Quantity>, 3 claims}; left out empty.
void Resources(json& container, const Field& f, const std::string& path) {
  Want(f, kBytes, "resources");
  json r = json::object();
  static constexpr Skipped kSkipped[] = {{3, "claims"}};
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1)
      MapEntry(r["limits"], e, "resources.limits", QuantityValue);
    else if (e.number == 2)
      MapEntry(r["requests"], e, "resources.requests", QuantityValue);
    else
      Undecoded(e, path, kSkipped);
  });
  if (!r.empty()) container["resources"] = std::move(r);
}

// ContainerPort {1 name, 2 hostPort, 3 containerPort, 4 protocol, 5 hostIP}: containerPort has no
// omitempty (always a member), the others are left out empty.
json ContainerPort(const Field& f, const std::string& path) {
  Want(f, kBytes, "ports");
  json p = {{"containerPort", 0}};
  Each(f.bytes, [&](const Field& e) {
    switch (e.number) {
      case 1:
        return SetStr(p, "name", e);
      case 2:
        if (const auto port = static_cast<int32_t>(Int(e, "hostPort")); port != 0)
          p["hostPort"] = port;
        return;
      case 3:
        p["containerPort"] = static_cast<int32_t>(Int(e, "containerPort"));
        return;
      case 4:
        return SetStr(p, "protocol", e);
      case 5:
        return SetStr(p, "hostIP", e);
      default:
        return Undecoded(e, path);
    }
  });
  return p;
}

// SecurityContext (a pointer: a member whenever sent, {} included): 2 privileged (*bool, a member
// whenever sent); the others are refused when they hold a value (the *bool, *int64 and *string
// ones whenever sent).
json SecurityContext(const Field& f, const std::string& path) {
  Want(f, kBytes, "securityContext");
  json s = json::object();
  static constexpr Skipped kSkipped[] = {{1, "capabilities"},
                                         {3, "seLinuxOptions"},
                                         {4, "runAsUser", true},
                                         {5, "runAsNonRoot", true},
                                         {6, "readOnlyRootFilesystem", true},
                                         {7, "allowPrivilegeEscalation", true},
                                         {8, "runAsGroup", true},
                                         {9, "procMount", true},
                                         {10, "windowsOptions"},
                                         {11, "seccompProfile"},
                                         {12, "appArmorProfile"}};
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 2)
      s["privileged"] = Int(e, "privileged") != 0;
    else
      Undecoded(e, path, kSkipped);
  });
  return s;
}

constexpr Skipped kContainerSkipped[] = {{9, "volumeMounts"},
                                         {10, "livenessProbe"},
                                         {11, "readinessProbe"},
                                         {12, "lifecycle"},
                                         {13, "terminationMessagePath"},
                                         {19, "envFrom"},
                                         {20, "terminationMessagePolicy"},
                                         {21, "volumeDevices"},
                                         {22, "startupProbe"},
                                         {23, "resizePolicy"},
                                         {24, "restartPolicy", true},
                                         {25, "restartPolicyRules"}};

// Container {1 name, 2 image, 3 command, 4 args, 5 workingDir, 6 ports, 7 env, 8 resources,
// 14 imagePullPolicy, 15 securityContext, 16 stdin, 17 stdinOnce, 18 tty (bools, left out
// false)}; the others (kContainerSkipped) are refused when set.
json Container(const Field& f, const std::string& path) {
  Want(f, kBytes, "containers");
  json c = {{"name", ""}};  // `json:"name"`: always a member
  size_t env = 0, ports = 0;
  auto flag = [&](const Field& e, const char* key) {
    if (Int(e, key) != 0) c[key] = true;
  };
  Each(f.bytes, [&](const Field& e) {
    switch (e.number) {
      case 1:
        c["name"] = Str(e, "name");
        return;
      case 2:
        return SetStr(c, "image", e);
      case 3:
        c["command"].push_back(Str(e, "command"));
        return;
      case 4:
        c["args"].push_back(Str(e, "args"));
        return;
      case 5:
        return SetStr(c, "workingDir", e);
      case 6:
        c["ports"].push_back(ContainerPort(e, path + ".ports[" + std::to_string(ports++) + "]"));
        return;
      case 7:
        c["env"].push_back(EnvVar(e, path + ".env[" + std::to_string(env++) + "]"));
        return;
      case 8:
        return Resources(c, e, path + ".resources");
      case 14:
        return SetStr(c, "imagePullPolicy", e);
      case 15:
        c["securityContext"] = SecurityContext(e, path + ".securityContext");
        return;
      case 16:
        return flag(e, "stdin");
      case 17:
        return flag(e, "stdinOnce");
      case 18:
        return flag(e, "tty");
      default:
        return Undecoded(e, path, kContainerSkipped);
    }
  });
  return c;
}

// Toleration {1 key, 2 operator, 3 value, 4 effect, 5 tolerationSeconds (*int64)}.
json Toleration(const Field& f) {
  Want(f, kBytes, "tolerations");
  json t = json::object();
  static constexpr const char* kNames[] = {"key", "operator", "value", "effect"};
  Each(f.bytes, [&](const Field& e) {
    if (e.number >= 1 && e.number <= 4) SetStr(t, kNames[e.number - 1], e);
    if (e.number == 5) t["tolerationSeconds"] = Int(e, "tolerationSeconds");
  });
  return t;
}

constexpr Skipped kPodSpecSkipped[] = {{1, "volumes"},
                                       {9, "serviceAccount"},
                                       {11, "hostNetwork"},
                                       {12, "hostPID"},
                                       {13, "hostIPC"},
                                       {14, "securityContext"},
                                       {15, "imagePullSecrets"},
                                       {16, "hostname"},
                                       {17, "subdomain"},
                                       {18, "affinity"},
                                       {21, "automountServiceAccountToken", true},
                                       {23, "hostAliases"},
                                       {26, "dnsConfig"},
                                       {27, "shareProcessNamespace", true},
                                       {28, "readinessGates"},
                                       {29, "runtimeClassName", true},
                                       {30, "enableServiceLinks", true},
                                       {32, "overhead"},
                                       {33, "topologySpreadConstraints"},
                                       {34, "ephemeralContainers"},
                                       {35, "setHostnameAsFQDN", true},
                                       {36, "os"},
                                       {37, "hostUsers", true},
                                       {38, "schedulingGates"},
                                       {39, "resourceClaims"},
                                       {40, "resources"},
                                       {41, "hostnameOverride", true},
                                       {43, "schedulingGroup"}};

// PodSpec (a Pod's spec, a Job's spec.template.spec: `path`): 2 containers, 20 initContainers,
// 3 restartPolicy, 4 terminationGracePeriodSeconds (*int64), 5 activeDeadlineSeconds (*int64),
// 6 dnsPolicy, 7 nodeSelector, 8 serviceAccountName, 10 nodeName, 19 schedulerName,
// 22 tolerations, 24 priorityClassName, 25 priority (*int32), 31 preemptionPolicy (*string); the
// others (kPodSpecSkipped) are refused when set.
json PodSpec(const Field& f, const std::string& path) {
  Want(f, kBytes, path.c_str());
  json s = json::object();
  size_t containers = 0, init = 0;
  Each(f.bytes, [&](const Field& e) {
    switch (e.number) {
      case 2:
        s["containers"].push_back(
            Container(e, path + ".containers[" + std::to_string(containers++) + "]"));
        return;
      case 20:
        s["initContainers"].push_back(
            Container(e, path + ".initContainers[" + std::to_string(init++) + "]"));
        return;
      case 3:
        return SetStr(s, "restartPolicy", e);
      case 4:
        s["terminationGracePeriodSeconds"] = Int(e, "terminationGracePeriodSeconds");
        return;
      case 5:
        s["activeDeadlineSeconds"] = Int(e, "activeDeadlineSeconds");
        return;
      case 6:
        return SetStr(s, "dnsPolicy", e);
      case 7:
        return MapEntry(s["nodeSelector"], e, "nodeSelector", StringValue);
      case 8:
        return SetStr(s, "serviceAccountName", e);
      case 10:
        return SetStr(s, "nodeName", e);
      case 19:
        return SetStr(s, "schedulerName", e);
      case 22:
        s["tolerations"].push_back(Toleration(e));
        return;
      case 24:
        return SetStr(s, "priorityClassName", e);
      case 25:
        s["priority"] = static_cast<int32_t>(Int(e, "priority"));
        return;
      case 31:
        s["preemptionPolicy"] = Str(e, "preemptionPolicy");
        return;
      default:
        return Undecoded(e, path, kPodSpecSkipped);
    }
  });
  return s;
}

// PodTemplateSpec {1 metadata, 2 spec}: both always members (`json:"template"`, a struct).
json PodTemplate(const Field& f, const std::string& path) {
  Want(f, kBytes, "template");
  json t = {{"metadata", json::object()}, {"spec", json::object()}};
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) {
      Want(e, kBytes, "template.metadata");
      t["metadata"] = ObjectMeta(e.bytes);
    } else if (e.number == 2) {
      t["spec"] = PodSpec(e, path + ".spec");
    } else {
      Undecoded(e, path);
    }
  });
  return t;
}

// PodFailurePolicyOnExitCodesRequirement {1 containerName (*string), 2 operator, 3 values
// (repeated int32, unpacked as gogo writes it, or packed)}.
json OnExitCodes(const Field& f) {
  Want(f, kBytes, "onExitCodes");
  json c = {{"operator", ""}, {"values", json::array()}};  // no omitempty: always members
  Each(f.bytes, [&](const Field& e) {
    if (e.number == 1) c["containerName"] = Str(e, "containerName");
    if (e.number == 2) c["operator"] = Str(e, "operator");
    if (e.number == 3 && e.wire == kBytes) {
      for (Reader r(e.bytes); !r.Done();) c["values"].push_back(static_cast<int32_t>(r.Varint()));
    } else if (e.number == 3) {
      c["values"].push_back(static_cast<int32_t>(Int(e, "values")));
    }
  });
  return c;
}

// PodFailurePolicy {1 rules {1 action, 2 onExitCodes, 3 onPodConditions {1 type, 2 status}}};
// action, type and status have no omitempty: always members.
json PodFailurePolicy(const Field& f) {
  Want(f, kBytes, "podFailurePolicy");
  json p = json::object();
  Each(f.bytes, [&](const Field& r) {
    if (r.number != 1) return;
    Want(r, kBytes, "podFailurePolicy.rules");
    json rule = {{"action", ""}};
    Each(r.bytes, [&](const Field& e) {
      if (e.number == 1) rule["action"] = Str(e, "action");
      if (e.number == 2) rule["onExitCodes"] = OnExitCodes(e);
      if (e.number != 3) return;
      Want(e, kBytes, "onPodConditions");
      json cond = {{"type", ""}, {"status", ""}};
      Each(e.bytes, [&](const Field& g) {
        if (g.number == 1) cond["type"] = Str(g, "type");
        if (g.number == 2) cond["status"] = Str(g, "status");
      });
      rule["onPodConditions"].push_back(std::move(cond));
    });
    p["rules"].push_back(std::move(rule));
  });
  return p;
}

// SuccessPolicy {1 rules {1 succeededIndexes (*string), 2 succeededCount (*int32)}}.
json SuccessPolicy(const Field& f) {
  Want(f, kBytes, "successPolicy");
  json p = json::object();
  Each(f.bytes, [&](const Field& r) {
    if (r.number != 1) return;
    Want(r, kBytes, "successPolicy.rules");
    json rule = json::object();
    Each(r.bytes, [&](const Field& e) {
      if (e.number == 1) rule["succeededIndexes"] = Str(e, "succeededIndexes");
      if (e.number == 2) rule["succeededCount"] = static_cast<int32_t>(Int(e, "succeededCount"));
    });
    p["rules"].push_back(std::move(rule));
  });
  return p;
}

// JobSpec {1 parallelism, 2 completions, 3 activeDeadlineSeconds, 4 selector, 5 manualSelector,
// 6 template, 7 backoffLimit, 8 ttlSecondsAfterFinished, 9 completionMode, 10 suspend,
// 11 podFailurePolicy, 12 backoffLimitPerIndex, 13 maxFailedIndexes, 14 podReplacementPolicy,
// 15 managedBy, 16 successPolicy}: every field but template is a pointer in Go, so a member
// whenever sent (0, false and "" included); template is always a member (`json:"template"`).
json JobSpec(const Field& f) {
  Want(f, kBytes, "spec");
  json s = {{"template", {{"metadata", json::object()}, {"spec", json::object()}}}};
  auto int32 = [&](const Field& e, const char* key) { s[key] = static_cast<int32_t>(Int(e, key)); };
  Each(f.bytes, [&](const Field& e) {
    switch (e.number) {
      case 1:
        return int32(e, "parallelism");
      case 2:
        return int32(e, "completions");
      case 3:
        s["activeDeadlineSeconds"] = Int(e, "activeDeadlineSeconds");
        return;
      case 4:
        s["selector"] = LabelSelectorJson(e);
        return;
      case 5:
        s["manualSelector"] = Int(e, "manualSelector") != 0;
        return;
      case 6:
        s["template"] = PodTemplate(e, "spec.template");
        return;
      case 7:
        return int32(e, "backoffLimit");
      case 8:
        return int32(e, "ttlSecondsAfterFinished");
      case 9:
        s["completionMode"] = Str(e, "completionMode");
        return;
      case 10:
        s["suspend"] = Int(e, "suspend") != 0;
        return;
      case 11:
        s["podFailurePolicy"] = PodFailurePolicy(e);
        return;
      case 12:
        return int32(e, "backoffLimitPerIndex");
      case 13:
        return int32(e, "maxFailedIndexes");
      case 14:
        s["podReplacementPolicy"] = Str(e, "podReplacementPolicy");
        return;
      case 15:
        s["managedBy"] = Str(e, "managedBy");
        return;
      case 16:
        s["successPolicy"] = SuccessPolicy(e);
        return;
      default:
        return Undecoded(e, "spec");
    }
  });
  return s;
}

// Job {1 metadata, 2 spec, 3 status (skipped)}.
void Job(const Field& f, json& obj) {
  if (f.number == 2) obj["spec"] = JobSpec(f);
}

// --- v1 Pod (`kubectl debug --copy-to`, client-go's typed clients) ---

// Pod {1 metadata, 2 spec (PodSpec, decoded as a Job's pod template's), 3 status (skipped)}.
void Pod(const Field& f, json& obj) {
  if (f.number == 2) obj["spec"] = PodSpec(f, "spec");
}

// The runtime.Unknown envelope after the magic: typeMeta, raw; a contentEncoding is refused.
struct Envelope {
  std::string api_version, kind, encoding;
  std::string_view raw;
};

Envelope Open(std::string_view bytes) {
  Envelope e;
  Each(bytes.substr(4), [&](const Field& f) {
    if (f.number == 1) {
      Want(f, kBytes, "typeMeta");
      Each(f.bytes, [&](const Field& t) {
        if (t.number == 1) e.api_version = Str(t, "apiVersion");
        if (t.number == 2) e.kind = Str(t, "kind");
      });
    }
    if (f.number == 2) {
      Want(f, kBytes, "raw");
      e.raw = f.bytes;
    }
    if (f.number == 3) e.encoding = Str(f, "contentEncoding");
  });
  return e;
}

constexpr std::string_view kMagic("k8s\0", 4);
constexpr char kNoMagic[] =
    "the protobuf body does not start with the Kubernetes magic bytes \"k8s\\0\"";

struct Kind {
  const char* api_version;
  const char* kind;
  void (*field)(const Field&, json&);  // fields other than 1 (metadata)
};

constexpr Kind kKinds[] = {
    {"v1", "Namespace", Namespace},
    {"v1", "ResourceQuota", ResourceQuota},
    {"scheduling.k8s.io/v1", "PriorityClass", PriorityClass},
    {"policy/v1", "PodDisruptionBudget", PodDisruptionBudget},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", SelfSubjectAccessReview},
    {"authentication.k8s.io/v1", "SelfSubjectReview", SelfSubjectReview},
    {"policy/v1", "Eviction", Eviction},
    {"batch/v1", "Job", Job},
    {"v1", "Pod", Pod},
};

}  // namespace

std::string ProtobufKinds() {
  std::string out;
  for (const Kind& k : kKinds) {
    if (!out.empty()) out += ", ";
    out += std::string(k.kind) + " (" + k.api_version + ")";
  }
  return out;
}

namespace {

// A body's envelope (the magic, then a runtime.Unknown); nullopt, with `out`'s error set, without
// the magic or with a contentEncoding. Throws Malformed as Open does.
std::optional<Envelope> OpenPlain(std::string_view bytes, ProtobufBody& out) {
  if (bytes.substr(0, 4) != kMagic) {
    out.error = ProtobufBody::Error::kMalformed;
    out.message = kNoMagic;
    return std::nullopt;
  }
  Envelope e = Open(bytes);
  if (!e.encoding.empty()) {
    out.error = ProtobufBody::Error::kUnsupportedKind;
    out.message = "protobuf bodies with contentEncoding \"" + e.encoding + "\" are not supported";
    return std::nullopt;
  }
  return e;
}

}  // namespace

ProtobufBody DecodeProtobufBody(std::string_view bytes) {
  ProtobufBody out;
  const Kind* known = nullptr;
  try {
    const std::optional<Envelope> e = OpenPlain(bytes, out);
    if (!e) return out;
    const std::string &api_version = e->api_version, &kind = e->kind;
    const std::string_view raw = e->raw;
    for (const Kind& k : kKinds)
      if (kind == k.kind && api_version == k.api_version) known = &k;
    if (!known) {
      out.error = ProtobufBody::Error::kUnsupportedKind;
      out.message = "protobuf bodies of " + (kind.empty() ? std::string("no kind") : kind) +
                    (api_version.empty() ? "" : " (" + api_version + ")") +
                    " are not supported; decoded kinds: " + ProtobufKinds() +
                    "; send other kinds as application/json";
      return out;
    }
    json obj = {{"apiVersion", api_version}, {"kind", kind}};
    obj["metadata"] = json::object();
    Each(raw, [&](const Field& f) {
      if (f.number == 1) {
        Want(f, kBytes, "metadata");
        obj["metadata"] = ObjectMeta(f.bytes);
      } else {
        known->field(f, obj);
      }
    });
    out.object = std::move(obj);
  } catch (const Malformed& e) {
    out.error = ProtobufBody::Error::kMalformed;
    out.message = std::string("the protobuf body is malformed: ") + e.what();
  } catch (const NotDecoded& e) {  // a field holding a value this decoder would lose: 415
    out.error = ProtobufBody::Error::kUnsupportedKind;
    out.message = std::string("protobuf bodies of ") + known->kind + " (" + known->api_version +
                  "): " + e.what() + "; send the object as JSON (kubectl create -f FILE)";
  }
  return out;
}

ProtobufBody DecodeProtobufDeleteOptions(std::string_view bytes) {
  ProtobufBody out;
  if (bytes.empty()) {
    out.object = json::object();
    return out;
  }
  try {
    const std::optional<Envelope> e = OpenPlain(bytes, out);
    if (!e) return out;
    if (!e->kind.empty() && e->kind != "DeleteOptions") {
      out.error = ProtobufBody::Error::kUnsupportedKind;  // kube-apiserver's scheme's words
      out.message = "no kind \"" + e->kind + "\" is registered for version \"" + e->api_version +
                    "\" in scheme \"pkg/runtime/scheme.go:111\"";
    } else {
      out.object = DeleteOptionsJson(e->raw);
    }
  } catch (const Malformed& e) {
    out.error = ProtobufBody::Error::kMalformed;
    out.message = std::string("the protobuf body is malformed: ") + e.what();
  }
  return out;
}

}  // namespace arbiter::kube
