// What kubectl 1.32 really sends for `apply` (client-side and --server-side, with its default
// validation against the OpenAPI v3 documents of openapi.h) against a server whose PATCH handler
// is this library, and that the object it ends with is the one kubectl meant.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "adapters/kube/openapi.h"
#include "adapters/kube/patch.h"
#include "adapters/kube/status.h"
#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

// A minimal object store behind GET/POST/PATCH of /api/v1/namespaces/NS/pods/NAME and
// /apis/arbiter.dev/v1alpha1/namespaces/NS/elasticquotas/NAME.
class Store {
 public:
  void Routes(httplib::Server& s) {
    const std::string path =
        R"((/api/v1|/apis/arbiter\.dev/v1alpha1)/namespaces/([^/]+)/(pods|elasticquotas)(/([^/]+))?)";
    s.Get(path, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const ResourceInfo& r = Resource(req);
      auto it = objects_.find(req.path);
      if (it == objects_.end())
        return Answer(res, NotFound(ResourceName::Of(r), req.matches[5].str()));
      res.set_content(it->second.dump(), "application/json");
    });
    s.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      json obj = json::parse(req.body);
      obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
      objects_[req.path + "/" + obj["metadata"]["name"].get<std::string>()] = obj;
      res.status = 201;
      res.set_content(obj.dump(), "application/json");
    });
    s.Patch(path, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const ResourceInfo& r = Resource(req);
      auto type = PatchTypeFromContentType(req.get_header_value("Content-Type"));
      if (!type || !Accepts(r, *type))
        return Answer(res, UnsupportedMediaType(req.get_header_value("Content-Type"), {}));
      auto it = objects_.find(req.path);
      const json* live = it == objects_.end() ? nullptr : &it->second;
      auto out = ApplyPatch(*type, live, req.body, r);
      if (!out.ok()) return Answer(res, BadRequest(out.message()));
      json obj = *out;
      obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
      res.status = live ? 200 : 201;
      objects_[req.path] = obj;
      res.set_content(obj.dump(), "application/json");
    });
  }
  json Get(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return objects_.count(path) ? objects_[path] : json();
  }

 private:
  static const ResourceInfo& Resource(const httplib::Request& req) {
    return req.matches[3].str() == "pods"
               ? *FindResource("", "v1", "pods")
               : *FindResource("arbiter.dev", "v1alpha1", "elasticquotas");
  }
  static void Answer(httplib::Response& res, const KubeStatus& s) {
    res.status = s.code;
    res.set_content(s.body.dump(), "application/json");
  }
  std::mutex mu_;
  std::map<std::string, json> objects_;
  int rv_ = 0;
};

void Write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

const char* kPodV1 = R"(apiVersion: v1
kind: Pod
metadata:
  name: x
  namespace: a
  labels: {app: t, drop: me}
spec:
  containers:
  - name: main
    image: "i:1"
    env: [{name: A, value: "1"}, {name: B, value: "2"}]
    ports: [{containerPort: 80}, {containerPort: 81}]
  - name: side
    image: "s:1"
  tolerations: [{key: gpu, operator: Exists}]
)";

const char* kPodV2 = R"(apiVersion: v1
kind: Pod
metadata:
  name: x
  namespace: a
  labels: {app: t}
spec:
  containers:
  - name: side
    image: "s:2"
  - name: main
    image: "i:1"
    env: [{name: B, value: "3"}]
    ports: [{containerPort: 81}]
  tolerations: [{key: cpu, operator: Exists}]
)";

std::vector<testing::Recorded> Patches(testing::FakeApiServer& server) {
  std::vector<testing::Recorded> out;
  for (const auto& r : server.Requests())
    if (r.method == "PATCH") out.push_back(r);
  return out;
}

TEST(KubectlApply, ClientSideApplySendsAStrategicMergePatchThatYieldsTheNewConfig) {
  Store store;
  testing::FakeApiServer server([&store](httplib::Server& s) { store.Routes(s); });
  auto scratch = testing::Scratch("apply-csa");
  Write(scratch / "v1.yaml", kPodV1);
  Write(scratch / "v2.yaml", kPodV2);
  auto first = server.Kubectl("apply -f " + (scratch / "v1.yaml").string(), scratch);
  ASSERT_EQ(first.rc, 0) << first.err;
  EXPECT_EQ(first.out, "pod/x created\n");
  // Live state the server added (status) must survive the patch.
  auto second = server.Kubectl("apply -f " + (scratch / "v2.yaml").string(), scratch);
  ASSERT_EQ(second.rc, 0) << second.err;
  EXPECT_EQ(second.out, "pod/x configured\n");
  EXPECT_EQ(second.err, "");  // no "error calculating patch from openapi" warning
  auto patches = Patches(server);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].content_type, "application/strategic-merge-patch+json");
  // Validation is left to the server (openapi.h): kubectl asks for strict field validation.
  EXPECT_NE(patches[0].query.find("fieldValidation=Strict"), std::string::npos) << patches[0].query;
  bool posted_strict = false;
  for (const auto& r : server.Requests())
    if (r.method == "POST" && r.query.find("fieldValidation=Strict") != std::string::npos)
      posted_strict = true;
  EXPECT_TRUE(posted_strict);
  json sent = json::parse(patches[0].body);
  EXPECT_TRUE(sent["spec"].contains("$setElementOrder/containers")) << sent.dump();

  json pod = store.Get("/api/v1/namespaces/a/pods/x");
  EXPECT_EQ(pod["metadata"]["labels"], json({{"app", "t"}}));
  const json& c = pod["spec"]["containers"];
  ASSERT_EQ(c.size(), 2u) << pod.dump();
  EXPECT_EQ(c[0]["name"], "side");
  EXPECT_EQ(c[0]["image"], "s:2");
  EXPECT_EQ(c[1]["env"], json::parse(R"([{"name":"B","value":"3"}])"));
  EXPECT_EQ(c[1]["ports"], json::parse(R"([{"containerPort":81}])"));
  EXPECT_EQ(pod["spec"]["tolerations"], json::parse(R"([{"key":"cpu","operator":"Exists"}])"));
}

TEST(KubectlApply, ClientSideApplyOfAnArbiterKindSendsAMergePatch) {
  Store store;
  testing::FakeApiServer server([&store](httplib::Server& s) { store.Routes(s); });
  auto scratch = testing::Scratch("apply-eq");
  Write(scratch / "v1.yaml", R"(apiVersion: arbiter.dev/v1alpha1
kind: ElasticQuota
metadata: {name: q, namespace: a}
spec:
  min: {nvidia.com/gpu: 8}
  max: {nvidia.com/gpu: 16}
)");
  Write(scratch / "v2.yaml", R"(apiVersion: arbiter.dev/v1alpha1
kind: ElasticQuota
metadata: {name: q, namespace: a}
spec:
  min: {nvidia.com/gpu: 4}
)");
  ASSERT_EQ(server.Kubectl("apply -f " + (scratch / "v1.yaml").string(), scratch).rc, 0);
  auto second = server.Kubectl("apply -f " + (scratch / "v2.yaml").string(), scratch);
  ASSERT_EQ(second.rc, 0) << second.err;
  auto patches = Patches(server);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].content_type, "application/merge-patch+json");
  json q = store.Get("/apis/arbiter.dev/v1alpha1/namespaces/a/elasticquotas/q");
  EXPECT_EQ(q["spec"], json::parse(R"({"min":{"nvidia.com/gpu":4}})"));
}

TEST(KubectlApply, ServerSideApplySendsTheConfigAsApplyPatch) {
  Store store;
  testing::FakeApiServer server([&store](httplib::Server& s) { store.Routes(s); });
  auto scratch = testing::Scratch("apply-ssa");
  Write(scratch / "v1.yaml", kPodV1);
  Write(scratch / "v2.yaml", kPodV2);
  auto first = server.Kubectl("apply --server-side -f " + (scratch / "v1.yaml").string(), scratch);
  ASSERT_EQ(first.rc, 0) << first.err;
  EXPECT_EQ(first.out, "pod/x serverside-applied\n");
  auto second = server.Kubectl("apply --server-side -f " + (scratch / "v2.yaml").string(), scratch);
  ASSERT_EQ(second.rc, 0) << second.err;
  auto patches = Patches(server);
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].content_type, "application/apply-patch+yaml");
  EXPECT_NE(patches[0].query.find("fieldManager=kubectl"), std::string::npos) << patches[0].query;
  json pod = store.Get("/api/v1/namespaces/a/pods/x");
  EXPECT_EQ(pod["spec"]["containers"][1]["image"], "s:2") << pod.dump();
  EXPECT_EQ(pod["spec"]["tolerations"], json::parse(R"([{"key":"cpu","operator":"Exists"}])"));
  // Simplified apply keeps what the new config no longer sets (documented in patch.h).
  EXPECT_EQ(pod["metadata"]["labels"]["drop"], "me");
}

TEST(KubectlApply, WithoutOpenApiKubectlRefusesToValidate) {
  testing::FakeApiServer server({}, /*serve_openapi=*/false);
  auto scratch = testing::Scratch("apply-noopenapi");
  Write(scratch / "v1.yaml", kPodV1);
  auto run = server.Kubectl("apply -f " + (scratch / "v1.yaml").string(), scratch);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("failed to download openapi"), std::string::npos) << run.err;
}

TEST(KubeOpenApi, IndexPointsAtOneDocumentPerGroupVersionWithPatchFieldValidation) {
  json index = OpenApiV3Index();
  ASSERT_EQ(index["paths"].size(), ServedGroupVersions().size());
  const std::string url = index["paths"]["apis/policy/v1"]["serverRelativeURL"];
  EXPECT_EQ(url.rfind("/openapi/v3/apis/policy/v1?hash=", 0), 0u) << url;
  auto doc = OpenApiV3Document(url);
  ASSERT_TRUE(doc.has_value());
  const json& patch =
      (*doc)["paths"]["/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}"]
            ["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"],
            json({{"group", "policy"}, {"version", "v1"}, {"kind", "PodDisruptionBudget"}}));
  bool field_validation = false;
  for (const auto& p : patch["parameters"])
    field_validation = field_validation || p["name"] == "fieldValidation";
  EXPECT_TRUE(field_validation);
  EXPECT_FALSE(patch["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  EXPECT_TRUE((*doc)["components"]["schemas"].contains("io.k8s.api.policy.v1.PodDisruptionBudget"));
  EXPECT_FALSE(OpenApiV3Document("apis/apps/v1").has_value());
  EXPECT_TRUE(OpenApiV3Document("api/v1")->at("paths").contains("/api/v1/nodes/{name}"));
}

TEST(KubeOpenApi, KubectlExplainReadsTheArbiterKinds) {
  testing::FakeApiServer server;
  auto scratch = testing::Scratch("explain");
  auto run = server.Kubectl("explain elasticquotas", scratch);
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("KIND:       ElasticQuota"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("arbiter.dev"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace arbiter::kube
