// DeleteOptions and patches through the HTTP API, in process, against kube-apiserver 1.36's
// answers (a hostile-tenant trial): a propagationPolicy outside the three is 422 Invalid (it was
// taken as none), and a merge patch {"metadata": null} is refused by the name check (it dropped
// the labels and annotations and answered 200).
#include <gtest/gtest.h>

#include <string>

#include "served_api.h"

namespace arbiter::server {
namespace delete_options_test {

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("delete-options-test", name)) {}
  void Pod(const std::string& name) {
    ServedApi::Pod(name, {{"labels", {{"team", "a"}}}, {"annotations", {{"note", "x"}}}});
  }
  bool Has(const std::string& name) {
    return daemon->Read([&](const Cluster& c) { return c.store().Get("Pod", "default", name); }) !=
           nullptr;
  }
};

Json Check(const httplib::Result& r, int want) {
  EXPECT_TRUE(r);
  if (!r) return Json();
  EXPECT_EQ(r->status, want) << r->body;
  return Json::parse(r->body);
}

constexpr char kUnsupported[] =
    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: "
    "\"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"";

TEST(DeleteOptionsTest, AnUnknownPropagationPolicyIsInvalidAndDeletesNothing) {
  Served s("propagation");
  s.Pod("p0");
  Json q =
      Check(s.cli->Delete("/api/v1/namespaces/default/pods/p0?propagationPolicy=Sideways"), 422);
  EXPECT_EQ(q["reason"], "Invalid");
  EXPECT_EQ(q["message"], kUnsupported);
  EXPECT_EQ(q["details"]["kind"], "DeleteOptions");
  EXPECT_EQ(q["details"]["group"], "meta.k8s.io");
  EXPECT_EQ(q["details"]["causes"][0]["reason"], "FieldValueNotSupported");
  EXPECT_EQ(q["details"]["causes"][0]["field"], "propagationPolicy");
  Json b = Check(s.cli->Delete("/api/v1/namespaces/default/pods/p0",
                               R"({"propagationPolicy":"Sideways"})", "application/json"),
                 422);
  EXPECT_EQ(b["message"], kUnsupported);
  Json c = Check(s.cli->Delete("/api/v1/namespaces/default/pods?propagationPolicy=Sideways"), 422);
  EXPECT_EQ(c["message"], kUnsupported);
  EXPECT_TRUE(s.Has("p0"));
  Check(s.cli->Delete("/api/v1/namespaces/default/pods/p0?propagationPolicy=Background"), 200);
}

TEST(DeleteOptionsTest, AMergePatchOfNullMetadataIsRefusedByTheNameCheck) {
  Served s("metadata-null");
  s.Pod("p0");
  Json r = Check(s.cli->Patch("/api/v1/namespaces/default/pods/p0", R"({"metadata":null})",
                              "application/merge-patch+json"),
                 400);
  EXPECT_EQ(r["reason"], "BadRequest");
  EXPECT_EQ(r["message"], "the name of the object () does not match the name on the URL (p0)");
  const Json kept =
      s.daemon->Read([](const Cluster& c) { return Json(*c.store().Get("Pod", "default", "p0")); });
  EXPECT_EQ(kept["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(kept["metadata"]["annotations"]["note"], "x");
}

}  // namespace delete_options_test
}  // namespace arbiter::server
