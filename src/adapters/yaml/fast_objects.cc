#include "adapters/yaml/fast_objects.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "adapters/yaml/go_field_types.h"
#include "adapters/yaml/manifest_rules.h"
#include "adapters/yaml/yaml_reader.h"
#include "core/duration.h"
#include "core/resources.h"

namespace arbiter::yaml {

namespace {

using Type = FastNode::Type;

bool Has(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Every check mirrors DocReader / DocLoader (yaml_reader.cc, manifest_loader.cc): where they
// would report anything, these return false.
class Builder {
 public:
  explicit Builder(const FastReader& r) : r_(r) {}

  bool Pod(const FastNode& root, arbiter::Pod* pod) {
    if (!PodGoTypesOk(r_, root)) return false;  // a field of the wrong JSON type: the usual path
    bool has_spec = false, has_meta = false;
    for (const FastNode* k = r_.first(root); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (k->text == "apiVersion" || k->text == "kind" || k->text == "status") continue;
      if (k->text == "metadata") {
        has_meta = true;
        if (!Meta(v, &pod->meta, true)) return false;
      } else if (k->text == "spec") {
        has_spec = true;
        if (!PodSpec(v, pod)) return false;
      } else {
        return false;
      }
    }
    if (!has_spec || !has_meta) return false;
    if (pod->meta.namespace_.empty()) pod->meta.namespace_ = "default";
    for (const auto& [key, n] : annotations_) {
      Millis* into = key == "arbiter.dev/submit-time" ? &pod->sim.submit_time : nullptr;
      std::optional<Millis>* opt = key == "arbiter.dev/duration" ? &pod->sim.duration : nullptr;
      if (!into && !opt) return false;  // the other annotations: the usual path
      const std::optional<Millis> d = Duration(*n);
      if (!d) return false;
      if (into) *into = *d;
      if (opt) *opt = *d;
    }
    auto& a = pod->meta.annotations;
    for (auto it = a.begin(); it != a.end();)
      it = StartsWith(it->first, "arbiter.dev/") ? a.erase(it) : std::next(it);
    std::set<std::string_view> names;
    for (const arbiter::Container& c : pod->containers)
      if (!names.insert(c.name).second) return false;
    return true;
  }

  bool Node(const FastNode& root, arbiter::Node* node) {
    bool has_meta = false, has_allocatable = false;
    for (const FastNode* k = r_.first(root); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (k->text == "apiVersion" || k->text == "kind") continue;
      if (k->text == "metadata") {
        has_meta = true;
        if (!Meta(v, &node->meta, false)) return false;
      } else if (k->text == "spec") {
        if (!MapOrNull(v)) return false;
        for (const FastNode* f = r_.first(v); f; f = r_.next_key(*f)) {
          if (f->text == "unschedulable") {
            const FastNode& b = r_.value(*f);
            if (b.type != Type::kScalar || b.quoted) return false;
            if (b.text == "true" || b.text == "True" || b.text == "TRUE")
              node->unschedulable = true;
            else if (b.text == "false" || b.text == "False" || b.text == "FALSE")
              node->unschedulable = false;
            else
              return false;
          } else if (f->text == "taints") {
            if (!EmptySeqOrNull(r_.value(*f))) return false;  // taints to read: the usual path
          } else if (!Has(kIgnoredNodeSpecFields, f->text)) {
            return false;
          }
        }
      } else if (k->text == "status") {
        if (!MapOrNull(v)) return false;
        for (const FastNode* f = r_.first(v); f; f = r_.next_key(*f)) {
          if (f->text == "capacity") {
            if (!Resources(r_.value(*f), &node->capacity)) return false;
          } else if (f->text == "allocatable") {
            has_allocatable = true;
            if (!Resources(r_.value(*f), &node->allocatable)) return false;
          } else if (!Has(kIgnoredNodeStatusFields, f->text)) {
            return false;
          }
        }
      } else {
        return false;
      }
    }
    if (!has_meta || !annotations_.empty()) return false;  // add/remove-time: the usual path
    if (!has_allocatable) {
      node->allocatable = node->capacity;
    } else {
      for (const auto& [k, v] : node->capacity.entries())
        if (!node->allocatable.Has(k)) node->allocatable.Set(k, v);
    }
    return true;
  }

 private:
  static bool MapOrNull(const FastNode& n) { return n.type == Type::kMap || n.type == Type::kNull; }
  bool EmptySeqOrNull(const FastNode& n) const {
    return n.type == Type::kNull || (n.type == Type::kSeq && r_.first(n) == nullptr);
  }

  // DocReader::String: a quoted scalar, or a plain one that YAML 1.1 reads as a string.
  static bool String(const FastNode& n, std::string* out) {
    if (n.type != Type::kScalar) return false;
    if (!n.quoted && ResolvePlain(n.text) != PlainType::kString) return false;
    out->assign(n.text);
    return true;
  }

  // DocReader::Duration.
  static std::optional<Millis> Duration(const FastNode& n) {
    if (n.type != Type::kScalar) return std::nullopt;
    auto d = ParseDuration(n.text);
    if (!d.ok() || *d < 0) return std::nullopt;
    return *d;
  }

  // DocReader::StringMap with label values (a null value is "").
  bool StringMap(const FastNode& n, std::map<std::string, std::string>* out) {
    if (!MapOrNull(n)) return false;
    for (const FastNode* k = r_.first(n); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      std::string& into = (*out)[std::string(k->text)];
      if (v.type != Type::kNull && !String(v, &into)) return false;
    }
    return true;
  }

  // DocReader::Resources.
  bool Resources(const FastNode& n, ResourceList* out) {
    if (!MapOrNull(n)) return false;
    for (const FastNode* k = r_.first(n); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (!ClassifyResource(k->text).ok() || v.type != Type::kScalar) return false;
      if (!v.quoted && ResolvePlain(v.text) == PlainType::kBool) return false;
      auto q = ParseResourceQuantity(k->text, v.text);
      if (!q.ok()) return false;
      out->Set(k->text, *q);
    }
    return true;
  }

  // DocLoader::MetaField and FinishMeta (but the namespace default).
  bool Meta(const FastNode& n, ObjectMeta* meta, bool namespaced) {
    if (n.type != Type::kMap) return false;
    bool named = false;
    for (const FastNode* k = r_.first(n); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (k->text == "name") {
        if (!String(v, &meta->name) || !IsDns1123Subdomain(meta->name)) return false;
        named = true;
      } else if (k->text == "namespace") {
        if (!namespaced || !String(v, &meta->namespace_) || !IsDns1123Label(meta->namespace_))
          return false;
      } else if (k->text == "labels") {
        if (!StringMap(v, &meta->labels)) return false;
        for (const auto& [key, value] : meta->labels)
          if (!IsLabelKey(key) || !IsLabelValue(value)) return false;
      } else if (k->text == "annotations") {
        if (!MapOrNull(v)) return false;
        for (const FastNode* a = r_.first(v); a; a = r_.next_key(*a)) {
          const FastNode& av = r_.value(*a);
          std::string& into = meta->annotations[std::string(a->text)];
          if (av.type == Type::kNull) continue;
          if (!String(av, &into)) return false;
          if (StartsWith(a->text, "arbiter.dev/")) annotations_.emplace_back(a->text, &av);
        }
      } else if (!Has(kIgnoredMetaFields, k->text)) {
        return false;
      }
    }
    return named;
  }

  bool PodSpec(const FastNode& n, arbiter::Pod* pod) {
    if (n.type != Type::kMap) return false;
    bool has_containers = false;
    for (const FastNode* k = r_.first(n); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (k->text == "containers") {
        has_containers = true;
        if (v.type != Type::kSeq) return false;
        for (const FastNode* c = r_.first(v); c; c = r_.next(*c)) {
          pod->containers.emplace_back();
          if (!Container(*c, &pod->containers.back())) return false;
        }
      } else if (k->text == "priorityClassName") {
        if (!String(v, &pod->priority_class_name.emplace())) return false;
      } else if (k->text == "priority") {
        auto p = Int32(v);
        if (!p) return false;
        pod->priority = *p;
      } else if (k->text == "nodeSelector") {
        if (!StringMap(v, &pod->node_selector)) return false;
      } else if (k->text == "tolerations") {
        if (!EmptySeqOrNull(v)) return false;  // tolerations to read: the usual path
      } else if (!Has(kIgnoredPodSpecFields, k->text)) {
        return false;  // initContainers and the rest: the usual path
      }
    }
    return has_containers;
  }

  // DocReader::Int in the int32 range.
  static std::optional<int32_t> Int32(const FastNode& n) {
    if (n.type != Type::kScalar || n.quoted) return std::nullopt;
    std::string_view s = n.text;
    const bool neg = !s.empty() && s[0] == '-';
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
    if (s.empty() || s.size() > 12) return std::nullopt;
    int64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    if (neg) v = -v;
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    return static_cast<int32_t>(v);
  }

  // DocLoader::ReadContainer for a container (not an init container).
  bool Container(const FastNode& n, arbiter::Container* c) {
    if (n.type != Type::kMap) return false;
    bool named = false;
    for (const FastNode* k = r_.first(n); k; k = r_.next_key(*k)) {
      const FastNode& v = r_.value(*k);
      if (k->text == "name") {
        if (!String(v, &c->name) || !IsDns1123Label(c->name)) return false;
        named = true;
      } else if (k->text == "resources") {
        if (!MapOrNull(v)) return false;
        for (const FastNode* f = r_.first(v); f; f = r_.next_key(*f)) {
          if (f->text == "requests") {
            if (!Resources(r_.value(*f), &c->requests)) return false;
          } else if (f->text == "limits") {
            if (!Resources(r_.value(*f), &c->limits)) return false;
          } else if (f->text != "claims") {
            return false;
          }
        }
      } else if (k->text != "restartPolicy" && !Has(kIgnoredContainerFields, k->text)) {
        return false;
      }
    }
    if (!named) return false;
    for (const auto& [k, v] : c->limits.entries())
      if (!c->requests.Has(k)) c->requests.Set(k, v);
    for (const auto& [k, v] : c->requests.entries()) {
      auto info = ClassifyResource(k);
      if (info.ok() &&
          (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
           info->kind == ResourceKind::kExtended) &&
          !c->limits.Has(k))
        c->limits.Set(k, v);
    }
    return true;
  }

  const FastReader& r_;
  std::vector<std::pair<std::string_view, const FastNode*>> annotations_;  // arbiter.dev/...
};

}  // namespace

bool BuildDirect(FastReader& reader, std::string_view text, const std::string& file,
                 int lines_before, DirectObject* out) {
  out->kind = DirectObject::Kind::kNone;
  return reader.Parse(text) && BuildDirectTree(reader, file, lines_before, out);
}

bool BuildDirectTree(const FastReader& reader, const std::string& file, int lines_before,
                     DirectObject* out) {
  out->kind = DirectObject::Kind::kNone;
  const FastNode& root = reader.root();
  if (root.type != Type::kMap) return false;
  std::string_view kind, api_version;
  for (const FastNode* k = reader.first(root); k; k = reader.next_key(*k)) {
    const FastNode& v = reader.value(*k);
    if (v.type != Type::kScalar) continue;
    if (k->text == "kind") kind = v.text;
    if (k->text == "apiVersion") api_version = v.text;
  }
  if (api_version != "v1") return false;
  const int line = reader.line() + 1 + lines_before;
  Builder b(reader);
  if (kind == "Pod") {
    out->pod = arbiter::Pod();
    if (!b.Pod(root, &out->pod)) return false;
    out->pod.meta.source = {file, line};
    out->kind = DirectObject::Kind::kPod;
  } else if (kind == "Node") {
    out->node = arbiter::Node();
    if (!b.Node(root, &out->node)) return false;
    out->node.meta.source = {file, line};
    out->kind = DirectObject::Kind::kNode;
  } else {
    return false;
  }
  out->line = line;
  return true;
}

}  // namespace arbiter::yaml
