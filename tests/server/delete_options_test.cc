// DeleteOptions and patches through the HTTP API, in process, against kube-apiserver 1.36's
// answers (a hostile-tenant trial): a propagationPolicy outside the three is 422 Invalid (it was
// taken as none), and a merge patch {"metadata": null} is refused by the name check (it dropped
// the labels and annotations and answered 200).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "served_api.h"

namespace arbiter::server {
namespace delete_options_test {

using api_fixture::Check;

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("delete-options-test", name)) {}
  void Pod(const std::string& name) {
    ServedApi::Pod(name, {{"labels", {{"team", "a"}}}, {"annotations", {{"note", "x"}}}});
  }
};

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

// kube-apiserver 1.36 (handlers/delete.go) decodes DeleteOptions from the body when there is
// one, else from the query: a gracePeriodSeconds that is not an int64 is a 400 in the words of
// strconv.ParseInt (query) or encoding/json (body), and nothing is deleted. A negative one is
// taken as 1 s (registry/rest BeforeDelete). They were read with atoll / ignored, and a
// negative one was refused.
TEST(DeleteOptionsTest, AGracePeriodThatIsNotAnInt64IsKubeApiserversBadRequest) {
  Served s("grace-type");
  s.Pod("p0");
  const std::string path = "/api/v1/namespaces/default/pods/p0";
  for (const auto& [query, message] : std::vector<std::pair<std::string, std::string>>{
           {"abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"},
           {"1.5", "strconv.ParseInt: parsing \"1.5\": invalid syntax"},
           {"", "strconv.ParseInt: parsing \"\": invalid syntax"},
           {"%2B%2D5", "strconv.ParseInt: parsing \"+-5\": invalid syntax"},
           {"99999999999999999999",
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"},
           {"abc&gracePeriodSeconds=5", "strconv.ParseInt: parsing \"abc\": invalid syntax"}}) {
    Json q = Check(s.cli->Delete(path + "?gracePeriodSeconds=" + query), 400);
    EXPECT_EQ(q["reason"], "BadRequest") << query;
    EXPECT_EQ(q["message"], message) << query;
  }
  const std::string prefix = "json: cannot unmarshal ";
  const std::string field = " into Go struct field DeleteOptions.gracePeriodSeconds of type int64";
  for (const auto& [value, what] : std::vector<std::pair<std::string, std::string>>{
           {R"("abc")", "string"},
           {R"("5")", "string"},
           {"1.5", "number 1.5"},
           {"1e3", "number 1e3"},
           {"5.0", "number 5.0"},
           {"99999999999999999999", "number 99999999999999999999"},
           {"9223372036854775808", "number 9223372036854775808"},
           {"true", "bool"},
           {"{}", "object"},
           {"[]", "array"}}) {
    Json b = Check(
        s.cli->Delete(path, R"({"gracePeriodSeconds":)" + value + "}", "application/json"), 400);
    EXPECT_EQ(b["message"], prefix + what + field) << value;
  }
  EXPECT_TRUE(s.Has("p0"));
  // The body's options are the options: the query's are not read then.
  Check(s.cli->Delete(path + "?gracePeriodSeconds=abc", R"({"gracePeriodSeconds":null})",
                      "application/json"),
        200);
  EXPECT_FALSE(s.Has("p0"));
  s.Pod("p1");
  s.Pod("p2");
  Check(s.cli->Delete("/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=-3"), 200);
  Check(s.cli->Delete("/api/v1/namespaces/default/pods/p2", R"({"gracePeriodSeconds":-3})",
                      "application/json"),
        200);
  EXPECT_FALSE(s.Has("p1"));
  EXPECT_FALSE(s.Has("p2"));
}

// The other DeleteOptions members of a wrong JSON type, a body that is not a JSON object, and
// orphanDependents with propagationPolicy: kube-apiserver 1.36's answers, nothing deleted (a body
// that was not JSON was ignored and the pod deleted).
TEST(DeleteOptionsTest, DeleteOptionsOfWrongTypesAreRefusedInGosWords) {
  Served s("member-types");
  s.Pod("p0");
  const std::string path = "/api/v1/namespaces/default/pods/p0";
  const std::string versionKind =
      " into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; "
      "Kind string \"json:\\\"kind,omitempty\\\"\" }";
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"preconditions":{"uid":5}})",
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid "
            "of type types.UID"},
           {R"({"preconditions":{"resourceVersion":true}})",
            "json: cannot unmarshal bool into Go struct field "
            "Preconditions.preconditions.resourceVersion of type string"},
           {R"({"preconditions":"x"})",
            "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions of "
            "type v1.Preconditions"},
           {R"({"propagationPolicy":5})",
            "json: cannot unmarshal number into Go struct field DeleteOptions.propagationPolicy "
            "of type v1.DeletionPropagation"},
           {R"({"orphanDependents":"true"})",
            "json: cannot unmarshal string into Go struct field DeleteOptions.orphanDependents "
            "of type bool"},
           {R"({"dryRun":"All"})",
            "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type "
            "[]string"},
           {R"({"dryRun":[5]})",
            "json: cannot unmarshal number into Go struct field DeleteOptions.dryRun of type "
            "string"},
           {"[]", "couldn't get version/kind; json parse error: json: cannot unmarshal array" +
                      versionKind},
           {R"("x")",
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            "string" +
                versionKind}}) {
    Json b = Check(s.cli->Delete(path, body, "application/json"), 400);
    EXPECT_EQ(b["message"], message) << body;
  }
  Json garbage = Check(s.cli->Delete(path, "notjson", "application/json"), 400);
  EXPECT_EQ(garbage["message"].get<std::string>().rfind("couldn't get version/kind; ", 0), 0u)
      << garbage["message"];
  Json both = Check(s.cli->Delete(path + "?orphanDependents=false&propagationPolicy=Orphan"), 422);
  EXPECT_EQ(both["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: "
            "\"Orphan\": orphanDependents and deletionPropagation cannot be both set");
  Json dry = Check(s.cli->Delete(path, R"({"dryRun":["All","x"]})", "application/json"), 422);
  EXPECT_EQ(dry["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
            "[\"All\",\"x\"]: supported values: \"All\"");
  Json query_dry = Check(s.cli->Delete(path + "?dryRun=x"), 422);
  EXPECT_EQ(query_dry["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"x\"]: "
            "supported values: \"All\"");
  EXPECT_TRUE(s.Has("p0"));
}

// kube-apiserver's DeleteCollection deletes each object as its DELETE would, preconditions
// included: with a uid or resourceVersion precondition every other object it reaches is a 409
// Conflict, and it stops there. They were ignored: every selected object was deleted.
TEST(DeleteOptionsTest, DeleteCollectionHoldsEachObjectToThePreconditions) {
  Served s("collection-preconditions");
  for (const char* name : {"a1", "a2", "a3"}) s.Pod(name);
  auto meta = [&](const std::string& name) {
    return s.daemon->Read([&](const Cluster& c) {
      return Json((*c.store().Get("Pod", "default", name))["metadata"]);
    });
  };
  const std::string uid = meta("a2")["uid"], a1_uid = meta("a1")["uid"];
  const std::string all = "/api/v1/namespaces/default/pods?labelSelector=team%3Da";
  Json q = Check(
      s.cli->Delete(all, R"({"preconditions":{"uid":")" + uid + R"("}})", "application/json"), 409);
  EXPECT_EQ(q["reason"], "Conflict");
  EXPECT_EQ(q["message"],
            "Operation cannot be fulfilled on Pod \"a1\": the UID in the "
            "precondition (" +
                uid + ") does not match the UID in record (" + a1_uid +
                "). The object might have been deleted and then recreated");
  const std::string rv = meta("a3")["resourceVersion"];
  Json r = Check(s.cli->Delete(all, R"({"preconditions":{"resourceVersion":")" + rv + R"("}})",
                               "application/json"),
                 409);
  EXPECT_NE(
      r["message"].get<std::string>().find("the ResourceVersion in the precondition (" + rv + ")"),
      std::string::npos)
      << r["message"];
  for (const char* name : {"a1", "a2", "a3"}) EXPECT_TRUE(s.Has(name)) << name;
  // The object that meets them is deleted.
  Json ok =
      Check(s.cli->Delete("/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Da2",
                          R"({"preconditions":{"uid":")" + uid + R"("}})", "application/json"),
            200);
  EXPECT_EQ(ok["items"].size(), 1u);
  EXPECT_FALSE(s.Has("a2"));
  EXPECT_TRUE(s.Has("a1"));
}

// An empty uid or resourceVersion precondition is one (kube-apiserver checks a non-nil pointer,
// "" included): 409 Conflict, nothing deleted. They were taken as absent and the pod was deleted.
// `null` is no precondition (Go leaves the pointer nil).
TEST(DeleteOptionsTest, AnEmptyPreconditionIsOneAndConflicts) {
  Served s("empty-preconditions");
  s.Pod("p0");
  const std::string pod = "/api/v1/namespaces/default/pods/p0";
  const std::string uid = s.daemon->Read([](const Cluster& c) {
    return (*c.store().Get("Pod", "default", "p0"))["metadata"]["uid"].get<std::string>();
  });
  Json q = Check(s.cli->Delete(pod, R"({"preconditions":{"uid":""}})", "application/json"), 409);
  EXPECT_EQ(q["reason"], "Conflict");
  EXPECT_EQ(q["message"],
            "Operation cannot be fulfilled on Pod \"p0\": the UID in the "
            "precondition () does not match the UID in record (" +
                uid + "). The object might have been deleted and then recreated");
  Json r = Check(
      s.cli->Delete(pod, R"({"preconditions":{"resourceVersion":""}})", "application/json"), 409);
  EXPECT_NE(r["message"].get<std::string>().find("the ResourceVersion in the precondition () "),
            std::string::npos)
      << r["message"];
  Check(s.cli->Delete("/api/v1/namespaces/default/pods?labelSelector=team%3Da",
                      R"({"preconditions":{"uid":""}})", "application/json"),
        409);
  EXPECT_TRUE(s.Has("p0"));
  Check(s.cli->Delete(pod, R"({"preconditions":{"uid":null,"resourceVersion":null}})",
                      "application/json"),
        200);
  EXPECT_FALSE(s.Has("p0"));
}

// Protobuf wire format, by hand: a length-delimited field, a varint field, the runtime.Unknown
// envelope of kube's protobuf serializer.
std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string Bytes(uint32_t field, const std::string& value) {
  return Varint(field << 3 | 2) + Varint(value.size()) + value;
}
std::string Envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw) {
  return std::string("k8s\0", 4) + Bytes(1, Bytes(1, api_version) + Bytes(2, kind)) + Bytes(2, raw);
}
constexpr char kProtobuf[] = "application/vnd.kubernetes.protobuf";

// A protobuf DeleteOptions or Eviction (client-go's typed clients with protobuf) is decoded as
// the JSON one, answered as kube-apiserver 1.36.3 answered the same bytes: its uid precondition
// holds the delete back (409), a bad dryRun is 422, another kind is 400. They were ignored and
// the pod deleted.
TEST(DeleteOptionsTest, ProtobufDeleteOptionsAreDecodedAsTheJsonOnes) {
  Served s("protobuf");
  s.Pod("p0");
  const std::string pod = "/api/v1/namespaces/default/pods/p0";
  const std::string empty_uid = Bytes(2, Bytes(1, ""));
  for (const char* api_version : {"v1", "meta.k8s.io/v1"}) {
    Json q = Check(s.cli->Delete(pod, Envelope(api_version, "DeleteOptions", empty_uid), kProtobuf),
                   409);
    EXPECT_NE(q["message"].get<std::string>().find("the UID in the precondition () does not"),
              std::string::npos)
        << q["message"];
  }
  Json dry =
      Check(s.cli->Delete(pod, Envelope("v1", "DeleteOptions", Bytes(5, "Some")), kProtobuf), 422);
  EXPECT_EQ(dry["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: "
            "supported values: \"All\"");
  Json kind = Check(s.cli->Delete(pod, Envelope("v1", "Pod", ""), kProtobuf), 400);
  EXPECT_EQ(kind["message"],
            "no kind \"Pod\" is registered for version \"v1\" in scheme "
            "\"pkg/runtime/scheme.go:111\"");
  Check(s.cli->Delete(pod, "hello", kProtobuf), 400);
  const std::string meta = Bytes(1, Bytes(1, "p0") + Bytes(3, "default"));
  Json ev =
      Check(s.cli->Post(pod + "/eviction",
                        Envelope("policy/v1", "Eviction", meta + Bytes(2, empty_uid)), kProtobuf),
            409);
  EXPECT_EQ(ev["reason"], "Conflict");
  EXPECT_TRUE(s.Has("p0"));
  Check(s.cli->Post(pod + "/eviction", Envelope("policy/v1", "Eviction", meta), kProtobuf), 201);
  EXPECT_FALSE(s.Has("p0"));
  s.Pod("p1");
  Check(s.cli->Delete("/api/v1/namespaces/default/pods/p1", "", kProtobuf), 200);  // no options
  EXPECT_FALSE(s.Has("p1"));
}

// An Eviction's kind, namespace and name are checked as kube-apiserver 1.36.3 checked them (its
// answers to the same bodies): another kind or namespace is 400 and evicts nothing (it evicted
// the URL's pod), a name that is not a string is 400 (it was a 500).
TEST(DeleteOptionsTest, AnEvictionOfAnotherKindNamespaceOrNameTypeIs400) {
  Served s("eviction-body");
  s.Pod("p0");
  const std::string url = "/api/v1/namespaces/default/pods/p0/eviction";
  const std::pair<const char*, const char*> cases[] = {
      {R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p0","namespace":"x"}})",
       "the namespace of the provided object does not match the namespace sent on the request"},
      {R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p0"}})",
       "Pod in version \"v1\" cannot be handled as a Eviction: converting (v1.Pod) to "
       "(policy.Eviction): unknown conversion"},
      {R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":5}})",
       "Eviction in version \"v1\" cannot be handled as a Eviction: json: cannot unmarshal "
       "number into Go struct field ObjectMeta.metadata.name of type string"},
      {R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p1"}})",
       "name in URL does not match name in Eviction object"},
  };
  for (const auto& [body, message] : cases) {
    Json q = Check(s.cli->Post(url, body, "application/json"), 400);
    EXPECT_EQ(q["message"], message) << body;
  }
  EXPECT_TRUE(s.Has("p0"));
  Check(s.cli->Post(url, R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p0",
      "namespace":"default"}})",
                    "application/json"),
        201);
  EXPECT_FALSE(s.Has("p0"));
}

}  // namespace delete_options_test
}  // namespace arbiter::server
