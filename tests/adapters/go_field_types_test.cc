// The JSON types of a Pod's fields (adapters/yaml/go_field_types.h): every row of the table
// refuses a value of another JSON type with the field's path and kube-apiserver's words, and
// takes one of its type; the loader refuses the same (the rows it reads itself with its own
// words); and a valid pod whose fields' types are changed at random never throws, and is either
// loaded with every field of its Go type or refused.
#include "adapters/yaml/go_field_types.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>

#include "adapters/yaml/manifest_loader.h"

namespace arbiter::yaml {
namespace go_field_types_test {

using Json = nlohmann::json;

Json BasePod() {
  return Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
                         "spec":{"containers":[{"name":"c"}]}})");
}

Json BaseJob() {
  return Json::parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
    "spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c"}]}}}})");
}

std::string_view StructOf(std::string_view go_type) {
  const size_t dot = go_type.rfind('.');
  return dot == std::string_view::npos ? go_type : go_type.substr(dot + 1);
}

// Where a struct's fields are in an object of struct `root`: the JSON pointer of one, its path
// (indexes: [0]) and Go's path (no indexes; an inline struct's name).
struct Route {
  Json::json_pointer ptr;
  std::string path, go;
};

std::string Join(const std::string& a, std::string_view b) {
  return a.empty() ? std::string(b) : a + "." + std::string(b);
}

std::map<std::string, Route, std::less<>> Routes(const std::string& root) {
  std::map<std::string, Route, std::less<>> routes;
  routes[root] = Route{Json::json_pointer(), "", ""};
  std::queue<std::string> todo;
  todo.push(root);
  while (!todo.empty()) {
    const Route from = routes[todo.front()];
    const std::string owner = todo.front();
    todo.pop();
    for (const GoFieldRow& r : GoFieldTable()) {
      if (r.owner != owner || r.shape != GoShape::kStruct || r.wrap == GoWrap::kMap) continue;
      const std::string child(StructOf(r.item_type));
      if (routes.count(child)) continue;
      Route to{from.ptr / std::string(r.field), Join(from.path, r.field),
               Join(from.go, r.go_field.empty() ? r.field : r.go_field)};
      if (r.wrap == GoWrap::kList) {
        to.ptr /= 0;
        to.path += "[0]";
      }
      routes[child] = to;
      todo.push(child);
    }
  }
  return routes;
}

// A value of the row's shape's type, and one of another JSON type (with Go's word for it).
Json Right(GoShape s) {
  switch (s) {
    case GoShape::kString:
      return "x";
    case GoShape::kBool:
      return true;
    case GoShape::kInt32:
    case GoShape::kInt64:
      return -7;
    case GoShape::kQuantity:
      return "100m";
    case GoShape::kTime:
      return "2026-01-01T00:00:00Z";
    case GoShape::kIntOrString:
      return 8080;
    case GoShape::kStruct:
      return Json::object();
  }
  return nullptr;
}

std::pair<Json, std::string> Wrong(GoShape s) {
  switch (s) {
    case GoShape::kString:
      return {5, "number"};
    case GoShape::kBool:
      return {"true", "string"};
    case GoShape::kInt32:
      return {1.5, "number 1.5"};
    case GoShape::kInt64:
      return {"5", "string"};
    case GoShape::kQuantity:
    case GoShape::kIntOrString:
      return {true, "bool"};
    case GoShape::kTime:
      return {Json::object(), "object"};
    case GoShape::kStruct:
      return {"x", "string"};
  }
  return {nullptr, ""};
}

// kube's message for `word` in one value of the row (of Go type `type`) at Go path `go`.
std::string Expected(const GoFieldRow& r, const std::string& word, std::string_view type,
                     const std::string& go) {
  if (r.shape == GoShape::kQuantity && type == "resource.Quantity") return kQuantityError;
  if (r.shape == GoShape::kTime && type == "v1.Time")
    return "json: cannot unmarshal " + word + " into Go value of type string";
  if (r.shape == GoShape::kIntOrString && type == "intstr.IntOrString")
    return "json: cannot unmarshal " + word + " into Go value of type int32";
  return "json: cannot unmarshal " + word + " into Go struct field " + std::string(r.owner) + "." +
         go + " of type " + std::string(type);
}

struct Placed {
  Json doc;
  std::string root, path, go;
};

// The row's field set to `value` in a valid object of the first root reaching the row's struct.
Placed Place(const GoFieldRow& r, const Json& value) {
  static const auto pod = Routes("Pod");
  static const auto job = Routes("Job");
  const bool in_pod = pod.count(r.owner) > 0;
  const Route& at = in_pod ? pod.find(r.owner)->second : job.find(r.owner)->second;
  Placed p{in_pod ? BasePod() : BaseJob(), in_pod ? "Pod" : "Job", Join(at.path, r.field),
           Join(at.go, r.go_field.empty() ? r.field : r.go_field)};
  p.doc[at.ptr / std::string(r.field)] = value;
  return p;
}

std::vector<GoTypeProblem> Check(const Placed& p) { return CheckGoTypes(p.doc, p.root, 10); }

TEST(GoFieldTypesTest, EveryStructOfTheTableIsReachableFromAPodOrAJob) {
  const auto pod = Routes("Pod");
  const auto job = Routes("Job");
  for (const GoFieldRow& r : GoFieldTable())
    EXPECT_TRUE(pod.count(r.owner) || job.count(r.owner)) << r.owner << "." << r.field;
  EXPECT_GT(GoFieldTable().size(), 200u);
}

TEST(GoFieldTypesTest, EveryRowRefusesAnotherTypeWithItsPathAndKubesWords) {
  for (const GoFieldRow& r : GoFieldTable()) {
    SCOPED_TRACE(std::string(r.owner) + "." + std::string(r.field));
    const auto [wrong, word] = Wrong(r.shape);
    if (r.wrap == GoWrap::kOne) {
      const Placed p = Place(r, wrong);
      const auto problems = Check(p);
      ASSERT_EQ(problems.size(), 1u) << p.doc.dump();
      EXPECT_EQ(problems[0].path, p.path);
      EXPECT_EQ(problems[0].message, Expected(r, word, r.go_type, p.go));
      continue;
    }
    // The list or map itself of another type (a map for a list, a list for a map) ...
    const bool list = r.wrap == GoWrap::kList;
    const Placed whole = Place(r, list ? Json::object() : Json::array());
    auto problems = Check(whole);
    ASSERT_EQ(problems.size(), 1u) << whole.doc.dump();
    EXPECT_EQ(problems[0].path, whole.path);
    EXPECT_EQ(problems[0].message, Expected(r, list ? "object" : "array", r.go_type, whole.go));
    // ... and an item or a value of another type.
    const Placed one = Place(r, list ? Json::array({Right(r.shape), wrong})
                                     : Json{{"ok", Right(r.shape)}, {"x-key", wrong}});
    problems = Check(one);
    ASSERT_EQ(problems.size(), 1u) << one.doc.dump();
    EXPECT_EQ(problems[0].path, one.path + (list ? "[1]" : ".x-key"));
    EXPECT_EQ(problems[0].message, Expected(r, word, r.item_type, one.go));
  }
}

TEST(GoFieldTypesTest, EveryRowTakesItsTypeAndNull) {
  for (const GoFieldRow& r : GoFieldTable()) {
    SCOPED_TRACE(std::string(r.owner) + "." + std::string(r.field));
    const Json right = r.wrap == GoWrap::kOne    ? Right(r.shape)
                       : r.wrap == GoWrap::kList ? Json::array({Right(r.shape), nullptr})
                                                 : Json{{"k", Right(r.shape)}, {"n", nullptr}};
    for (const Json& v : {right, Json()}) {
      const Placed p = Place(r, v);
      EXPECT_TRUE(Check(p).empty()) << p.doc.dump() << ": " << Check(p)[0].message;
    }
  }
}

// Every row of a Pod's struct is refused by the loader too (arbiter validate / sim): the rows it
// does not read with the Go words, the ones it reads with its own.
TEST(GoFieldTypesTest, TheLoaderRefusesEveryRowOfAPodWithThePath) {
  for (const GoFieldRow& r : GoFieldTable()) {
    if (r.owner == "Job" || r.owner == "JobSpec" || r.owner == "PodTemplateSpec") continue;
    SCOPED_TRACE(std::string(r.owner) + "." + std::string(r.field));
    const Json wrong = r.wrap == GoWrap::kList  ? Json("x")
                       : r.wrap == GoWrap::kMap ? Json::array()
                                                : Wrong(r.shape).first;
    const Placed p = Place(r, wrong);
    ManifestLoad load;
    LoadManifestJson(p.doc, "test", &load);
    ASSERT_FALSE(load.ok()) << p.doc.dump();
    // An error at the field, or above it (a field the loader does not know: spec.resources), or
    // below it (the loader's own reading of its items).
    bool found = false, go_words = false;
    for (const Diagnostic& d : load.diagnostics.items) {
      if (d.severity != Severity::kError || d.field_path.empty()) continue;
      found = found || d.field_path.rfind(p.path, 0) == 0 || p.path.rfind(d.field_path, 0) == 0;
      go_words = go_words || (d.field_path == p.path &&
                              d.message.find("kube-apiserver refuses it: ") != std::string::npos);
    }
    EXPECT_TRUE(found) << p.doc.dump();
    if (!r.loader_typed) {
      EXPECT_TRUE(go_words) << p.doc.dump();
    }
  }
}

// kube-apiserver's words, as it answers them (core/v1 types.go; sigs.k8s.io/json's decoder).
TEST(GoFieldTypesTest, KubesMessagesForTheTrialsBodies) {
  const auto message = [](const char* json, std::string_view kind = "Pod") {
    auto m = DecodeErrorMessage(Json::parse(json), kind, "v1");
    return m.value_or("(accepted)");
  };
  EXPECT_EQ(message(R"({"metadata":{"name":"badtype2"},"spec":{"containers":[
                         {"name":"main","image":"x","args":"notalist"}]}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into "
            "Go struct field Container.spec.containers.args of type []string");
  EXPECT_EQ(message(R"({"spec":{"containers":[{"name":"main","image":true}]}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal bool into Go "
            "struct field Container.spec.containers.image of type string");
  EXPECT_EQ(message(R"({"spec":{"containers":[{"name":"main","image":5}]}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into "
            "Go struct field Container.spec.containers.image of type string");
  EXPECT_EQ(message(R"({"spec":{"priority":3000000000}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number "
            "3000000000 into Go struct field PodSpec.spec.priority of type int32");
  EXPECT_EQ(message(R"({"spec":{"nodeSelector":{"a":1}}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into "
            "Go struct field PodSpec.spec.nodeSelector of type string");
  EXPECT_EQ(message(R"({"metadata":{"finalizers":"x"}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into "
            "Go struct field ObjectMeta.metadata.finalizers of type []string");
  EXPECT_EQ(message(R"({"spec":{"volumes":[{"name":"v","emptyDir":"x"}]}})"),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into "
            "Go struct field Volume.spec.volumes.VolumeSource.emptyDir of type "
            "v1.EmptyDirVolumeSource");
  EXPECT_EQ(message(R"({"spec":{"containers":[{"resources":{"requests":{"cpu":true}}}]}})"),
            std::string("Pod in version \"v1\" cannot be handled as a Pod: ") + kQuantityError);
  EXPECT_EQ(message(R"({"spec":{"template":{"spec":{"containers":[{"args":"x"}]}}}})", "Job"),
            "Job in version \"v1\" cannot be handled as a Job: json: cannot unmarshal string into "
            "Go struct field Container.spec.template.spec.containers.args of type []string");
  EXPECT_EQ(message(R"({"spec":{"containers":[{"name":"c","image":"x","args":["a"],
      "env":[{"name":"A","value":"1","valueFrom":{"fieldRef":{"fieldPath":"x"}}}],
      "ports":[{"containerPort":80,"protocol":"TCP","hostPort":8080,"name":"http"}],
      "resources":{"requests":{"cpu":"1","memory":1024}},"stdin":true,"tty":false}],
      "tolerations":[{"key":"k","tolerationSeconds":30}],"priority":5}})"),
            "(accepted)");
  EXPECT_EQ(message(R"({"spec":{"containers":[{"name":5}]}})", "Namespace"), "(accepted)");
}

// A YAML manifest (arbiter validate): kubectl's YAML 1.1 reads `yes` as a boolean (the loader
// does too; the single letters y / n it reads as strings, as docs/manifests.md says).
TEST(GoFieldTypesTest, TheLoaderReadsYamlScalarsAsKubectlSendsThem) {
  for (const bool fast : {true, false}) {
    ManifestLoad bad;
    bad.fast_yaml = fast;
    LoadManifestText(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - name: c\n    image: yes\n    stdin: \"true\"\n",
        "p.yaml", &bad);
    ASSERT_EQ(bad.diagnostics.ErrorCount(), 2u) << fast;
    EXPECT_EQ(bad.diagnostics.items[0].field_path, "spec.containers[0].image");
    EXPECT_EQ(bad.diagnostics.items[0].line, 7);
    EXPECT_EQ(bad.diagnostics.items[1].field_path, "spec.containers[0].stdin");
    ManifestLoad good;
    good.fast_yaml = fast;
    LoadManifestText(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - name: c\n    image: y\n    args: [\"1\", a]\n    stdin: true\n",
        "p.yaml", &good);
    EXPECT_TRUE(good.ok()) << (good.diagnostics.items.empty()
                                   ? ""
                                   : good.diagnostics.items[0].ToString());
  }
}

// ------------------------------------------------------------------ fuzz

Json RichPod() {
  return Json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"p","namespace":"ns","labels":{"app":"a"},"annotations":{"x":"y"},
      "finalizers":["f"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u",
      "controller":true}]},
    "spec":{"containers":[{"name":"c","image":"busybox","command":["sh"],"args":["-c","x"],
      "workingDir":"/","env":[{"name":"A","value":"1"},{"name":"B","valueFrom":{"fieldRef":
      {"fieldPath":"metadata.name"}}}],"ports":[{"containerPort":80,"protocol":"TCP",
      "hostPort":8080,"name":"http"}],"resources":{"requests":{"cpu":"1","memory":"1Gi"},
      "limits":{"cpu":2}},"imagePullPolicy":"Always","stdin":true,"tty":false,
      "securityContext":{"runAsUser":1000,"privileged":false,"capabilities":{"add":["NET_ADMIN"]}},
      "volumeMounts":[{"name":"v","mountPath":"/v","readOnly":true}],
      "livenessProbe":{"httpGet":{"port":8080,"path":"/"},"periodSeconds":5}}],
    "initContainers":[{"name":"i","image":"x","args":["a"]}],
    "restartPolicy":"Always","nodeSelector":{"zone":"a"},
    "tolerations":[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],
    "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},
    "schedulerName":"default-scheduler","priorityClassName":"high","priority":5,
    "terminationGracePeriodSeconds":30,"activeDeadlineSeconds":60,"dnsPolicy":"ClusterFirst",
    "serviceAccountName":"sa","hostNetwork":false,"volumes":[{"name":"v","emptyDir":{}}],
    "overhead":{"cpu":"10m"},"schedulingGates":[{"name":"g"}],
    "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
      "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"a"}}}]}})");
}

// Every value's pointer in `j`.
void Pointers(const Json& j, const Json::json_pointer& at, std::vector<Json::json_pointer>* out) {
  out->push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) Pointers(it.value(), at / it.key(), out);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) Pointers(j[i], at / i, out);
}

Json RandomValue(std::mt19937& rng) {
  switch (rng() % 10) {
    case 0:
      return "s";
    case 1:
      return static_cast<int64_t>(rng() % 100);
    case 2:
      return 1.5;
    case 3:
      return rng() % 2 == 0;
    case 4:
      return Json::object();
    case 5:
      return Json::array();
    case 6:
      return nullptr;
    case 7:
      return Json::array({5});
    case 8:
      return Json{{"k", 5}};
    default:
      return 5000000000LL;
  }
}

TEST(GoFieldTypesTest, FuzzedTypesAreLoadedWithTheirGoTypesOrRefusedAndNeverThrow) {
  ASSERT_TRUE(CheckGoTypes(RichPod(), "Pod", 10).empty());
  ManifestLoad rich;
  LoadManifestJson(RichPod(), "rich", &rich);
  ASSERT_TRUE(rich.ok()) << rich.diagnostics.items[0].ToString();
  std::mt19937 rng(20261207);
  int refused = 0, accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    Json pod = RichPod();
    for (int changes = 1 + static_cast<int>(rng() % 3); changes > 0; --changes) {
      std::vector<Json::json_pointer> at;
      Pointers(pod, Json::json_pointer(), &at);
      const Json::json_pointer p = at[1 + rng() % (at.size() - 1)];
      if (p.to_string() == "/kind" || p.to_string() == "/apiVersion") continue;
      pod[p] = RandomValue(rng);
    }
    SCOPED_TRACE(pod.dump());
    std::vector<GoTypeProblem> problems;
    ASSERT_NO_THROW(problems = CheckGoTypes(pod, "Pod", 10));
    for (const bool fast : {true, false}) {
      ManifestLoad load;
      load.fast_yaml = fast;
      ASSERT_NO_THROW(LoadManifestJson(pod, "fuzz", &load));
      // The loader takes no pod of a wrong type (the API would refuse it with 400 first).
      if (load.ok()) {
        ASSERT_TRUE(problems.empty()) << problems[0].path << ": " << problems[0].message;
      }
      if (fast) (load.ok() ? accepted : refused)++;
    }
    if (!problems.empty()) {
      EXPECT_EQ(DecodeErrorMessage(pod, "Pod", "v1")
                    .value_or("")
                    .rfind("Pod in version \"v1\" cannot be handled as a Pod: ", 0),
                0u);
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 1000);
}

}  // namespace go_field_types_test
}  // namespace arbiter::yaml
