#include "adapters/kube/limits.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "adapters/kube/selectors.h"

namespace arbiter::kube {

using nlohmann::json;

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, an overlong 2-byte lead, or past U+10FFFF
    }
    if (i + n >= s.size()) return false;  // truncated
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

bool JsonTextNestsDeeperThan(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, whatever it is
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

bool NestsDeeperThan(const json& value, size_t limit) {
  std::vector<std::pair<const json*, size_t>> stack = {{&value, 1}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    if (d > limit) return true;
    if (v->is_structured())
      for (const auto& c : *v)
        if (c.is_structured()) stack.push_back({&c, d + 1});
  }
  return false;
}

KubeStatus BodyTooLarge() {
  return RequestEntityTooLarge("limit is " + std::to_string(kMaxBodyBytes));
}

KubeStatus ObjectTooLarge(size_t bytes) {
  return RequestEntityTooLarge("the object would be stored as " + std::to_string(bytes) +
                               " bytes; limit is " + std::to_string(kMaxObjectBytes));
}

KubeStatus BodyTooDeep() {
  return BadRequest("the body nests deeper than " + std::to_string(kMaxNesting) + " levels");
}

namespace {

const json* StringMap(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  auto m = meta->find(key);
  if (m == meta->end() || !m->is_object()) return nullptr;
  for (const auto& [k, v] : m->items())
    if (!v.is_string()) return nullptr;
  return &*m;
}

Cause InvalidValue(const std::string& field, const std::string& value, const std::string& message) {
  return Cause{"FieldValueInvalid", "Invalid value: " + WireJson(json(value)) + ": " + message,
               field};
}

// The checks of `object`'s metadata, its causes' fields under `path` ("metadata").
void CheckMetadata(const json& object, const std::string& path, std::vector<Cause>& causes) {
  if (const json* labels = StringMap(object, "labels")) {
    for (const auto& [k, v] : labels->items()) {
      for (const auto& m : QualifiedNameErrors(k))
        causes.push_back(InvalidValue(path + ".labels", k, m));
      const std::string& value = v.get_ref<const std::string&>();
      for (const auto& m : LabelValueErrors(value))
        causes.push_back(InvalidValue(path + ".labels", value, m));
    }
  }
  if (const json* annotations = StringMap(object, "annotations")) {
    size_t total = 0;
    for (const auto& [k, v] : annotations->items()) {
      std::string lower = k;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      for (const auto& m : QualifiedNameErrors(lower))
        causes.push_back(InvalidValue(path + ".annotations", k, m));
      total += k.size() + v.get_ref<const std::string&>().size();
    }
    if (total > kMaxAnnotationBytes)
      causes.push_back(
          Cause{"FieldValueTooLong",
                "Too long: must have at most " + std::to_string(kMaxAnnotationBytes) + " bytes",
                path + ".annotations"});
  }
}

}  // namespace

std::vector<Cause> ValidateLabelsAndAnnotations(const json& object) {
  std::vector<Cause> causes;
  CheckMetadata(object, "metadata", causes);
  // A pod template's (a Job's): kube-apiserver validates it as the pods' ObjectMeta.
  if (object.is_object())
    if (auto spec = object.find("spec"); spec != object.end() && spec->is_object())
      if (auto t = spec->find("template"); t != spec->end())
        CheckMetadata(*t, "spec.template.metadata", causes);
  return causes;
}

}  // namespace arbiter::kube
