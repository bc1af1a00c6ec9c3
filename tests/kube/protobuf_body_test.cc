// Protobuf request bodies (kubectl's typed generators) decode into the JSON the JSON path gets;
// bodies are built by hand from the protobuf wire format, field numbers from generated.proto.
#include "adapters/kube/protobuf_body.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

namespace arbiter::kube {
namespace {

using json = nlohmann::json;

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
// A length-delimited field (wire type 2).
std::string Bytes(uint32_t field, const std::string& value) {
  return Varint(field << 3 | 2) + Varint(value.size()) + value;
}
// A varint field (wire type 0).
std::string Int(uint32_t field, uint64_t value) { return Varint(field << 3) + Varint(value); }
std::string Entry(uint32_t field, const std::string& k, const std::string& v) {
  return Bytes(field, Bytes(1, k) + Bytes(2, v));
}
// "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding "", contentType ""}
std::string Envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw) {
  return std::string("k8s\0", 4) + Bytes(1, Bytes(1, api_version) + Bytes(2, kind)) +
         Bytes(2, raw) + Bytes(3, "") + Bytes(4, "");
}
// ObjectMeta as gogo-protobuf writes it: non-pointer strings even when empty, an empty
// creationTimestamp (8).
std::string Meta(const std::string& name, const std::string& ns = "") {
  return Bytes(1, Bytes(1, name) + Bytes(2, "") + Bytes(3, ns) + Bytes(4, "") + Bytes(5, "") +
                      Bytes(6, "") + Int(7, 0) + Bytes(8, ""));
}

TEST(ProtobufBodyTest, NamespaceDecodesToTheJsonObjectWithEmptyFieldsLeftOut) {
  std::string meta = Bytes(1, "dev") + Bytes(2, "") + Bytes(3, "") + Entry(11, "team", "ml") +
                     Entry(11, "tier", "gold") + Entry(12, "note", "x") + Bytes(14, "f1");
  std::string raw = Bytes(1, meta) + Bytes(2, Bytes(1, "kubernetes")) + Bytes(3, Bytes(1, ""));
  ProtobufBody b = DecodeProtobufBody(Envelope("v1", "Namespace", raw));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"dev","labels":{"team":"ml","tier":"gold"},"annotations":{"note":"x"},
                  "finalizers":["f1"]},
      "spec":{"finalizers":["kubernetes"]}})"));
}

// Issue 27: `kubectl auth can-i` posts its SelfSubjectAccessReview as protobuf (kubectl 1.32).
TEST(ProtobufBodyTest, SelfSubjectAccessReviewSpecDecodes) {
  const std::string res = Bytes(1, "team-a") + Bytes(2, "create") + Bytes(3, "policy") +
                          Bytes(4, "") + Bytes(5, "pods") + Bytes(6, "eviction") + Bytes(7, "web");
  ProtobufBody b = DecodeProtobufBody(Envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                                               Meta("") + Bytes(2, Bytes(1, res)) + Bytes(3, "")));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["spec"], json::parse(R"({"resourceAttributes":{"namespace":"team-a",
      "verb":"create","group":"policy","resource":"pods","subresource":"eviction",
      "name":"web"}})"));
  ProtobufBody n = DecodeProtobufBody(
      Envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
               Meta("") + Bytes(2, Bytes(2, Bytes(1, "/metrics") + Bytes(2, "get")))));
  ASSERT_TRUE(n.ok()) << n.message;
  EXPECT_EQ(n.object["spec"],
            json::parse(R"({"nonResourceAttributes":{"path":"/metrics","verb":"get"}})"));
  ProtobufBody who = DecodeProtobufBody(
      Envelope("authentication.k8s.io/v1", "SelfSubjectReview", Meta("") + Bytes(2, "")));
  ASSERT_TRUE(who.ok()) << who.message;
  EXPECT_EQ(who.object["kind"], "SelfSubjectReview");
}

TEST(ProtobufBodyTest, ResourceQuotaHardIsAMapOfQuantityStringsWithScopesAndScopeSelector) {
  std::string spec = Entry(1, "cpu", Bytes(1, "2")) + Entry(1, "nvidia.com/gpu", Bytes(1, "1")) +
                     Bytes(2, "NotTerminating") +
                     Bytes(3, Bytes(1, Bytes(1, "PriorityClass") + Bytes(2, "In") + Bytes(3, "hi") +
                                           Bytes(3, "lo")));
  std::string raw = Meta("q", "dev") + Bytes(2, spec) + Bytes(3, Entry(1, "cpu", Bytes(1, "0")));
  ProtobufBody b = DecodeProtobufBody(Envelope("v1", "ResourceQuota", raw));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"v1","kind":"ResourceQuota",
      "metadata":{"name":"q","namespace":"dev"},
      "spec":{"hard":{"cpu":"2","nvidia.com/gpu":"1"},"scopes":["NotTerminating"],
              "scopeSelector":{"matchExpressions":[
                  {"scopeName":"PriorityClass","operator":"In","values":["hi","lo"]}]}}})"));
}

TEST(ProtobufBodyTest, PriorityClassValueIsKeptEvenWhenZeroAndNegativeInt32Decodes) {
  std::string raw = Meta("hi") + Int(2, static_cast<uint64_t>(int64_t{-5})) + Int(3, 1) +
                    Bytes(4, "x") + Bytes(5, "Never");
  ProtobufBody b = DecodeProtobufBody(Envelope("scheduling.k8s.io/v1", "PriorityClass", raw));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"hi"},"value":-5,"globalDefault":true,"description":"x",
      "preemptionPolicy":"Never"})"));
  ProtobufBody zero = DecodeProtobufBody(Envelope(
      "scheduling.k8s.io/v1", "PriorityClass", Meta("z") + Int(2, 0) + Int(3, 0) + Bytes(4, "")));
  ASSERT_TRUE(zero.ok()) << zero.message;
  EXPECT_EQ(zero.object["value"], 0);
  EXPECT_FALSE(zero.object.contains("globalDefault"));
  EXPECT_FALSE(zero.object.contains("description"));
}

TEST(ProtobufBodyTest, PodDisruptionBudgetIntOrStringAndSelectorDecode) {
  std::string selector =
      Bytes(2, Entry(1, "app", "a") + Bytes(2, Bytes(1, "tier") + Bytes(2, "Exists")));
  std::string spec = Bytes(1, Int(1, 0) + Int(2, 1) + Bytes(3, "")) + selector +
                     Bytes(3, Int(1, 1) + Int(2, 0) + Bytes(3, "10%")) + Bytes(4, "AlwaysAllow");
  ProtobufBody b = DecodeProtobufBody(
      Envelope("policy/v1", "PodDisruptionBudget", Meta("p", "dev") + Bytes(2, spec)));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget",
      "metadata":{"name":"p","namespace":"dev"},
      "spec":{"minAvailable":1,"maxUnavailable":"10%","unhealthyPodEvictionPolicy":"AlwaysAllow",
              "selector":{"matchLabels":{"app":"a"},
                          "matchExpressions":[{"key":"tier","operator":"Exists"}]}}})"));
}

TEST(ProtobufBodyTest, MultiByteUtf8StringsAreKept) {
  const std::string name = "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x9a\x80";
  ProtobufBody b = DecodeProtobufBody(
      Envelope("scheduling.k8s.io/v1", "PriorityClass", Meta("hi") + Int(2, 1) + Bytes(4, name)));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["description"], name);
}

TEST(ProtobufBodyTest, UnknownFieldsOfEveryWireTypeAreSkipped) {
  std::string unknown = Int(99, 7) + Varint(98 << 3 | 1) + std::string(8, '\x01') +
                        Varint(97 << 3 | 5) + std::string(4, '\x02') + Bytes(96, "junk");
  std::string raw = Bytes(1, Bytes(1, "dev") + unknown + Bytes(17, "managed")) + unknown;
  ProtobufBody b = DecodeProtobufBody(Envelope("v1", "Namespace", raw) + unknown);
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["metadata"], json::parse(R"({"name":"dev"})"));
}

TEST(ProtobufBodyTest, KindNotDecodedIsUnsupportedAndNamesTheDecodedKinds) {
  ProtobufBody cm = DecodeProtobufBody(Envelope("v1", "ConfigMap", Meta("c")));
  EXPECT_EQ(cm.error, ProtobufBody::Error::kUnsupportedKind);
  EXPECT_NE(cm.message.find("ConfigMap (v1) are not supported"), std::string::npos) << cm.message;
  EXPECT_NE(cm.message.find("PodDisruptionBudget (policy/v1)"), std::string::npos);
  EXPECT_NE(cm.message.find("Pod (v1)"), std::string::npos) << cm.message;
  ProtobufBody beta = DecodeProtobufBody(Envelope("policy/v1beta1", "PodDisruptionBudget", ""));
  EXPECT_EQ(beta.error, ProtobufBody::Error::kUnsupportedKind);
  ProtobufBody gzip =
      DecodeProtobufBody(std::string("k8s\0", 4) +
                         Bytes(1, Bytes(1, "v1") + Bytes(2, "Namespace")) + Bytes(3, "gzip"));
  EXPECT_EQ(gzip.error, ProtobufBody::Error::kUnsupportedKind);
  EXPECT_NE(gzip.message.find("gzip"), std::string::npos);
}

TEST(ProtobufBodyTest, MalformedBodiesAreRejectedWithAReason) {
  const std::string good = Envelope("v1", "Namespace", Meta("dev"));
  struct Case {
    std::string body;
    std::string reason;
  };
  const Case cases[] = {
      {"", "magic"},
      {"{\"kind\":\"Namespace\"}", "magic"},
      {std::string("k8s\0", 4) + "\x0a\x05v1", "truncated"},          // length past the end
      {std::string("k8s\0", 4) + "\x08\x80", "truncated varint"},     // varint cut short
      {std::string("k8s\0", 4) + std::string(11, '\xff'), "varint"},  // overlong varint
      {std::string("k8s\0", 4) + "\x0b", "wire type 3"},              // groups are not used
      {std::string("k8s\0", 4) + "\x02\x00", "field number 0"},
      {Envelope("v1", "Namespace", Int(1, 5)), "metadata"},  // metadata as a varint
      // Found by fuzz/protobuf_body_fuzzer.cc: a label key that is not UTF-8 made dump() throw.
      {Envelope("v1", "Namespace", Bytes(1, Entry(11, "\xa1pp", "a"))),
       "labels (field 1) is "
       "not valid UTF-8"},
      {Envelope("v1", "Namespace", Bytes(1, Bytes(1, "\xed\xa0\x80"))), "not valid UTF-8"},
      {Envelope("v1", "Namespace", Bytes(1, Bytes(1, "\xc0\xaf"))), "not valid UTF-8"},
      {Envelope("v1", "Namespace", Bytes(1, Bytes(1, "\xe2\x82"))), "not valid UTF-8"},
      {Envelope("policy/v1", "PodDisruptionBudget", Bytes(2, Bytes(1, Int(1, 2)))),
       "IntOrString type 2"},
  };
  for (const Case& c : cases) {
    ProtobufBody b = DecodeProtobufBody(c.body);
    EXPECT_EQ(b.error, ProtobufBody::Error::kMalformed) << c.reason;
    EXPECT_NE(b.message.find(c.reason), std::string::npos) << b.message;
  }
  for (size_t n = 4; n < good.size(); ++n) {  // every truncation fails or decodes, never crashes
    ProtobufBody b = DecodeProtobufBody(good.substr(0, n));
    if (b.ok()) {
      EXPECT_EQ(b.object["kind"], "Namespace");
    }
  }
  EXPECT_TRUE(DecodeProtobufBody(good).ok());
}

// DeleteOptions (client-go's typed clients send a DELETE's body as protobuf): proto2 optionals,
// so every field sent is a member, "" and 0 included (a uid precondition "" is one); any
// apiVersion or no kind, as kube-apiserver's delete handler decodes it. They were not decoded.
TEST(ProtobufBodyTest, DeleteOptionsKeepEveryFieldSentEmptyOnesIncluded) {
  const std::string raw = Int(1, static_cast<uint64_t>(-5)) + Bytes(2, Bytes(1, "")) + Int(3, 1) +
                          Bytes(4, "") + Bytes(5, "All") + Bytes(5, "x") + Int(6, 0) +
                          Bytes(9, "unknown");
  for (const char* api_version : {"v1", "meta.k8s.io/v1", "batch/v1", ""}) {
    ProtobufBody b = DecodeProtobufDeleteOptions(
        Envelope(api_version, *api_version ? "DeleteOptions" : "", raw));
    ASSERT_TRUE(b.ok()) << b.message;
    EXPECT_EQ(b.object, json::parse(R"({"gracePeriodSeconds":-5,"preconditions":{"uid":""},
        "orphanDependents":true,"propagationPolicy":"","dryRun":["All","x"],
        "ignoreStoreReadErrorWithClusterBreakingPotential":false})"));
  }
  // Two preconditions fields merge, as protobuf merges a repeated message field.
  ProtobufBody merged = DecodeProtobufDeleteOptions(
      Envelope("v1", "DeleteOptions", Bytes(2, Bytes(1, "u")) + Bytes(2, Bytes(2, "7"))));
  EXPECT_EQ(merged.object, json::parse(R"({"preconditions":{"uid":"u","resourceVersion":"7"}})"));
  EXPECT_EQ(DecodeProtobufDeleteOptions("").object, json::object());  // no body: no options
  ProtobufBody pod = DecodeProtobufDeleteOptions(Envelope("v1", "Pod", ""));
  EXPECT_EQ(pod.error, ProtobufBody::Error::kUnsupportedKind);
  EXPECT_EQ(pod.message,
            "no kind \"Pod\" is registered for version \"v1\" in scheme "
            "\"pkg/runtime/scheme.go:111\"");
  EXPECT_EQ(DecodeProtobufDeleteOptions("hello").error, ProtobufBody::Error::kMalformed);
  EXPECT_EQ(DecodeProtobufDeleteOptions(Envelope("v1", "DeleteOptions", Bytes(1, "x"))).error,
            ProtobufBody::Error::kMalformed);  // gracePeriodSeconds is a varint
  const std::string good = Envelope("v1", "DeleteOptions", raw);
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation fails or decodes, never throws
    ProtobufBody b;
    EXPECT_NO_THROW(b = DecodeProtobufDeleteOptions(good.substr(0, n)));
    if (b.ok()) {
      EXPECT_NO_THROW((void)b.object.dump());
    }
  }
  // An Eviction's deleteOptions (policy/v1, pods/eviction).
  ProtobufBody ev = DecodeProtobufBody(
      Envelope("policy/v1", "Eviction", Meta("p0", "default") + Bytes(2, Bytes(2, Bytes(1, "")))));
  ASSERT_TRUE(ev.ok()) << ev.message;
  EXPECT_EQ(ev.object["metadata"]["name"], "p0");
  EXPECT_EQ(ev.object["deleteOptions"], json::parse(R"({"preconditions":{"uid":""}})"));
}

// A Container as gogo-protobuf writes it: every non-pointer field, empty ones included (an empty
// resources message, "" strings, false bools); `extra` goes before the trailing fields.
std::string GogoContainer(const std::string& name, const std::string& image,
                          const std::string& extra = "") {
  return Bytes(1, name) + Bytes(2, image) + extra + Bytes(5, "") + Bytes(13, "") + Bytes(14, "") +
         Int(16, 0) + Int(17, 0) + Int(18, 0) + Bytes(20, "");
}
// A PodSpec as gogo writes it: its non-pointer strings and bools empty, `fields` first.
std::string GogoPodSpec(const std::string& fields) {
  return fields + Bytes(6, "") + Bytes(8, "") + Bytes(9, "") + Bytes(10, "") + Int(11, 0) +
         Int(12, 0) + Int(13, 0) + Bytes(16, "") + Bytes(17, "") + Bytes(19, "") + Bytes(24, "");
}
// A Job {metadata, spec {`spec_fields`, template {metadata, spec}}, status}.
std::string JobBody(const std::string& spec_fields, const std::string& pod_spec) {
  const std::string template_ = Bytes(6, Meta("") + Bytes(2, pod_spec));
  return Envelope("batch/v1", "Job",
                  Meta("j") + Bytes(2, spec_fields + template_) +
                      Bytes(3, Int(4, 0) + Int(5, 0) + Int(6, 0) + Bytes(7, "")));
}

// `kubectl create job j --image=busybox -- sleep 5` (kubectl 1.32 sends it as protobuf): the
// JSON kubectl would send, the empty non-pointer fields gogo writes left out.
TEST(ProtobufBodyTest, JobAsKubectlCreateJobSendsItDecodesToItsJson) {
  const std::string container =
      GogoContainer("j", "busybox", Bytes(3, "sleep") + Bytes(3, "5") + Bytes(8, ""));
  ProtobufBody b =
      DecodeProtobufBody(JobBody("", GogoPodSpec(Bytes(2, container) + Bytes(3, "Never"))));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"batch/v1","kind":"Job",
      "metadata":{"name":"j"},
      "spec":{"template":{"metadata":{},"spec":{
          "containers":[{"name":"j","image":"busybox","command":["sleep","5"]}],
          "restartPolicy":"Never"}}}})"));
  EXPECT_NE(ProtobufKinds().find("Job (batch/v1)"), std::string::npos) << ProtobufKinds();
}

TEST(ProtobufBodyTest, JobSpecPodSpecAndContainerFieldsDecode) {
  const std::string resources =
      Bytes(8, Entry(1, "nvidia.com/gpu", Bytes(1, "1")) + Entry(2, "cpu", Bytes(1, "500m")) +
                   Entry(2, "memory", Bytes(1, "1Gi")));
  const std::string env = Bytes(7, Bytes(1, "A") + Bytes(2, "1")) + Bytes(7, Bytes(1, "B"));
  const std::string main = GogoContainer(
      "main", "trainer:v2",
      Bytes(3, "python") + Bytes(4, "train.py") + Bytes(4, "") + Bytes(5, "/w") + env + resources);
  const std::string init = GogoContainer("init", "busybox", Bytes(8, ""));
  const std::string toleration = Bytes(22, Bytes(1, "nvidia.com/gpu") + Bytes(2, "Exists") +
                                               Bytes(3, "") + Bytes(4, "NoSchedule") + Int(5, 30));
  const std::string pod_spec =
      GogoPodSpec(Bytes(2, main) + Bytes(20, init) + Bytes(3, "OnFailure") + Int(4, 10) +
                  Int(5, 3600) + Entry(7, "gpu", "a100") + Bytes(8, "runner") + toleration +
                  Bytes(19, "arbiter") + Bytes(24, "hi") + Int(25, 1000) + Bytes(31, "Never"));
  const std::string spec =
      Int(1, 2) + Int(2, 4) + Int(3, 600) + Bytes(4, Entry(1, "app", "a")) + Int(5, 1) + Int(7, 6) +
      Int(8, 100) + Bytes(9, "Indexed") + Int(10, 0) + Int(12, 1) + Int(13, 2) +
      Bytes(14, "Failed") + Bytes(15, "") +
      Bytes(11, Bytes(1, Bytes(1, "FailJob") + Bytes(2, Bytes(2, "In") + Int(3, 42) + Int(3, 43)) +
                             Bytes(3, Bytes(1, "DisruptionTarget") + Bytes(2, "True")))) +
      Bytes(16, Bytes(1, Int(2, 2)));
  ProtobufBody b = DecodeProtobufBody(JobBody(spec, pod_spec));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["spec"], json::parse(R"({
      "parallelism":2,"completions":4,"activeDeadlineSeconds":600,
      "selector":{"matchLabels":{"app":"a"}},"manualSelector":true,"backoffLimit":6,
      "ttlSecondsAfterFinished":100,"completionMode":"Indexed","suspend":false,
      "backoffLimitPerIndex":1,"maxFailedIndexes":2,"podReplacementPolicy":"Failed",
      "managedBy":"",
      "podFailurePolicy":{"rules":[{"action":"FailJob",
          "onExitCodes":{"operator":"In","values":[42,43]},
          "onPodConditions":[{"type":"DisruptionTarget","status":"True"}]}]},
      "successPolicy":{"rules":[{"succeededCount":2}]},
      "template":{"metadata":{},"spec":{
          "containers":[{"name":"main","image":"trainer:v2","command":["python"],
                         "args":["train.py",""],"workingDir":"/w",
                         "env":[{"name":"A","value":"1"},{"name":"B"}],
                         "resources":{"limits":{"nvidia.com/gpu":"1"},
                                      "requests":{"cpu":"500m","memory":"1Gi"}}}],
          "initContainers":[{"name":"init","image":"busybox"}],
          "restartPolicy":"OnFailure","terminationGracePeriodSeconds":10,
          "activeDeadlineSeconds":3600,"nodeSelector":{"gpu":"a100"},
          "serviceAccountName":"runner","schedulerName":"arbiter",
          "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule",
                          "tolerationSeconds":30}],
          "priorityClassName":"hi","priority":1000,"preemptionPolicy":"Never"}}})"));
}

// Pointer fields (*int32 in Go) are members whenever sent: `completions: 0` is not "unset".
TEST(ProtobufBodyTest, JobPointerIntZeroIsKept) {
  const std::string pod_spec = GogoPodSpec(Bytes(2, GogoContainer("c", "busybox")) + Int(25, 0));
  ProtobufBody b = DecodeProtobufBody(JobBody(Int(1, 0) + Int(2, 0) + Int(7, 0), pod_spec));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["spec"]["completions"], 0);
  EXPECT_EQ(b.object["spec"]["parallelism"], 0);
  EXPECT_EQ(b.object["spec"]["backoffLimit"], 0);
  EXPECT_EQ(b.object["spec"]["template"]["spec"]["priority"], 0);
  EXPECT_FALSE(b.object["spec"].contains("suspend"));  // not sent: nil
}

// A field the decoder does not decode that holds a value refuses the body (415, naming the
// field), rather than the Job being created without it.
TEST(ProtobufBodyTest, JobWithAnUndecodedFieldSetIsRefusedNamingIt) {
  const std::string c = Bytes(2, GogoContainer("c", "busybox"));
  struct Case {
    std::string pod_spec;
    std::string path;
  };
  const Case cases[] = {
      {GogoPodSpec(Bytes(1, Bytes(1, "data")) + c), "spec.template.spec.volumes (field 1)"},
      {GogoPodSpec(c) + Int(11, 1), "spec.template.spec.hostNetwork (field 11)"},
      {GogoPodSpec(c) + Int(21, 0), "spec.template.spec.automountServiceAccountToken (field 21)"},
      {GogoPodSpec(c + Bytes(2, GogoContainer("d", "x", Bytes(9, Bytes(1, "v") + Bytes(3, "/v"))))),
       "spec.template.spec.containers[1].volumeMounts (field 9)"},
      {GogoPodSpec(
           Bytes(2, GogoContainer("c", "x", Bytes(7, Bytes(1, "A") + Bytes(3, Bytes(1, "k")))))),
       "spec.template.spec.containers[0].env[0].valueFrom (field 3)"},
      {GogoPodSpec(Bytes(2, GogoContainer("c", "x", Bytes(8, Bytes(3, Bytes(1, "gpu")))))),
       "spec.template.spec.containers[0].resources.claims (field 3)"},
      {GogoPodSpec(c) + Bytes(99, "x"), "spec.template.spec (field 99)"},
  };
  for (const Case& k : cases) {
    ProtobufBody b = DecodeProtobufBody(JobBody("", k.pod_spec));
    EXPECT_EQ(b.error, ProtobufBody::Error::kUnsupportedKind) << k.path;
    EXPECT_EQ(b.message, "protobuf bodies of Job (batch/v1): " + k.path +
                             " is not decoded; send the object as JSON (kubectl create -f FILE)");
  }
  ProtobufBody spec = DecodeProtobufBody(JobBody(Int(17, 1), GogoPodSpec(c)));
  EXPECT_EQ(spec.error, ProtobufBody::Error::kUnsupportedKind);
  EXPECT_NE(spec.message.find(": spec (field 17) is not decoded"), std::string::npos)
      << spec.message;
}

// Undecoded fields that hold nothing (gogo writes every non-pointer field, and empty structs as
// messages whose fields are all empty) are accepted.
TEST(ProtobufBodyTest, JobWithEmptyUndecodedFieldsIsAccepted) {
  const std::string empty_struct = Bytes(1, "") + Int(2, 0) + Bytes(3, Bytes(1, "") + Int(2, 0));
  const std::string pod_spec =
      GogoPodSpec(Bytes(2, GogoContainer("c", "busybox", Bytes(12, empty_struct))) +
                  Bytes(14, empty_struct) + Bytes(18, "") + Bytes(99, ""));
  ProtobufBody b = DecodeProtobufBody(JobBody("", pod_spec));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object["spec"]["template"]["spec"],
            json::parse(R"({"containers":[{"name":"c","image":"busybox"}]})"));
}

// The body kubectl 1.32 sent for `kubectl debug web --copy-to=web-copy --container=web
// --image=nginx:1.27 -i -t --attach=false --keep-annotations` (its -v=9 hex dump), web made by
// `kubectl run web --image=nginx --restart=Never --labels=app=web --annotations=note=x --env=A=1
// --port=8080 --image-pull-policy=IfNotPresent --privileged --command -- nginx -g 'daemon off;'`
// and stored by arbiter (`kubectl run` itself sends JSON; client-go's typed clients, protobuf).
constexpr char kDebugCopyPod[] =
    "6b3873000a090a0276311203506f6412ec010a2a0a087765622d636f707912001a0764656661756c7422002a"
    "0032003800420062090a046e6f746512017812ab0112620a03776562120a6e67696e783a312e32371a056e67"
    "696e781a022d671a0b6461656d6f6e206f66663b2a00320b0a00100018903f22002a003a060a014112013142"
    "006a00720c49664e6f7450726573656e747a021001800101880100900101a201001a054e65766572320c436c"
    "7573746572466972737442004a0052005800600068008201008a01009a0100c20100c80100fa011450726565"
    "6d70744c6f7765725072696f726974791a100a001a0022002a0032004a005a0072001a002200";

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

TEST(ProtobufBodyTest, PodAsKubectlDebugCopyToSendsItDecodesToItsJson) {
  const std::string body = FromHex(kDebugCopyPod);
  ASSERT_EQ(body.size(), 258u);
  ProtobufBody b = DecodeProtobufBody(body);
  ASSERT_TRUE(b.ok()) << b.message;
  // kubectl's JSON of the same object, less creationTimestamp: null, resources: {}, status: {}.
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"web-copy","namespace":"default","annotations":{"note":"x"}},
      "spec":{"containers":[{"name":"web","image":"nginx:1.27",
                             "command":["nginx","-g","daemon off;"],
                             "ports":[{"containerPort":8080}],"env":[{"name":"A","value":"1"}],
                             "imagePullPolicy":"IfNotPresent",
                             "securityContext":{"privileged":true},"stdin":true,"tty":true}],
              "restartPolicy":"Never","dnsPolicy":"ClusterFirst","priority":0,
              "preemptionPolicy":"PreemptLowerPriority"}})"));
  EXPECT_NE(ProtobufKinds().find("Pod (v1)"), std::string::npos) << ProtobufKinds();
}

// A Pod {metadata, spec, status}; status is skipped whatever it holds.
std::string PodBody(const std::string& pod_spec) {
  return Envelope("v1", "Pod",
                  Meta("p", "dev") + Bytes(2, pod_spec) +
                      Bytes(3, Bytes(1, "Running") + Bytes(7, Bytes(1, "10.0.0.1"))));
}

// `kubectl run p --image=busybox --restart=Never --labels=... --port=... -i -t -- sh`: its
// PodSpec, and every ContainerPort field (containerPort has no omitempty: kept when 0).
TEST(ProtobufBodyTest, PodSpecContainerPortsStdinTtyAndDnsPolicyDecode) {
  const std::string ports =
      Bytes(6, Bytes(1, "http") + Int(2, 0) + Int(3, 8080) + Bytes(4, "") + Bytes(5, "")) +
      Bytes(6, Bytes(1, "") + Int(2, 8443) + Int(3, 0) + Bytes(4, "UDP") + Bytes(5, "127.0.0.1")) +
      Bytes(6, Bytes(1, "dns"));  // containerPort not sent: still 0
  const std::string extra = Bytes(4, "sh") + ports + Bytes(7, Bytes(1, "A") + Bytes(2, "1")) +
                            Bytes(8, "") + Bytes(14, "Always") + Bytes(15, Int(2, 0));
  std::string container = GogoContainer("p", "busybox", extra);
  container += Int(16, 1) + Int(17, 1) + Int(18, 1);  // later fields win, as in protobuf
  const std::string raw =
      Bytes(1, Bytes(1, "p") + Bytes(3, "dev") + Entry(11, "run", "p") + Entry(11, "app", "web")) +
      Bytes(2, GogoPodSpec(Bytes(2, container) + Bytes(3, "Never") + Bytes(6, "ClusterFirst")));
  ProtobufBody b = DecodeProtobufBody(Envelope("v1", "Pod", raw));
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(b.object, json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","namespace":"dev","labels":{"run":"p","app":"web"}},
      "spec":{"containers":[{"name":"p","image":"busybox","args":["sh"],
          "ports":[{"name":"http","containerPort":8080},
                   {"hostPort":8443,"containerPort":0,"protocol":"UDP","hostIP":"127.0.0.1"},
                   {"name":"dns","containerPort":0}],
          "env":[{"name":"A","value":"1"}],"imagePullPolicy":"Always",
          "securityContext":{"privileged":false},"stdin":true,"stdinOnce":true,"tty":true}],
          "restartPolicy":"Never","dnsPolicy":"ClusterFirst"}})"));
  // Status is skipped; empty non-pointer fields (stdin false, dnsPolicy "") are left out.
  ProtobufBody s = DecodeProtobufBody(PodBody(GogoPodSpec(Bytes(2, GogoContainer("c", "x")))));
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(s.object, json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","namespace":"dev"},
      "spec":{"containers":[{"name":"c","image":"x"}]}})"));
}

// As for a Job's pod template: a field not decoded that holds a value refuses the Pod (415,
// naming the field); `kubectl debug node/N` sends volumes, hostNetwork, volumeMounts.
TEST(ProtobufBodyTest, PodWithAnUndecodedFieldSetIsRefusedNamingIt) {
  const std::string c = Bytes(2, GogoContainer("c", "busybox"));
  auto in_container = [](const std::string& extra) {
    return GogoPodSpec(Bytes(2, GogoContainer("c", "busybox", extra)));
  };
  struct Case {
    std::string pod_spec;
    std::string path;
  };
  const Case cases[] = {
      {GogoPodSpec(Bytes(1, Bytes(1, "host-root")) + c), "spec.volumes (field 1)"},
      {GogoPodSpec(c) + Int(11, 1), "spec.hostNetwork (field 11)"},
      {GogoPodSpec(c) + Int(27, 1), "spec.shareProcessNamespace (field 27)"},
      {in_container(Bytes(9, Bytes(1, "host-root") + Bytes(3, "/host"))),
       "spec.containers[0].volumeMounts (field 9)"},
      {in_container(Bytes(20, "File")), "spec.containers[0].terminationMessagePolicy (field 20)"},
      {in_container(Bytes(15, Bytes(1, Bytes(1, "NET_ADMIN")))),
       "spec.containers[0].securityContext.capabilities (field 1)"},
      {in_container(Bytes(15, Int(2, 1) + Int(5, 0))),
       "spec.containers[0].securityContext.runAsNonRoot (field 5)"},
      {in_container(Bytes(6, Int(3, 80)) + Bytes(6, Int(3, 81) + Int(9, 1))),
       "spec.containers[0].ports[1] (field 9)"},
      {GogoPodSpec(c) + Bytes(99, "x"), "spec (field 99)"},
  };
  for (const Case& k : cases) {
    ProtobufBody b = DecodeProtobufBody(PodBody(k.pod_spec));
    EXPECT_EQ(b.error, ProtobufBody::Error::kUnsupportedKind) << k.path;
    EXPECT_EQ(b.message, "protobuf bodies of Pod (v1): " + k.path +
                             " is not decoded; send the object as JSON (kubectl create -f FILE)");
  }
  // Empty messages the decoder skips (capabilities {}) are accepted; a port's wire type checked.
  ProtobufBody empty = DecodeProtobufBody(PodBody(in_container(Bytes(15, Bytes(1, "")))));
  ASSERT_TRUE(empty.ok()) << empty.message;
  EXPECT_EQ(empty.object["spec"]["containers"][0]["securityContext"], json::object());
  EXPECT_EQ(DecodeProtobufBody(PodBody(in_container(Bytes(6, Bytes(3, "80"))))).error,
            ProtobufBody::Error::kMalformed);
}

// Mutated bodies of a Job and of the Pod kubectl sent (kDebugCopyPod) decode or are refused.
TEST(ProtobufBodyTest, MutatedJobBodiesNeverCrashOrThrow) {
  std::mt19937_64 rng(7);
  const std::string seeds[] = {
      JobBody(Int(2, 1), GogoPodSpec(Bytes(2, GogoContainer("c", "busybox", Bytes(3, "sleep"))) +
                                     Bytes(22, Bytes(1, "k") + Int(5, 3)))),
      FromHex(kDebugCopyPod)};
  for (const std::string& seed : seeds) {
    int ok = 0;
    for (int i = 0; i < 20000; ++i) {
      std::string body = seed;
      for (int m = 1 + rng() % 4; m > 0; --m) body[4 + rng() % (body.size() - 4)] = rng();
      ProtobufBody b;
      EXPECT_NO_THROW(b = DecodeProtobufBody(body));
      if (b.ok()) {
        ++ok;
        EXPECT_NO_THROW((void)b.object.dump());
      } else {
        EXPECT_FALSE(b.message.empty());
      }
    }
    EXPECT_GT(ok, 0);
  }
  // Nested empty messages deeper than Empty looks count as a value: refused, not recursed into.
  std::string deep;
  for (int d = 0; d < 2000; ++d) deep = Bytes(1, deep);
  ProtobufBody b = DecodeProtobufBody(JobBody("", GogoPodSpec(Bytes(14, deep))));
  EXPECT_EQ(b.error, ProtobufBody::Error::kUnsupportedKind) << b.message;
}

TEST(ProtobufBodyTest, RandomAndMutatedBytesNeverCrashOrThrow) {
  std::mt19937_64 rng(42);
  const std::string seed = Envelope(
      "policy/v1", "PodDisruptionBudget",
      Meta("p", "dev") + Bytes(2, Bytes(1, Int(1, 0) + Int(2, 1)) + Bytes(2, Entry(1, "a", "b"))));
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string body = seed;
    if (i % 2 == 0) {
      body = std::string("k8s\0", 4);
      for (size_t n = rng() % 64; n > 0; --n) body += static_cast<char>(rng());
    } else {
      for (int m = 1 + rng() % 4; m > 0; --m) body[4 + rng() % (body.size() - 4)] = rng();
    }
    ProtobufBody b;
    EXPECT_NO_THROW(b = DecodeProtobufBody(body));
    if (b.ok()) {
      ++ok;
      EXPECT_TRUE(b.object.is_object());
      EXPECT_NO_THROW((void)b.object.dump());  // every string is valid UTF-8
    } else {
      EXPECT_FALSE(b.message.empty());
    }
  }
  EXPECT_GT(ok, 0);  // some mutations (in string contents) still decode
}

}  // namespace
}  // namespace arbiter::kube
