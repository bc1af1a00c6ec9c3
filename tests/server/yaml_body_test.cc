// `Content-Type: application/yaml` create and update bodies through the HTTP API, in process,
// against kube-apiserver 1.36.3's answers to the same bodies: accepted (they were 415), the first
// document of several taken, and bounded: an alias bomb, deep nesting and a malformed document are
// a 400 with a Status; text/yaml stays a 415.
#include <gtest/gtest.h>

#include <string>

#include "served_api.h"

namespace arbiter::server {
namespace yaml_body_test {

using api_fixture::Check;

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("yaml-body-test", name)) {}
};

const std::string kPods = "/api/v1/namespaces/default/pods";
constexpr char kYaml[] = "application/yaml";

std::string PodYaml(const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  labels: {team: a}\nspec:\n  containers:\n  - name: c\n    image: x\n";
}

TEST(YamlBodyTest, AYamlPodIsCreatedAndUpdatedAsTheJsonOne) {
  Served s("create");
  Json made = Check(s.cli->Post(kPods, PodYaml("y1"), kYaml), 201);
  EXPECT_EQ(made["metadata"]["labels"]["team"], "a");
  EXPECT_TRUE(s.Has("y1"));
  // Several documents: the first is the object (kube-apiserver's yaml decoder reads one).
  Check(s.cli->Post(kPods, PodYaml("y2") + "---\n" + PodYaml("y3"), kYaml), 201);
  EXPECT_TRUE(s.Has("y2"));
  EXPECT_FALSE(s.Has("y3"));
  // An update: the stored pod with a label changed, as YAML (JSON is YAML; a manifest without
  // the fields the server set is refused, as by kube-apiserver: priority is immutable).
  Json stored = Check(s.cli->Get(kPods + "/y1"), 200);
  stored["metadata"]["labels"]["team"] = "b";
  Json updated = Check(s.cli->Put(kPods + "/y1", stored.dump(2), kYaml), 200);
  EXPECT_EQ(updated["metadata"]["labels"]["team"], "b");
}

TEST(YamlBodyTest, BombsDeepNestingAndMalformedYamlAre400AndOtherYamlTypes415) {
  Served s("hostile");
  // A billion laughs: 10^9 strings from a few hundred bytes of anchors and aliases.
  std::string bomb = "metadata:\n  name: b\n  annotations:\n    a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "    a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ",*a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  Json q = Check(s.cli->Post(kPods, bomb, kYaml), 400);
  EXPECT_EQ(q["message"], "the document contains excessive aliasing");
  // Five levels over strings of 340 bytes (4 KB): 10^5 strings, 34 MB, were expanded (the daemon
  // grew by 140 MB) before the object was looked at; now refused before any alias is expanded,
  // as kube-apiserver's decoder refuses excessive aliasing.
  std::string laughs = "metadata:\n  name: b\n  annotations:\n    a0: &a0 [";
  for (int k = 0; k < 10; ++k) laughs += (k ? "," : "") + std::string(340, 'x');
  laughs += "]\n";
  for (int i = 1; i < 5; ++i) {
    laughs += "    a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ",*a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  EXPECT_EQ(Check(s.cli->Post(kPods, laughs, kYaml), 400)["message"],
            "the document contains excessive aliasing");
  std::string deep_block = "metadata:\n";  // block mappings nesting 200 levels
  for (int i = 1; i < 200; ++i) deep_block += std::string(i, ' ') + "k:\n";
  EXPECT_EQ(Check(s.cli->Post(kPods, deep_block, kYaml), 400)["reason"], "BadRequest");
  const std::string deep_flow = "a: " + std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(Check(s.cli->Post(kPods, deep_flow, kYaml), 400)["reason"], "BadRequest");
  EXPECT_EQ(Check(s.cli->Post(kPods, "a: [", kYaml), 400)["reason"], "BadRequest");
  // Plain scalars of 200,000 digits, an int's and a float's form (std::regex, which read them,
  // recursed once per character and overflowed the stack): answered (as a string,
  // too long an int, or a float an annotation may not be), and the daemon goes on.
  for (const std::string& big : {std::string(200000, '7'), "1." + std::string(200000, '5')}) {
    auto r =
        s.cli->Post(kPods, "metadata:\n  name: n\n  annotations:\n    a: " + big + "\n", kYaml);
    ASSERT_TRUE(r) << "the daemon stopped answering";
    EXPECT_LT(r->status, 500) << r->body.substr(0, 200);
  }
  EXPECT_EQ(Check(s.cli->Post(kPods, "- 1", kYaml), 400)["reason"], "BadRequest");
  Json other = Check(s.cli->Post(kPods, PodYaml("t"), "text/yaml"), 415);
  EXPECT_NE(other["message"].get<std::string>().find(
                "accepted media types include: application/json, application/yaml, "),
            std::string::npos)
      << other["message"];
  EXPECT_FALSE(s.Has("t"));
  EXPECT_FALSE(s.Has("b"));
}

}  // namespace yaml_body_test
}  // namespace arbiter::server
