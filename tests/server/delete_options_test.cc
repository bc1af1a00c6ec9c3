// DeleteOptions and patches through the HTTP API, in process, against kube-apiserver 1.36's
// answers (a hostile-tenant trial): a propagationPolicy outside the three is 422 Invalid (it was
// taken as none), and a merge patch {"metadata": null} is refused by the name check (it dropped
// the labels and annotations and answered 200).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/daemon.h"
#include "server/http/http_api.h"

namespace arbiter::server {
namespace delete_options_test {

struct Served {
  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<ApiServer> api;
  std::thread thread;
  std::unique_ptr<httplib::Client> cli;
  explicit Served(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("arbiter-delete-options-test-" + std::to_string(getpid())) / name;
    std::filesystem::remove_all(dir);
    auto d = Daemon::Open({dir.string(), nullptr, 0, false});
    EXPECT_TRUE(d.ok()) << d.message();
    daemon = std::move(d).value();
    api = std::make_unique<ApiServer>(*daemon, ApiOptions{});
    const int port = api->Bind("127.0.0.1", 0).value();
    thread = std::thread([this] { api->Run(); });
    cli = std::make_unique<httplib::Client>("127.0.0.1", port);
  }
  ~Served() {
    api->Stop();
    thread.join();
    daemon->Stop();
  }
  void Pod(const std::string& name) {
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Pod";
    m.namespace_ = "default";
    m.object = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", "default"},
                  {"labels", {{"team", "a"}}},
                  {"annotations", {{"note", "x"}}}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
    ASSERT_TRUE(daemon->Mutate(std::move(m)).ok()) << name;
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
