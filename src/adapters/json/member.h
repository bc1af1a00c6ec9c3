// Null-safe member lookup in a parsed JSON document (nlohmann::json). Internal: include it from
// .cc files (or detail headers that only .cc files include), never from a public header, which
// keeps nlohmann/json out of what includes those.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>

namespace arbiter::json_member {

// o[key] when `o` is an object that has `key`; else a null value. It never inserts, never
// throws, and a chain (Member(Member(o, "status"), "conditions")) stays safe at every step.
inline const nlohmann::json& Member(const nlohmann::json& o, const char* key) {
  static const nlohmann::json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

// o[key] when `o` is an object whose `key` is a string; else "" (client input: never throws).
inline std::string StringMember(const nlohmann::json& o, const char* key) {
  const nlohmann::json& v = Member(o, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// The member at `path` (each step as Member), a null value where a step is missing.
inline const nlohmann::json& MemberAt(const nlohmann::json& o,
                                      std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &o;
  for (const char* key : path) cur = &Member(*cur, key);
  return *cur;
}

}  // namespace arbiter::json_member
