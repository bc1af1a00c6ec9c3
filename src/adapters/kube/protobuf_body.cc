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

// One field of a message: its number, wire type, and value (varint or length-delimited bytes).
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
        Take(8);
        break;
      case kFixed32:
        Take(4);
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

 private:
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
    if (e.number == 1)
      MapEntry(spec["hard"], e, "spec.hard", [](const Field& q) {
        std::string s;
        Want(q, kBytes, "spec.hard");
        Each(q.bytes, [&](const Field& g) {
          if (g.number == 1) s = Str(g, "spec.hard");
        });
        return json(s);
      });
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
  try {
    const std::optional<Envelope> e = OpenPlain(bytes, out);
    if (!e) return out;
    const std::string &api_version = e->api_version, &kind = e->kind;
    const std::string_view raw = e->raw;
    const Kind* known = nullptr;
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
