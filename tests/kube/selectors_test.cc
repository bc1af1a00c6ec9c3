#include "adapters/kube/selectors.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>

namespace arbiter::kube {
namespace {

using nlohmann::json;
using Op = LabelRequirement::Op;

bool Sel(const std::string& s, const json& labels) {
  auto p = ParseLabelSelector(s);
  EXPECT_TRUE(p.ok()) << s << ": " << p.message();
  return p.ok() && p->Matches(labels);
}

std::string Err(const std::string& s) {
  auto p = ParseLabelSelector(s);
  EXPECT_FALSE(p.ok()) << s;
  return p.message();
}

TEST(KubeLabelSelector, EqualityInequalityAndSetOperatorsMatchLikeKubernetes) {
  json l = {{"app", "web"}, {"tier", "gpu"}, {"n", "5"}};
  EXPECT_TRUE(Sel("app=web", l));
  EXPECT_TRUE(Sel("app==web", l));
  EXPECT_FALSE(Sel("app!=web", l));
  EXPECT_TRUE(Sel("missing!=x", l));  // != matches objects without the label
  EXPECT_TRUE(Sel("app in (db, web)", l));
  EXPECT_FALSE(Sel("app notin (db,web)", l));
  EXPECT_TRUE(Sel("missing notin (a)", l));
  EXPECT_TRUE(Sel("tier", l));
  EXPECT_FALSE(Sel("!tier", l));
  EXPECT_TRUE(Sel("!missing", l));
  EXPECT_TRUE(Sel(" app = web , tier in (gpu) , !x ", l));
  EXPECT_TRUE(Sel("n>4,n<6", l));
  EXPECT_FALSE(Sel("app>4", l));  // not an integer label
  EXPECT_TRUE(Sel("", l));
  EXPECT_TRUE(Sel("app=", json{{"app", ""}}));
  EXPECT_TRUE(Sel("arbiter.dev/tenant=team-a", json{{"arbiter.dev/tenant", "team-a"}}));
  EXPECT_FALSE(Sel("app=web", nullptr));
}

TEST(KubeLabelSelector, MalformedSelectorsGetKubeParserMessages) {
  // kube-apiserver 1.36's texts (apimachinery labels/selector.go), checked on a live one: "!"
  // without a key, and a bad key (validated with the parser's nil path), were worded otherwise.
  EXPECT_EQ(Err("!"), "unable to parse requirement: found '', expected: identifier");
  EXPECT_EQ(Err("!!a"), "unable to parse requirement: found '!', expected: identifier");
  EXPECT_EQ(Err("a,"), "found '', expected: identifier after ','");
  EXPECT_EQ(Err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  EXPECT_EQ(Err("a=b c"), "found 'c', expected: ',' or 'end of string'");
  EXPECT_EQ(Err("=a"), "found '=', expected: !, identifier, or 'end of string'");
  EXPECT_EQ(Err("a in b"), "unable to parse requirement: found 'b' expected: '('");
  EXPECT_EQ(Err("a in (b"), "unable to parse requirement: found '', expected: ',' or ')'");
  EXPECT_EQ(Err("a foo b"),
            "unable to parse requirement: found 'foo', expected: in, notin, =, ==, !=, gt, lt");
  EXPECT_EQ(Err("a>b"),
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
            "operators, the value must be an integer");
  EXPECT_EQ(
      Err("-a=b").rfind("unable to parse requirement: <nil>: Invalid value: \"-a\": name part "
                        "must consist of alphanumeric characters",
                        0),
      0u);
  EXPECT_EQ(Err("a=-b").rfind("unable to parse requirement: values[0][a]: Invalid value: \"-b\": a "
                              "valid label must be an empty string",
                              0),
            0u);
  EXPECT_NE(Err("Example.com/a=b").find("prefix part a lowercase RFC 1123 subdomain"),
            std::string::npos);
  EXPECT_NE(Err("a=" + std::string(64, 'x')).find("must be no more than 63 characters"),
            std::string::npos);
}

TEST(KubeLabelSelector, SetValuesAcceptEmptyMembersAsKubeDoes) {
  auto p = ParseLabelSelector("a in (,x),b notin ()");
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->requirements[0].values, (std::vector<std::string>{"", "x"}));
  EXPECT_EQ(p->requirements[1].values, (std::vector<std::string>{""}));
}

TEST(KubeLabelSelector, PdbSelectorObjectsNullSelectsNothingEmptySelectsAll) {
  json labels = {{"app", "web"}};
  EXPECT_FALSE(LabelSelectorFromJson(nullptr)->Matches(labels));
  EXPECT_TRUE(LabelSelectorFromJson(json::object())->Matches(labels));
  auto s = LabelSelectorFromJson(json::parse(
      R"({"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"DoesNotExist"}]})"));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Matches(labels));
  EXPECT_FALSE(
      LabelSelectorFromJson(json::parse(R"({"matchExpressions":[{"key":"a","operator":"Gt"}]})"))
          .ok());
}

// Property test: random requirements, rendered with random spacing and either `=` or `==`, parse
// back to the same requirements and match random label sets as the operator's definition says.
TEST(KubeLabelSelector, RandomSelectorsRoundTripAndMatchByDefinition) {
  std::mt19937 rng(42);
  const std::vector<std::string> keys = {"a", "b", "app", "arbiter.dev/tenant", "x_y.z"};
  const std::vector<std::string> vals = {"1", "2", "web", "gpu-a", "v.1", ""};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  auto sp = [&] { return std::string(rng() % 3, ' '); };
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<LabelRequirement> want;
    std::string text;
    const int n = 1 + rng() % 4;
    for (int i = 0; i < n; ++i) {
      LabelRequirement r;
      r.key = pick(keys);
      r.op = static_cast<Op>(rng() % 8);
      std::string t = sp();
      switch (r.op) {
        case Op::kExists:
          t += r.key;
          break;
        case Op::kDoesNotExist:
          t += "!" + sp() + r.key;
          break;
        case Op::kEquals:
        case Op::kNotEquals: {
          r.values = {pick(vals)};
          t += r.key + sp() + (r.op == Op::kNotEquals ? "!=" : (rng() % 2 ? "=" : "==")) + sp() +
               r.values[0];
          break;
        }
        case Op::kGreaterThan:
        case Op::kLessThan:
          r.values = {std::to_string(rng() % 10)};
          t += r.key + sp() + (r.op == Op::kGreaterThan ? ">" : "<") + sp() + r.values[0];
          break;
        case Op::kIn:
        case Op::kNotIn: {
          std::vector<std::string> vs;
          const int m = 1 + rng() % 3;
          for (int k = 0; k < m; ++k) {
            std::string v = pick(vals);
            if (v.empty()) v = "e";
            if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
          }
          t += r.key + " " + (r.op == Op::kIn ? "in" : "notin") + sp() + "(" + sp();
          for (size_t k = 0; k < vs.size(); ++k) t += (k ? "," + sp() : "") + vs[k];
          t += sp() + ")";
          std::sort(vs.begin(), vs.end());
          r.values = vs;
          break;
        }
      }
      text += (i ? "," : "") + t + sp();
      want.push_back(r);
    }
    auto p = ParseLabelSelector(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.message();
    ASSERT_EQ(p->requirements.size(), want.size()) << text;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(p->requirements[i].key, want[i].key) << text;
      EXPECT_EQ(p->requirements[i].op, want[i].op) << text;
      EXPECT_EQ(p->requirements[i].values, want[i].values) << text;
    }
    json labels = json::object();
    for (const auto& k : keys)
      if (rng() % 2) labels[k] = pick(vals);
    bool expect = true;
    for (const auto& r : want) {
      const bool has = labels.contains(r.key);
      const std::string v = has ? labels[r.key].get<std::string>() : "";
      const bool in = has && std::find(r.values.begin(), r.values.end(), v) != r.values.end();
      bool ok = false;
      switch (r.op) {
        case Op::kExists:
          ok = has;
          break;
        case Op::kDoesNotExist:
          ok = !has;
          break;
        case Op::kEquals:
        case Op::kIn:
          ok = in;
          break;
        case Op::kNotEquals:
        case Op::kNotIn:
          ok = !in;
          break;
        case Op::kGreaterThan:
        case Op::kLessThan: {
          char* end = nullptr;
          long a = has ? std::strtol(v.c_str(), &end, 10) : 0;
          bool num = has && !v.empty() && end && *end == '\0';
          long b = std::stol(r.values[0]);
          ok = num && (r.op == Op::kGreaterThan ? a > b : a < b);
          break;
        }
      }
      expect = expect && ok;
    }
    EXPECT_EQ(p->Matches(labels), expect) << text << " on " << labels.dump();
  }
}

// Fuzz: strings over the selector alphabet never crash the parser; what parses has valid keys.
TEST(KubeLabelSelector, RandomTextEitherParsesOrFailsWithAMessage) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab=!(),<> \t-./in";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s;
    const int n = rng() % 16;
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    auto p = ParseLabelSelector(s);
    if (!p.ok()) {
      EXPECT_FALSE(p.message().empty()) << s;
      continue;
    }
    for (const auto& r : p->requirements) EXPECT_FALSE(r.key.empty()) << s;
  }
}

const ResourceInfo& R(const char* plural, const char* group = "", const char* version = "v1") {
  return *FindResource(group, version, plural);
}

TEST(KubeFieldSelector, PodFieldsSelectByNodePhaseAndNameOthersAreNotSupported) {
  json pod = json::parse(
      R"({"metadata":{"name":"p","namespace":"a"},"spec":{"nodeName":"n1","hostNetwork":false},"status":{"phase":"Running"}})");
  auto s = ParseFieldSelector("spec.nodeName=n1,status.phase!=Pending,metadata.name==p", R("pods"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(s->Matches(pod));
  EXPECT_FALSE(ParseFieldSelector("spec.nodeName=", R("pods"))->Matches(pod));
  EXPECT_TRUE(
      ParseFieldSelector("spec.nodeName=", R("pods"))->Matches(json::parse(R"({"spec":{}})")));
  EXPECT_TRUE(ParseFieldSelector("spec.hostNetwork=false", R("pods"))->Matches(pod));
  EXPECT_EQ(ParseFieldSelector("spec.priority=1", R("pods")).message(),
            "field label not supported: spec.priority");
  EXPECT_EQ(ParseFieldSelector("status.phase=Running", R("resourcequotas")).message(),
            "field label not supported: status.phase");
  EXPECT_TRUE(
      ParseFieldSelector("metadata.namespace=a", R("elasticquotas", "arbiter.dev", "v1alpha1"))
          .ok());
  EXPECT_FALSE(ParseFieldSelector("metadata.namespace=a", R("nodes")).ok());
  EXPECT_EQ(ParseFieldSelector("spec.nodeName", R("pods")).message(),
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'");
}

TEST(KubeFieldSelector, EventFieldsAsKubectlDescribeAsksForThem) {
  // kubectl describe pod asks:
  // involvedObject.name=x,involvedObject.namespace=a,involvedObject.uid=U
  json ev = json::parse(
      R"({"metadata":{"name":"x.1","namespace":"a"},"involvedObject":{"kind":"Pod","name":"x","namespace":"a","uid":"U"},
                             "reason":"FailedScheduling","type":"Warning","source":{"component":"arbiter"}})");
  auto s = ParseFieldSelector(
      "involvedObject.name=x,involvedObject.namespace=a,involvedObject.uid=U", R("events"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(s->Matches(ev));
  EXPECT_TRUE(ParseFieldSelector("source=arbiter,type=Warning,reason=FailedScheduling", R("events"))
                  ->Matches(ev));
  EXPECT_FALSE(ParseFieldSelector("involvedObject.kind=Node", R("events"))->Matches(ev));
}

TEST(KubeFieldSelector, EscapedValuesAndBadEscapes) {
  json pod = json::parse(R"({"metadata":{"name":"a,b=c"}})");
  EXPECT_TRUE(ParseFieldSelector(R"(metadata.name=a\,b\=c)", R("pods"))->Matches(pod));
  EXPECT_EQ(ParseFieldSelector(R"(metadata.name=a\x)", R("pods")).message(),
            "invalid field selector: invalid escape sequence: \\x");
  // Go prints the rune with %v: its code point.
  EXPECT_EQ(ParseFieldSelector("metadata.name=a=b", R("pods")).message(),
            "invalid field selector: unescaped character in value: 61");
  EXPECT_TRUE(ParseFieldSelector("", R("pods"))->Empty());
}

// Edge forms, each answered as kube-apiserver 1.36.3 answered them (a list of pods in a live
// cluster): a term with neither field nor value selects everything (`=` was 400 here); `!` is
// no escape but a plain character in a value; the field has no escapes (the first operator
// splits); unescape errors come before unsupported fields; `spec.host` is a Pod's spec.nodeName.
TEST(KubeFieldSelector, EdgeFormsAsKubeApiserverParsesThem) {
  const json pod = json::parse(R"({"metadata":{"name":"p1"},"spec":{"nodeName":"n1"}})");
  for (const char* everything : {"=", "==", "!=", ",", ",,", "=,="})
    EXPECT_TRUE(ParseFieldSelector(everything, R("pods")).ok()) << everything;
  EXPECT_TRUE(ParseFieldSelector("=", R("pods"))->Empty());
  EXPECT_TRUE(ParseFieldSelector("metadata.name=p1,=", R("pods"))->Matches(pod));
  EXPECT_FALSE(ParseFieldSelector("metadata.name=a,=", R("pods"))->Matches(pod));
  EXPECT_TRUE(ParseFieldSelector(",metadata.name=p1,", R("pods"))->Matches(pod));
  const std::pair<const char*, const char*> refused[] = {
      {"=x", "field label not supported: "},
      {"=b", "field label not supported: "},
      {"=\\=", "field label not supported: "},
      {"a=b", "field label not supported: a"},
      {"metadata.name\\=p1", "field label not supported: metadata.name\\"},
      {"\\=a", "field label not supported: \\"},
      {" metadata.name=p1", "field label not supported:  metadata.name"},
      {"metadata.name==a=b", "invalid field selector: unescaped character in value: 61"},
      {"metadata.name!==p1", "invalid field selector: unescaped character in value: 61"},
      {"===", "invalid field selector: unescaped character in value: 61"},
      {"metadata.name=\\", "invalid field selector: invalid escape sequence: \\"},
      {"metadata.name=a\\!b", "invalid field selector: invalid escape sequence: \\!"},
      {"metadata.name=\\\xc3\xa9", "invalid field selector: invalid escape sequence: \\\xc3\xa9"},
      {"a=b,metadata.name=\\x", "invalid field selector: invalid escape sequence: \\x"},
      {"!", "invalid selector: '!'; can't understand '!'"},
  };
  for (const auto& [text, message] : refused)
    EXPECT_EQ(ParseFieldSelector(text, R("pods")).message(), message) << text;
  EXPECT_TRUE(ParseFieldSelector("metadata.name=!p1", R("pods")).ok());
  EXPECT_TRUE(ParseFieldSelector("metadata.name!=", R("pods"))->Matches(pod));
  EXPECT_TRUE(ParseFieldSelector("metadata.name=p1\\,", R("pods")).ok());
  const auto host = ParseFieldSelector("spec.host=n1", R("pods"));
  ASSERT_TRUE(host.ok()) << host.message();
  EXPECT_TRUE(host->Matches(pod));
  EXPECT_EQ(ParseFieldSelector("spec.host=n1", R("nodes")).message(),
            "field label not supported: spec.host");
  // status.podIPs is a field label with no value in kube-apiserver's pod field set.
  EXPECT_TRUE(ParseFieldSelector("status.podIPs=", R("pods"))->Matches(pod));
  EXPECT_FALSE(ParseFieldSelector("status.podIPs=x", R("pods"))->Matches(pod));
}

}  // namespace
}  // namespace arbiter::kube
