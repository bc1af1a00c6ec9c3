#include "adapters/kube/table.h"

#include <gtest/gtest.h>

#include <random>

#include "adapters/kube/status.h"
#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace table_test {

using nlohmann::json;

const Millis kNow = *ParseRfc3339("2026-12-01T12:00:00Z");

const ResourceInfo& R(const char* plural, const char* group = "", const char* version = "v1") {
  return *FindResource(group, version, plural);
}

TEST(KubeTable, HumanDurationMatchesKubectlAges) {
  EXPECT_EQ(HumanDuration(-5000), "<invalid>");
  EXPECT_EQ(HumanDuration(-500), "0s");
  EXPECT_EQ(HumanDuration(119000), "119s");
  EXPECT_EQ(HumanDuration(120000), "2m");
  EXPECT_EQ(HumanDuration(125000), "2m5s");
  EXPECT_EQ(HumanDuration(600000), "10m");
  EXPECT_EQ(HumanDuration(3 * 3600000 + 60000), "3h1m");
  EXPECT_EQ(HumanDuration(8 * 3600000), "8h");
  EXPECT_EQ(HumanDuration(int64_t{51} * 3600000), "2d3h");
  EXPECT_EQ(HumanDuration(int64_t{10} * 86400000), "10d");
  EXPECT_EQ(HumanDuration(int64_t{366} * 3 * 86400000), "3y3d");
}

const char* kPending =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-b-5","namespace":"team-b","creationTimestamp":"2026-12-01T11:55:00Z"},
  "spec":{"containers":[{"name":"main"}]},
  "status":{"phase":"Pending","nominatedNodeName":"a100-1","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
  "message":"0/9 nodes are available: 9 Insufficient nvidia.com/gpu."}]}})";
const char* kRunning =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-a-1","namespace":"team-a","creationTimestamp":"2026-12-01T09:00:00Z"},
  "spec":{"containers":[{"name":"main"}],"nodeName":"a100-0"},
  "status":{"phase":"Running","podIP":"10.0.0.5","conditions":[{"type":"Ready","status":"True"}]}})";

TEST(KubeTable, PodRowsShowReadyPendingReasonNodeAndNominatedNode) {
  EXPECT_EQ(
      CellsOf(R("pods"), json::parse(kPending), kNow),
      json::parse(
          R"(["train-b-5","0/1","Unschedulable","0","5m","<none>","<none>","a100-1","<none>"])"));
  EXPECT_EQ(CellsOf(R("pods"), json::parse(kRunning), kNow),
            json::parse(
                R"(["train-a-1","1/1","Running","0","3h","10.0.0.5","a100-0","<none>","<none>"])"));
  json creating = json::parse(kPending);  // a container state does not hide why it waits
  creating["status"]["containerStatuses"] = json::parse(
      R"([{"name":"main","ready":false,"state":{"waiting":{"reason":"ContainerCreating"}}}])");
  creating["status"]["conditions"][0]["reason"] = "QuotaExceeded";
  EXPECT_EQ(CellsOf(R("pods"), creating, kNow)[2], "QuotaExceeded");
  json bound = json::parse(kRunning);
  bound["status"] = json::parse(
      R"({"phase":"Pending","containerStatuses":[{"name":"main","state":{"waiting":{"reason":"ContainerCreating"}}}]})");
  EXPECT_EQ(CellsOf(R("pods"), bound, kNow)[2], "ContainerCreating");
  json deleting = json::parse(kRunning);
  deleting["metadata"]["deletionTimestamp"] = "2026-12-01T11:59:00Z";
  EXPECT_EQ(CellsOf(R("pods"), deleting, kNow)[2], "Terminating");
  json failed = json::parse(kRunning);
  failed["status"] = {{"phase", "Failed"}, {"reason", "Preempted"}};
  EXPECT_EQ(CellsOf(R("pods"), failed, kNow)[2], "Preempted");
  json t = MakeTable(R("pods"), std::vector<json>{json::parse(kRunning)}, kNow,
                     IncludeObject::kMetadata, {{"resourceVersion", "7"}});
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(t["rows"][0]["object"]["metadata"]["namespace"], "team-a");
  EXPECT_FALSE(MakeTable(R("pods"), std::vector<json>{json::parse(kRunning)}, kNow,
                         IncludeObject::kNone)["rows"][0]
                   .contains("object"));
  EXPECT_EQ(MakeTable(R("pods"), std::vector<json>{json::parse(kRunning)}, kNow,
                      IncludeObject::kObject)["rows"][0]["object"]["spec"]["nodeName"],
            "a100-0");
}

TEST(KubeTable, QuotaRowsShowUsedOverHardAndElasticQuotaBorrowing) {
  json rq =
      json::parse(R"({"metadata":{"name":"team-a-gpu","creationTimestamp":"2026-12-01T11:00:00Z"},
    "spec":{"hard":{"requests.nvidia.com/gpu":"16","limits.nvidia.com/gpu":"16","pods":"20"}},
    "status":{"hard":{"requests.nvidia.com/gpu":"16","limits.nvidia.com/gpu":"16","pods":"20"},"used":{"requests.nvidia.com/gpu":"8","pods":"1"}}})");
  EXPECT_EQ(
      CellsOf(R("resourcequotas"), rq, kNow),
      json::parse(
          R"(["team-a-gpu","60m","pods: 1/20, requests.nvidia.com/gpu: 8/16","limits.nvidia.com/gpu: 0/16"])"));
  json eq = json::parse(R"({"metadata":{"name":"team-b","creationTimestamp":"2026-12-01T11:00:00Z"},
    "spec":{"cohort":"gpu","min":{"nvidia.com/gpu":"8","memory":"1Ti"},"max":{"nvidia.com/gpu":"24"}},
    "status":{"used":{"nvidia.com/gpu":"12","memory":"1536Gi","cpu":"500m"},"fairShare":"0.5"}})");
  EXPECT_EQ(
      CellsOf(R("elasticquotas", "arbiter.dev", "v1alpha1"), eq, kNow),
      json::parse(
          R"(["team-b","cpu: 500m, memory: 1536Gi, nvidia.com/gpu: 12","memory: 1Ti, nvidia.com/gpu: 8",
                           "nvidia.com/gpu: 24","cpu: 500m, memory: 512Gi, nvidia.com/gpu: 4","60m","gpu","0.5"])"));
}

TEST(KubeTable, AcceptHeaderOfKubectlGetAsksForATable) {
  EXPECT_TRUE(
      WantsTable("application/json;as=Table;v=v1;g=meta.k8s.io,application/"
                 "json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
  EXPECT_TRUE(WantsTable("application/json;as=Table;g=meta.k8s.io;v=v1"));
  EXPECT_FALSE(WantsTable("application/json"));
  EXPECT_EQ(ParseIncludeObject("Object"), IncludeObject::kObject);
  EXPECT_EQ(ParseIncludeObject(""), IncludeObject::kMetadata);
}

// The reference is kubectl's own rendering of our Tables.
void ServeList(httplib::Server& s, const std::string& path, const ResourceInfo& r,
               std::vector<json> objects) {
  s.Get(path, [&r, objects](const httplib::Request& req, httplib::Response& res) {
    if (!WantsTable(req.get_header_value("Accept"))) {
      json list = {{"kind", r.kind + "List"},
                   {"apiVersion", r.ApiVersion()},
                   {"metadata", {{"resourceVersion", "9"}}},
                   {"items", objects}};
      res.set_content(list.dump(), "application/json");
      return;
    }
    json t = MakeTable(r, objects, kNow, ParseIncludeObject(req.get_param_value("includeObject")),
                       {{"resourceVersion", "9"}});
    res.set_content(t.dump(), "application/json;as=Table;v=v1;g=meta.k8s.io");
  });
}

TEST(KubeTable, KubectlGetPodsWideAndQuotasPrintOurColumns) {
  json eq = json::parse(
      R"({"apiVersion":"arbiter.dev/v1alpha1","kind":"ElasticQuota","metadata":{"name":"team-b","namespace":"team-b","creationTimestamp":"2026-12-01T11:00:00Z"},
    "spec":{"min":{"nvidia.com/gpu":"8"},"max":{"nvidia.com/gpu":"24"}},"status":{"used":{"nvidia.com/gpu":"12"}}})");
  testing::FakeApiServer server([&](httplib::Server& s) {
    ServeList(s, "/api/v1/namespaces/team-a/pods", R("pods"),
              {json::parse(kPending), json::parse(kRunning)});
    ServeList(s, "/apis/arbiter.dev/v1alpha1/namespaces/team-b/elasticquotas",
              R("elasticquotas", "arbiter.dev", "v1alpha1"), {eq});
  });
  auto scratch = testing::Scratch("table");
  auto pods = server.Kubectl("get pods -n team-a -o wide", scratch);
  ASSERT_EQ(pods.rc, 0) << pods.err;
  EXPECT_EQ(pods.out,
            "NAME        READY   STATUS          RESTARTS   AGE   IP         NODE     NOMINATED "
            "NODE   READINESS GATES\n"
            "train-b-5   0/1     Unschedulable   0          5m    <none>     <none>   a100-1       "
            "    <none>\n"
            "train-a-1   1/1     Running         0          3h    10.0.0.5   a100-0   <none>       "
            "    <none>\n");
  auto narrow = server.Kubectl("get pods -n team-a", scratch);
  EXPECT_EQ(narrow.out.substr(0, narrow.out.find('\n')),
            "NAME        READY   STATUS          RESTARTS   AGE");
  auto eqs = server.Kubectl("get eq -n team-b", scratch);
  ASSERT_EQ(eqs.rc, 0) << eqs.err;
  EXPECT_EQ(eqs.out,
            "NAME     USED                 MIN                 MAX                  BORROWED       "
            "     AGE\n"
            "team-b   nvidia.com/gpu: 12   nvidia.com/gpu: 8   nvidia.com/gpu: 24   "
            "nvidia.com/gpu: 4   60m\n");
  auto labels = server.Kubectl("get pods -n team-a --show-labels", scratch);  // needs row objects
  EXPECT_EQ(labels.rc, 0) << labels.err;
}

TEST(KubeTable, EveryResourceHasAsManyCellsAsColumns) {
  json bare =
      json::parse(R"({"metadata":{"name":"x","creationTimestamp":"2026-12-01T11:59:00Z"}})");
  for (const auto& r : ServedResources()) {
    EXPECT_EQ(CellsOf(r, bare, kNow).size(), ColumnsOf(r).size()) << r.kind;
    EXPECT_EQ(ColumnsOf(r)[0].format == "name" || r.kind == "Event", true) << r.kind;
  }
  json ev = json::parse(
      R"({"metadata":{"name":"p.1"},"type":"Warning","reason":"FailedScheduling","message":"0/9 nodes",
    "involvedObject":{"kind":"Pod","name":"p"},"count":3,"firstTimestamp":"2026-12-01T11:50:00Z","lastTimestamp":"2026-12-01T11:59:00Z",
    "source":{"component":"arbiter"}})");
  EXPECT_EQ(
      CellsOf(R("events"), ev, kNow),
      json::parse(
          R"J(["60s (x3 over 10m)","Warning","FailedScheduling","pod/p","","arbiter","0/9 nodes","10m","3","p.1"])J"));
}

// Pods in many states, built from the parts the pod printer reads (and some it must skip), with
// odd types where a client could send them.
json RandomPod(std::mt19937& rng) {
  const auto pick = [&](std::initializer_list<json> options) {
    return *(options.begin() + rng() % options.size());
  };
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  json& m = pod["metadata"] = {{"name", "p-" + std::to_string(rng() % 1000)}, {"namespace", "ns"}};
  if (rng() % 4) m["creationTimestamp"] = pick({"2026-12-01T09:00:00Z", "bad time", 5});
  if (rng() % 5 == 0) m["deletionTimestamp"] = "2026-12-01T11:59:00Z";
  if (rng() % 2) m["labels"] = {{"app", "x"}, {"arbiter.dev/queue", "q"}};
  if (rng() % 3 == 0)
    m["ownerReferences"] = json::parse(R"([{"kind":"Job","name":"j","uid":"u"}])");
  if (rng() % 6 == 0) m = pick({nullptr, "text", json::array()});
  json& spec = pod["spec"] = json::object();
  const size_t containers = rng() % 4;
  for (size_t i = 0; i < containers; ++i)
    spec["containers"].push_back(
        {{"name", "c" + std::to_string(i)}, {"resources", {{"requests", {{"cpu", "10m"}}}}}});
  if (rng() % 8 == 0) spec["containers"] = {{"name", "not an array"}};
  if (rng() % 2) spec["nodeName"] = pick({"node-1", "", 7});
  if (rng() % 4 == 0)
    spec["readinessGates"] = json::parse(R"([{"conditionType":"x/ok"},{"conditionType":"y"}])");
  if (rng() % 10 == 0) return pod;  // no status
  json& st = pod["status"] = json::object();
  st["phase"] = pick({"Pending", "Running", "Succeeded", "Failed", "Unknown", 3});
  if (rng() % 5 == 0) st["reason"] = pick({"Evicted", "NodeLost", ""});
  if (rng() % 2) st["podIP"] = "10.0.0." + std::to_string(rng() % 250);
  if (rng() % 4 == 0) st["nominatedNodeName"] = "node-2";
  if (rng() % 3) {
    st["conditions"] = json::array();
    for (const char* type : {"PodScheduled", "Ready", "x/ok", "y"})
      if (rng() % 2)
        st["conditions"].push_back({{"type", type},
                                    {"status", pick({"True", "False", "Unknown"})},
                                    {"reason", pick({"Unschedulable", "QuotaExceeded", ""})},
                                    {"message", "0/9 nodes"},
                                    {"lastTransitionTime", "2026-12-01T09:00:00Z"}});
  }
  if (rng() % 3) {
    st["containerStatuses"] = json::array();
    for (size_t i = 0; i < containers + rng() % 2; ++i) {
      json cs = {{"name", "c" + std::to_string(i)}, {"image", ""}, {"ready", rng() % 2 == 0}};
      if (rng() % 2) cs["restartCount"] = pick({0, 3, "7"});
      cs["state"] = pick({json::parse(R"({"running":{"startedAt":"2026-12-01T09:00:00Z"}})"),
                          json::parse(R"({"waiting":{"reason":"CrashLoopBackOff"}})"),
                          json::parse(R"({"terminated":{"reason":"Completed","exitCode":0}})"),
                          json::parse(R"({"terminated":{"exitCode":137,"signal":9}})"),
                          json::parse(R"({"terminated":{"exitCode":2}})"), json::object()});
      st["containerStatuses"].push_back(cs);
    }
  }
  return pod;
}

TEST(KubeTable, RowsFromTheStoredTextAreTheBytesOfRowsFromTheTree) {
  std::mt19937 rng(27);
  std::vector<json> objects;
  for (int i = 0; i < 2000; ++i) objects.push_back(RandomPod(rng));
  for (const char* text : {kPending, kRunning}) objects.push_back(json::parse(text));
  for (const auto& include :
       {IncludeObject::kNone, IncludeObject::kMetadata, IncludeObject::kObject})
    for (size_t i = 0; i < objects.size(); ++i) {
      std::string from_tree, from_text;
      TableRow(from_tree, R("pods"), objects[i], kNow, include, i % 2 == 0);
      ASSERT_TRUE(
          TableRowFromText(from_text, R("pods"), WireJson(objects[i]), kNow, include, i % 2 == 0));
      ASSERT_EQ(from_text, from_tree) << objects[i].dump();
    }
}

TEST(KubeTable, EveryResourcesRowFromTextIsItsRowFromTheTree) {
  const json objects[] = {
      json::parse(R"({"metadata":{"name":"x","creationTimestamp":"2026-12-01T11:59:00Z"}})"),
      json::parse(R"({"metadata":{"name":"q","labels":{"a":"b"}},"spec":{"hard":{"cpu":"4"}},
        "status":{"hard":{"cpu":"4"},"used":{"cpu":"1"},"conditions":[{"type":"Ready","status":"True"}]}})"),
      json::object()};
  for (const auto& r : ServedResources())
    for (const json& o : objects) {
      std::string from_tree, from_text;
      TableRow(from_tree, r, o, kNow, IncludeObject::kMetadata, false);
      ASSERT_TRUE(
          TableRowFromText(from_text, r, WireJson(o), kNow, IncludeObject::kMetadata, false));
      EXPECT_EQ(from_text, from_tree) << r.kind << " " << o.dump();
    }
  std::string out;
  EXPECT_FALSE(TableRowFromText(out, R("pods"), "[1]", kNow, IncludeObject::kMetadata, true));
  EXPECT_FALSE(
      TableRowFromText(out, R("pods"), R"({"metadata":)", kNow, IncludeObject::kNone, true));
  EXPECT_EQ(out, "");
}

}  // namespace table_test
}  // namespace arbiter::kube
