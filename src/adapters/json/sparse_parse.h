// Parsing part of a JSON text: the members a reader needs are built as nlohmann::json, the rest
// of the text is skipped, never built (issue 27: a Table of 10,000 Pods from their stored text,
// where a whole tree costs about 6 KB of allocations a Pod and the printer reads a dozen fields).
//
// What is kept is a Keep, applied to a value:
//   kWhole    the value as json::parse gives it;
//   kCount    an array: as many nulls as it has elements (what a reader that counts needs);
//             any other value whole;
//   kMembers  an object: only the listed members (each with its own Keep), the others skipped;
//             an array: each element with this same Keep; any other value whole.
// Parse(text, keep) equals Prune(json::parse(text), keep) for every valid JSON text nested at most
// 128 levels along what is kept (a property test checks it), and is false (its output
// unspecified) for text that is not valid JSON where it is read; skipped values are checked only
// for closed strings and balanced brackets, kept strings without escapes are not checked for
// UTF-8 (the texts read here were written by a JSON serializer), and a leading byte order mark is
// refused (json::parse skips it). Duplicate keys: the last one wins,
// as json::parse. Internal, like member.h: include it from .cc files only; it needs only
// nlohmann/json_fwd.hpp.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::json_sparse {

struct KeepMember;

struct Keep {
  enum class Mode { kWhole, kCount, kMembers };
  Mode mode = Mode::kWhole;
  std::vector<KeepMember> members;  // kMembers only
};

struct KeepMember {
  std::string name;
  Keep keep;
};

inline Keep Whole() { return {}; }
inline Keep Count() { return {Keep::Mode::kCount, {}}; }
Keep Members(std::vector<KeepMember> members);

// The raw text of one member of the top-level object, found while parsing it (kept or skipped): the
// last member named `key` (compared unescaped), `found` false when there is none.
struct RawMember {
  std::string_view key;
  std::string_view text;
  bool found = false;
};

// The part of `text` that `keep` says, into `out`, and the raw text of `raw->key` if `raw` is
// given (when `keep` is kMembers and the text an object); false when the text is not valid JSON
// where it was read (skipped parts are only checked for their brackets and strings).
bool Parse(std::string_view text, const Keep& keep, nlohmann::json& out, RawMember* raw = nullptr);

// The same applied to a tree: what Parse gives of its text.
nlohmann::json Prune(const nlohmann::json& value, const Keep& keep);

// The raw text of member `key` of the object `text` (its keys compared unescaped; of duplicates,
// the last, as json::parse keeps), into `value`; false when `text` is not one object (members
// skipped as Parse skips them) or has no such member.
bool MemberText(std::string_view text, std::string_view key, std::string_view& value);

}  // namespace arbiter::json_sparse
