#include "adapters/kube/status.h"

#include <gtest/gtest.h>

#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace status_test {

using nlohmann::json;

const ResourceInfo& Pods() { return *FindResource("", "v1", "pods"); }
const ResourceInfo& Pdbs() { return *FindResource("policy", "v1", "poddisruptionbudgets"); }

TEST(KubeStatus, NotFoundNamesTheQualifiedResource) {
  KubeStatus s = NotFound(ResourceName::Of(Pods()), "x");
  EXPECT_EQ(s.code, 404);
  EXPECT_EQ(s.body, json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
    "status":"Failure","message":"pods \"x\" not found","reason":"NotFound",
    "details":{"name":"x","kind":"pods"},"code":404})"));
  KubeStatus p = NotFound(ResourceName::Of(Pdbs()), "web");
  EXPECT_EQ(p.Message(), R"(poddisruptionbudgets.policy "web" not found)");
  EXPECT_EQ(p.body["details"]["group"], "policy");
  EXPECT_EQ(PathNotFound().Message(), "the server could not find the requested resource");
}

TEST(KubeStatus, AlreadyExistsAndResourceVersionConflictAre409) {
  EXPECT_EQ(AlreadyExists(ResourceName::Of(Pods()), "x").Message(), R"(pods "x" already exists)");
  KubeStatus c = Conflict(ResourceName::Of(Pods()), "x");
  EXPECT_EQ(c.code, 409);
  EXPECT_EQ(c.Reason(), "Conflict");
  EXPECT_EQ(c.Message(),
            "Operation cannot be fulfilled on pods \"x\": the object has been modified; please "
            "apply your changes to the latest version and try again");
}

TEST(KubeStatus, InvalidWithOneCauseQuotesItWithSeveralBracketsThem) {
  KubeStatus one = Invalid(
      Pods(), "x",
      {{"FieldValueInvalid", "must be a quantity", "spec.containers[0].resources.requests.cpu"}});
  EXPECT_EQ(one.code, 422);
  EXPECT_EQ(one.Message(),
            R"(Pod "x" is invalid: spec.containers[0].resources.requests.cpu: must be a quantity)");
  EXPECT_EQ(one.body["details"]["kind"], "Pod");
  EXPECT_EQ(one.body["details"]["causes"][0],
            json({{"reason", "FieldValueInvalid"},
                  {"message", "must be a quantity"},
                  {"field", "spec.containers[0].resources.requests.cpu"}}));
  KubeStatus two = Invalid(
      Pdbs(), "web",
      {{"FieldValueRequired", "is required", "spec.selector"}, {"FieldValueInvalid", "bad", ""}});
  EXPECT_EQ(two.Message(),
            R"(PodDisruptionBudget.policy "web" is invalid: [spec.selector: is required, bad])");
  EXPECT_EQ(two.body["details"]["group"], "policy");
  EXPECT_FALSE(two.body["details"]["causes"][1].contains("field"));
}

TEST(KubeStatus, ForbiddenCarriesTheAuthorizerSentence) {
  KubeStatus f = Forbidden(
      ResourceName::Of(Pods()), "",
      R"(User "alice" cannot list resource "pods" in API group "" in the namespace "team-b")");
  EXPECT_EQ(f.code, 403);
  EXPECT_EQ(
      f.Message(),
      R"(pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b")");
  EXPECT_FALSE(f.body["details"].contains("name"));
  EXPECT_EQ(
      Unauthorized().body,
      json::parse(
          R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})"));
}

TEST(KubeStatus, WatchTooOldResourceVersionIsExpired410) {
  KubeStatus e = TooOldResourceVersion(5, 20);
  EXPECT_EQ(e.code, 410);
  EXPECT_EQ(e.Reason(), "Expired");
  EXPECT_EQ(e.Message(), "too old resource version: 5 (20)");
  EXPECT_EQ(Gone("x").Reason(), "Gone");
  EXPECT_EQ(InternalError("boom").Message(), "Internal error occurred: boom");
  EXPECT_EQ(SuccessStatus(ResourceName::Of(Pods()), "x", "u1")["details"],
            json({{"name", "x"}, {"kind", "pods"}, {"uid", "u1"}}));
}

TEST(KubeStatus, LoaderDiagnosticsBecomeFieldCauses) {
  Diagnostics d;
  d.Add({Severity::kError, "<request>", 12, "Pod", "team-a/x",
         "spec.containers[0].resources.requests.cpu", "must be a quantity, got \"abc\""});
  d.Add({Severity::kWarning, "<request>", 13, "Pod", "team-a/x", "spec", "ignored"});
  d.Add(
      {Severity::kError, "<request>", 0, "ResourceQuota", "team-a/q", "spec.hard", "other object"});
  auto causes = CausesFromDiagnostics(d, "Pod", "x");
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].field, "spec.containers[0].resources.requests.cpu");
  EXPECT_EQ(causes[0].message, "must be a quantity, got \"abc\"");
  EXPECT_EQ(causes[1].field, "");
  EXPECT_EQ(causes[1].message, "ResourceQuota/team-a/q: spec.hard: other object");

  Cause c = CauseFromDiagnosticLine(
      "pool.yaml:12: Pod/team-a/x: spec.priorityClassName: names no PriorityClass: \"hi\"");
  EXPECT_EQ(c.field, "spec.priorityClassName");
  EXPECT_EQ(c.message, "names no PriorityClass: \"hi\"");
  Cause r = CauseFromDiagnosticLine("pool.yaml:3: Pod/x: metadata.name: is required");
  EXPECT_EQ(r.reason, "FieldValueRequired");
  Cause none = CauseFromDiagnosticLine("pool.yaml: cannot read file");
  EXPECT_EQ(none.field, "");
  EXPECT_EQ(none.message, "cannot read file");
}

TEST(KubeStatus, EngineStatusCodesMapToKubernetesCodes) {
  EXPECT_EQ(FromStatus(Status::NotFound("no"), Pods(), "x").code, 404);
  EXPECT_EQ(FromStatus(Status::AlreadyExists("dup"), Pods(), "x").code, 409);
  EXPECT_EQ(FromStatus(Status::Conflict("busy"), Pods(), "x").Message(),
            R"(Operation cannot be fulfilled on pods "x": busy)");
  EXPECT_EQ(FromStatus(Status::InvalidArgument("bad"), Pods(), "x").code, 422);
  EXPECT_EQ(FromStatus(Status::FailedPrecondition("later"), Pods(), "x").code, 400);
  EXPECT_EQ(FromStatus(Status::ResourceExhausted("quota"), Pods(), "x").code, 403);
  EXPECT_EQ(FromStatus(Status::Internal("bug"), Pods(), "x").code, 500);
}

TEST(KubeStatus, LoaderWarningsBecomeWarningHeaders) {
  EXPECT_EQ(WarningHeaderValue(R"(a "b" \c)"), R"(299 - "a \"b\" \\c")");
  Diagnostics d;
  d.Add({Severity::kWarning, "<request>", 3, "ResourceQuota", "team-a/q",
         "spec.hard[limits.nvidia.com/gpu]", "GPU limits always equal requests"});
  d.Add({Severity::kError, "<request>", 4, "ResourceQuota", "team-a/q", "spec", "an error"});
  EXPECT_EQ(WarningsFromDiagnostics(d, "ResourceQuota", "q"),
            std::vector<std::string>{
                "spec.hard[limits.nvidia.com/gpu]: GPU limits always equal requests"});
}

// kubectl prints a Status body as `Error from server (Reason): message`.
TEST(KubeStatus, KubectlPrintsOurStatusBodiesAsKubeApiserverErrors) {
  testing::FakeApiServer server([](httplib::Server& s) {
    s.Get("/api/v1/namespaces/team-a/pods/x", [](const httplib::Request&, httplib::Response& res) {
      KubeStatus st = NotFound(ResourceName::Of(Pods()), "x");
      res.status = st.code;
      res.set_content(st.body.dump(), "application/json");
    });
    s.Get("/api/v1/namespaces/team-a/pods/w", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Warning", WarningHeaderValue("spec.x: \"odd\" but accepted"));
      res.set_content(
          R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w","namespace":"team-a"}})",
          "application/json");
    });
    // On a NotFound, kubectl 1.32 also reads the namespace (to say when that is what is missing).
    s.Get("/api/v1/namespaces/team-a", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}})",
                      "application/json");
    });
    s.Get("/api/v1/namespaces/team-c", [](const httplib::Request&, httplib::Response& res) {
      KubeStatus st = NotFound(ResourceName::Of(*FindResource("", "v1", "namespaces")), "team-c");
      res.status = st.code;
      res.set_content(st.body.dump(), "application/json");
    });
    s.Get("/api/v1/namespaces/team-b/pods", [](const httplib::Request&, httplib::Response& res) {
      KubeStatus st = Forbidden(
          ResourceName::Of(Pods()), "",
          R"(User "alice" cannot list resource "pods" in API group "" in the namespace "team-b")");
      res.status = st.code;
      res.set_content(st.body.dump(), "application/json");
    });
  });
  auto scratch = testing::Scratch("status");
  auto nf = server.Kubectl("get pod x -n team-a", scratch);
  EXPECT_EQ(nf.rc, 1);
  EXPECT_EQ(nf.err, "Error from server (NotFound): pods \"x\" not found\n");
  auto warned = server.Kubectl("get pod w -n team-a -o name", scratch);
  EXPECT_EQ(warned.rc, 0) << warned.err;
  EXPECT_EQ(warned.err, "Warning: spec.x: \"odd\" but accepted\n");
  auto ns = server.Kubectl("get pod x -n team-c", scratch);
  EXPECT_EQ(ns.err, "Error from server (NotFound): namespaces \"team-c\" not found\n");
  auto fb = server.Kubectl("get pods -n team-b", scratch);
  EXPECT_EQ(fb.rc, 1);
  EXPECT_EQ(fb.err,
            "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource "
            "\"pods\" in API group \"\" in the namespace \"team-b\"\n");
}

}  // namespace status_test
}  // namespace arbiter::kube
