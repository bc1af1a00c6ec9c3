#include "adapters/kube/continue_token.h"

#include <array>
#include <nlohmann/json.hpp>

namespace arbiter::kube {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kVersion = "meta.k8s.io/v1";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

Status Invalid(const std::string& why) {
  return Status::Error("continue key is not valid" + (why.empty() ? "" : ": " + why));
}

// What Go's path.Clean leaves unchanged, for a key with a leading '/': no empty, "." or ".."
// segment and no trailing '/' (except the root itself).
bool IsCleanPath(std::string_view key) {
  if (key == "/") return true;
  if (key.empty() || key.back() == '/') return false;
  size_t at = 1;
  while (at <= key.size()) {
    size_t end = key.find('/', at);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view seg = key.substr(at, end - at);
    if (seg.empty() || seg == "." || seg == "..") return false;
    at = end + 1;
  }
  return true;
}

}  // namespace

std::string Base64RawUrl(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) |
                       (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

Result<std::string> DecodeBase64RawUrl(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int v = Sextet(text[i]);
    if (v < 0) return Status::Error("illegal base64 data at input byte " + std::to_string(i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  // A lone last character (length % 4 == 1) cannot hold a byte.
  if (text.size() % 4 == 1)
    return Status::Error("illegal base64 data at input byte " + std::to_string(text.size() - 1));
  return out;
}

std::string EncodeContinue(const ContinueToken& t) {
  const std::string json = "{\"v\":\"" + std::string(kVersion) +
                           "\",\"rv\":" + std::to_string(t.resource_version) +
                           ",\"start\":" + nlohmann::json(t.start).dump() + "}";
  return Base64RawUrl(json);
}

Result<ContinueToken> DecodeContinue(std::string_view token) {
  auto bytes = DecodeBase64RawUrl(token);
  if (!bytes.ok()) return Invalid(bytes.status().message());
  nlohmann::json j = nlohmann::json::parse(bytes.value(), nullptr, false);
  if (j.is_discarded()) return Invalid("the token is not JSON");
  if (!j.is_object()) return Invalid("the token is not a JSON object");
  const auto field = [&](const char* k) { return j.contains(k) ? j[k] : nlohmann::json(); };
  const nlohmann::json v = field("v"), rv = field("rv"), start = field("start");
  if ((!v.is_null() && !v.is_string()) || (!rv.is_null() && !rv.is_number_integer()) ||
      (!start.is_null() && !start.is_string()))
    return Invalid("the token's fields have the wrong types");
  const std::string version = v.is_string() ? v.get<std::string>() : "";
  if (version != kVersion)
    return Status::Error(
        "continue key is not valid: server does not recognize this encoded version " + version);
  ContinueToken t;
  t.resource_version = rv.is_null() ? 0 : rv.get<int64_t>();
  t.start = start.is_string() ? start.get<std::string>() : "";
  if (t.resource_version == 0)
    return Status::Error(
        "continue key is not valid: incorrect encoded start resourceVersion (version "
        "meta.k8s.io/v1)");
  if (t.start.empty())
    return Status::Error(
        "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)");
  const std::string rooted = t.start.front() == '/' ? t.start : "/" + t.start;
  if (!IsCleanPath(rooted)) return Invalid(t.start);
  t.start = rooted.substr(1);
  return t;
}

}  // namespace arbiter::kube
