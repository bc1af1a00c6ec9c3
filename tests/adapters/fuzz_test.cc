// Seeded random-input tests (run in CI): the quantity parser and the YAML manifest loader must
// never crash or throw on any input, and must give the same answer twice. The generator is a
// fixed-seed SplitMix64 (its output is fully specified, unlike std:: distributions), so every
// run and every platform sees the same inputs; a failure message prints the offending input.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/yaml/manifest_loader.h"
#include "core/quantity.h"
#include "core/resources.h"
#include "core/validation.h"

namespace arbiter {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  uint64_t s_;
};

// ARBITER_FUZZ_SCALE=N multiplies the iteration counts (for a longer local run); the seeds stay.
int Scale() {
  const char* e = std::getenv("ARBITER_FUZZ_SCALE");
  int n = e ? std::atoi(e) : 1;
  return n < 1 ? 1 : n;
}

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// ------------------------------------------------------------------ quantities

const std::vector<std::string> kQuantitySeeds = {"1",
                                                 "1.5",
                                                 ".5",
                                                 "5.",
                                                 "500m",
                                                 "0.1",
                                                 "100m",
                                                 "128974848",
                                                 "129e6",
                                                 "129M",
                                                 "123Mi",
                                                 "1k",
                                                 "1Ki",
                                                 "1Gi",
                                                 "1Ti",
                                                 "1Pi",
                                                 "1Ei",
                                                 "1E",
                                                 "12E-1",
                                                 "1e-3",
                                                 "+5",
                                                 "-5",
                                                 "0",
                                                 "0.0",
                                                 "256Gi",
                                                 "7Ei",
                                                 "8Ei",
                                                 "9223372036854775807",
                                                 "-9223372036854775808",
                                                 "9223372036854775808",
                                                 "1e18",
                                                 "1e19",
                                                 "0.001",
                                                 "0.0001",
                                                 "1.5Gi",
                                                 "0.5Ki",
                                                 "1e1000",
                                                 "1mm",
                                                 "Gi",
                                                 "",
                                                 "1.2.3",
                                                 "--1",
                                                 "1 ",
                                                 " 1",
                                                 "1e",
                                                 "1e+",
                                                 "1E+2",
                                                 "0x10",
                                                 "١"};

const std::string kQuantityAlphabet = "0123456789.+-eEmkMGTPKi ";

std::string RandomQuantity(Rng& r) {
  std::string s;
  size_t len = r.Below(12);
  for (size_t i = 0; i < len; ++i) s += kQuantityAlphabet[r.Below(kQuantityAlphabet.size())];
  return s;
}

std::string MutateText(Rng& r, std::string s, const std::string& alphabet) {
  size_t edits = 1 + r.Below(3);
  for (size_t e = 0; e < edits; ++e) {
    switch (r.Below(5)) {
      case 0:  // insert
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(r.Below(s.size() + 1)),
                 alphabet[r.Below(alphabet.size())]);
        break;
      case 1:  // delete
        if (!s.empty()) s.erase(r.Below(s.size()), 1);
        break;
      case 2:  // replace
        if (!s.empty()) s[r.Below(s.size())] = alphabet[r.Below(alphabet.size())];
        break;
      case 3:  // arbitrary byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(r.Below(s.size() + 1)),
                 static_cast<char>(r.Next() & 0xff));
        break;
      default:  // repeat a slice
        if (!s.empty()) {
          size_t a = r.Below(s.size());
          s.insert(a, s.substr(a, 1 + r.Below(8)));
        }
    }
  }
  return s;
}

std::string Describe(const Result<int64_t>& v) {
  return v.ok() ? std::to_string(*v) : "error: " + v.message();
}

void CheckQuantity(const std::string& text) {
  SCOPED_TRACE("quantity input \"" + Printable(text) + "\"");
  auto a = ParseQuantity(text);
  auto b = ParseQuantity(text);
  ASSERT_EQ(a.ok(), b.ok());
  if (!a.ok()) {
    EXPECT_EQ(a.message(), b.message());
    EXPECT_FALSE(a.message().empty());
    return;
  }
  EXPECT_EQ(a->negative, b->negative);
  EXPECT_TRUE(a->mantissa == b->mantissa);
  EXPECT_EQ(a->exp10, b->exp10);
  EXPECT_EQ(a->exp2, b->exp2);
  // Exact round trips: canonical text parses back to the same integer.
  auto milli = a->ToScaled(3);
  if (milli.ok()) {
    std::string canon = FormatMillis(*milli);
    auto back = ParseScaledQuantity(canon, 3);
    ASSERT_TRUE(back.ok()) << canon;
    EXPECT_EQ(*back, *milli) << canon;
  }
  auto units = a->ToScaled(0);
  if (units.ok()) {
    for (const std::string& canon : {FormatBytes(*units), FormatCount(*units)}) {
      auto back = ParseScaledQuantity(canon, 0);
      ASSERT_TRUE(back.ok()) << canon;
      EXPECT_EQ(*back, *units) << canon;
    }
    // Whole units are also whole milli-units, unless that overflows.
    if (milli.ok()) {
      EXPECT_EQ(*milli, *units * 1000);
    }
  }
  for (const char* res : {"cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "pods"}) {
    auto x = ParseResourceQuantity(res, text);
    auto y = ParseResourceQuantity(res, text);
    EXPECT_EQ(Describe(x), Describe(y)) << res;
    if (x.ok()) {
      EXPECT_GE(*x, 0) << res;
      auto again = ParseResourceQuantity(res, FormatResourceQuantity(res, *x));
      ASSERT_TRUE(again.ok()) << res << " " << FormatResourceQuantity(res, *x);
      EXPECT_EQ(*again, *x) << res;
    }
  }
}

TEST(FuzzTest, QuantityParserRandomAndMutatedInputs) {
  Rng r(20260101);
  for (const auto& s : kQuantitySeeds) CheckQuantity(s);
  for (int i = 0; i < 3000 * Scale(); ++i) {
    std::string input =
        (i % 2 == 0) ? RandomQuantity(r) : MutateText(r, r.Pick(kQuantitySeeds), kQuantityAlphabet);
    CheckQuantity(input);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// ------------------------------------------------------------------ YAML loader

std::string ReadExamplePool() {
  std::ifstream in(std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> SplitDocuments(const std::string& text) {
  std::vector<std::string> docs;
  std::string cur;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "---" && !cur.empty()) {
      docs.push_back(cur);
      cur.clear();
    }
    cur += line + "\n";
  }
  if (!cur.empty()) docs.push_back(cur);
  return docs;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

const std::string kYamlAlphabet = "abcAZ019 -:,.{}[]&*!|>'\"%@`#?\t\n/=~";

std::string MutateYaml(Rng& r, const std::string& doc) {
  switch (r.Below(8)) {
    case 0:
    case 1:
      return MutateText(r, doc, kYamlAlphabet);
    case 2: {  // drop a line
      auto l = Lines(doc);
      if (!l.empty()) l.erase(l.begin() + static_cast<std::ptrdiff_t>(r.Below(l.size())));
      return Join(l);
    }
    case 3: {  // duplicate a line (duplicate keys, repeated list items)
      auto l = Lines(doc);
      if (!l.empty()) {
        size_t i = r.Below(l.size());
        l.insert(l.begin() + static_cast<std::ptrdiff_t>(i), l[i]);
      }
      return Join(l);
    }
    case 4: {  // swap two lines
      auto l = Lines(doc);
      if (l.size() > 1) std::swap(l[r.Below(l.size())], l[r.Below(l.size())]);
      return Join(l);
    }
    case 5: {  // re-indent a line
      auto l = Lines(doc);
      if (!l.empty()) {
        size_t i = r.Below(l.size());
        if (r.Below(2) && !l[i].empty() && l[i][0] == ' ')
          l[i].erase(0, 1 + r.Below(2));
        else
          l[i].insert(0, std::string(1 + r.Below(3), ' '));
      }
      return Join(l);
    }
    case 6: {  // replace a scalar value with a hostile one
      static const std::vector<std::string> kValues = {"",
                                                       "~",
                                                       "null",
                                                       "[]",
                                                       "{}",
                                                       "[1, [2, [3]]]",
                                                       "{a: {b: {c: d}}}",
                                                       "-1",
                                                       "1e400",
                                                       "\"\"",
                                                       "yes",
                                                       "0x1F",
                                                       "9223372036854775808",
                                                       "&a [*a]",
                                                       "*undefined",
                                                       "!!binary aGVsbG8=",
                                                       "|\n  multi\n  line",
                                                       "'quoted'",
                                                       "1.5Gi",
                                                       "-0",
                                                       ".inf",
                                                       "999999999999999999999Ei"};
      auto l = Lines(doc);
      if (l.empty()) return doc;
      size_t i = r.Below(l.size());
      size_t colon = l[i].find(": ");
      if (colon != std::string::npos) l[i] = l[i].substr(0, colon + 2) + r.Pick(kValues);
      return Join(l);
    }
    default: {  // truncate
      return doc.substr(0, r.Below(doc.size() + 1));
    }
  }
}

std::string Snapshot(const yaml::ManifestLoad& l) {
  std::string s = std::to_string(CountObjects(l.set)) + " objects\n";
  for (const auto& d : l.diagnostics.items) s += d.ToString() + "\n";
  return s;
}

void CheckYaml(const std::string& text) {
  SCOPED_TRACE("yaml input:\n" + Printable(text));
  yaml::ManifestLoad a, b;
  ASSERT_NO_THROW(yaml::LoadManifestText(text, "fuzz.yaml", &a));
  ASSERT_NO_THROW(ValidateManifestSet(a.set, &a.locator, &a.diagnostics));
  ASSERT_NO_THROW(yaml::LoadManifestText(text, "fuzz.yaml", &b));
  ASSERT_NO_THROW(ValidateManifestSet(b.set, &b.locator, &b.diagnostics));
  EXPECT_EQ(Snapshot(a), Snapshot(b));
  for (const auto& d : a.diagnostics.items) {
    EXPECT_GE(d.line, 1) << d.ToString();
    EXPECT_FALSE(d.message.empty());
  }
}

TEST(FuzzTest, YamlLoaderMutatedManifests) {
  std::string pool = ReadExamplePool();
  ASSERT_FALSE(pool.empty());
  std::vector<std::string> docs = SplitDocuments(pool);
  ASSERT_GT(docs.size(), 20u);
  Rng r(42);
  CheckYaml(pool);
  for (int i = 0; i < 2500 * Scale(); ++i) {
    std::string doc = r.Pick(docs);
    if (r.Below(4) == 0) doc += "---\n" + r.Pick(docs);  // multi-document
    size_t rounds = 1 + r.Below(3);
    for (size_t k = 0; k < rounds; ++k) doc = MutateYaml(r, doc);
    CheckYaml(doc);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(FuzzTest, YamlLoaderRandomBytes) {
  Rng r(7);
  for (int i = 0; i < 1000 * Scale(); ++i) {
    std::string s;
    size_t len = r.Below(200);
    for (size_t k = 0; k < len; ++k)
      s += (r.Below(4) == 0) ? static_cast<char>(r.Next() & 0xff)
                             : kYamlAlphabet[r.Below(kYamlAlphabet.size())];
    CheckYaml(s);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(FuzzTest, YamlLoaderPathologicalInputs) {
  std::vector<std::string> inputs = {
      std::string(5000, '['),
      std::string(5000, '{'),
      "a: " + std::string(3000, '[') + std::string(3000, ']'),
      "apiVersion: v1\nkind: Pod\nmetadata: &m {name: p, labels: *m}\nspec: &s {containers: "
      "[*s]}\n",
      "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {capacity: &c {cpu: *c}}\n",
      std::string("apiVersion: v1\nkind: Namespace\nmetadata: {name: \"a\0b\"}\n", 48),
      "\xef\xbb\xbf"
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: bom}\n",
      "? [complex, key]\n: value\n",
      ",",  // yaml-cpp 0.7 loops forever on this without the loader's guard
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n,\n",
      "- !+(.,.)",
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: a, resources: {requests: {memory: 7Ei}}}\n  - {name: b, resources: {requests: "
      "{memory: 7Ei}}}\n",
      "[:",
      "{:",
      "{# ke\ny{:",
      "[[:",
      "{!\xdb:",
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n" +
          [] {
            std::string s;
            for (int i = 0; i < 500; ++i)
              s += "  - {name: c" + std::to_string(i) + ", resources: {requests: {cpu: 1}}}\n";
            return s;
          }(),
  };
  for (const auto& in : inputs) CheckYaml(in);
}

}  // namespace
}  // namespace arbiter
