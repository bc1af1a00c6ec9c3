// ?limit / ?continue on lists through the HTTP API, in process (list_pages.h): every object once
// in key order, pages from the first page's snapshot, kube-apiserver's answers to bad tokens and
// to a continue whose snapshot is gone, the Table form, selectors with a limit.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kube/continue_token.h"
#include "adapters/kube/resources.h"
#include "adapters/kube/status.h"
#include "adapters/kube/table.h"
#include "served_api.h"
#include "server/daemon.h"
#include "server/http/http_api.h"

namespace arbiter::server {
namespace list_paging_test {

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("list-paging-test", name)) {}
  void Pod(const std::string& name, const std::string& team = "a") {
    ServedApi::Pod(name, {{"labels", {{"team", team}}}});
  }
  Json Get(const std::string& path, int want = 200, const std::string& accept = "") {
    httplib::Headers h;
    if (!accept.empty()) h.emplace("Accept", accept);
    auto r = cli->Get(path, h);
    EXPECT_TRUE(r) << path;
    if (!r) return Json();
    EXPECT_EQ(r->status, want) << path << " " << r->body;
    return Json::parse(r->body);
  }
};

std::vector<std::string> Names(const Json& list, const char* items = "items") {
  std::vector<std::string> out;
  for (const auto& o : list[items])
    out.push_back(std::string(items) == "rows" ? o["cells"][0].get<std::string>()
                                               : o["metadata"]["name"].get<std::string>());
  return out;
}

// Follows `continue` from `path` (which has no query of its own but ?limit=...); the names in
// order.
std::vector<std::string> All(Served& s, const std::string& path, int* pages = nullptr) {
  std::vector<std::string> all;
  std::string token;
  int n = 0;
  do {
    Json page = s.Get(path + (token.empty() ? "" : "&continue=" + token));
    ++n;
    for (auto& name : Names(page)) all.push_back(name);
    token = page["metadata"].value("continue", "");
  } while (!token.empty() && n < 100);
  if (pages) *pages = n;
  return all;
}

TEST(ListPagingTest, LimitAndContinueGiveEveryPodOnceInKeyOrder) {
  Served s("order");
  for (const char* n : {"p5", "p1", "p3", "p0", "p6", "p2", "p4"}) s.Pod(n);
  Json first = s.Get("/api/v1/namespaces/default/pods?limit=3");
  EXPECT_EQ(Names(first), (std::vector<std::string>{"p0", "p1", "p2"}));
  EXPECT_EQ(first["metadata"]["remainingItemCount"], 4);
  auto token = kube::DecodeContinue(first["metadata"]["continue"].get<std::string>());
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token.value().start, std::string("p2\0", 3));
  EXPECT_EQ(std::to_string(token.value().resource_version),
            first["metadata"]["resourceVersion"].get<std::string>());
  int pages = 0;
  EXPECT_EQ(All(s, "/api/v1/namespaces/default/pods?limit=3", &pages),
            (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}));
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(All(s, "/api/v1/pods?limit=2").size(), 7u);  // all namespaces: "ns/name" keys
  // limit 0, a limit as large as the list, none: one page, no continue.
  for (const char* q : {"?limit=0", "?limit=7", "?limit=500", ""}) {
    Json all = s.Get(std::string("/api/v1/namespaces/default/pods") + q);
    EXPECT_EQ(all["items"].size(), 7u) << q;
    EXPECT_FALSE(all["metadata"].contains("continue")) << q;
    EXPECT_FALSE(all["metadata"].contains("remainingItemCount")) << q;
  }
}

TEST(ListPagingTest, LaterPagesAreTheFirstPagesSnapshot) {
  Served s("snapshot");
  for (int i = 0; i < 6; ++i) s.Pod("p" + std::to_string(i));
  Json first = s.Get("/api/v1/namespaces/default/pods?limit=2");
  s.Pod("p1a");  // after the first page's resourceVersion: not in this list
  Json second = s.Get("/api/v1/namespaces/default/pods?limit=10&continue=" +
                      first["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(Names(second), (std::vector<std::string>{"p2", "p3", "p4", "p5"}));
  EXPECT_EQ(second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);
}

TEST(ListPagingTest, BadTokensAreBadRequestsWithKubernetesMessages) {
  Served s("bad");
  s.Pod("p0");
  Json bad = s.Get("/api/v1/pods?limit=1&continue=abc$", 400);
  EXPECT_EQ(bad["reason"], "BadRequest");
  EXPECT_EQ(bad["message"],
            "invalid continue token: continue key is not valid: illegal base64 data at input "
            "byte 3");
  const std::string good = kube::EncodeContinue({1, std::string("p\0", 2)});
  Json rv = s.Get("/api/v1/pods?continue=" + good + "&resourceVersion=5", 400);
  EXPECT_EQ(rv["message"], "specifying resource version is not allowed when using continue");
  Json zero = s.Get(
      "/api/v1/pods?continue=" + kube::Base64RawUrl(R"({"v":"meta.k8s.io/v1","rv":0,"start":"a"})"),
      400);
  EXPECT_EQ(zero["message"],
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)");
  EXPECT_EQ(s.Get("/api/v1/pods?limit=x", 400)["reason"], "BadRequest");
}

TEST(ListPagingTest, ContinueWithoutItsSnapshotIsExpiredUnlessTheKindIsUnchanged) {
  Served s("expired");
  for (int i = 0; i < 4; ++i) s.Pod("p" + std::to_string(i));
  const int64_t rv = s.daemon->Read([](const Cluster& c) { return c.store().resource_version(); });
  // A token this daemon never gave (as after a restart): no pod changed since rv, so the current
  // pods are the snapshot.
  const std::string token = kube::EncodeContinue({rv, std::string("default/p1\0", 11)});
  Json same = s.Get("/api/v1/pods?limit=10&continue=" + token);
  EXPECT_EQ(Names(same), (std::vector<std::string>{"p2", "p3"}));
  s.Pod("p9");
  Json gone = s.Get("/api/v1/pods?limit=10&continue=" + token, 410);
  EXPECT_EQ(gone["reason"], "Expired");
  EXPECT_EQ(gone["message"], std::string(kube::kInconsistentContinue));
  const std::string rest = gone["metadata"]["continue"].get<std::string>();
  EXPECT_EQ(kube::DecodeContinue(rest).value().resource_version, -1);
  // The token of the 410 continues from the current pods.
  Json now = s.Get("/api/v1/pods?limit=10&continue=" + rest);
  EXPECT_EQ(Names(now), (std::vector<std::string>{"p2", "p3", "p9"}));
}

// resourceVersion is Go's strconv.ParseUint (it was atoll: "abc" was 0, "+5" and "5%00" were 5):
// a list answers 400 "invalid resource version: ...", a watch the bare storage error (500), as
// kube-apiserver 1.36 does; a continue token from the future is its 504, not 410.
TEST(ListPagingTest, BadAndFutureResourceVersionsAnswerAsKubeApiserver) {
  Served s("badrv");
  s.Pod("p0");
  const std::vector<std::pair<std::string, std::string>> bad = {{"abc", "\"abc\""},
                                                                {"0x10", "\"0x10\""},
                                                                {"-1", "\"-1\""},
                                                                {"%2B5", "\"+5\""},
                                                                {"5%00", "\"5\\x00\""}};
  for (const auto& [query, quoted] : bad) {
    const std::string why = "resourceVersion: Invalid value: " + quoted +
                            ": strconv.ParseUint: parsing " + quoted + ": invalid syntax";
    Json list = s.Get("/api/v1/pods?resourceVersion=" + query, 400);
    EXPECT_EQ(list["reason"], "BadRequest");
    EXPECT_EQ(list["message"], "invalid resource version: " + why);
    Json watch = s.Get("/api/v1/pods?watch=true&resourceVersion=" + query, 500);
    EXPECT_EQ(watch["message"], why);
    EXPECT_FALSE(watch.contains("reason"));
  }
  Json big = s.Get("/api/v1/pods?resourceVersion=99999999999999999999", 400);
  EXPECT_NE(big["message"].get<std::string>().find("value out of range"), std::string::npos);
  const int64_t rv = s.daemon->Read([](const Cluster& c) { return c.store().resource_version(); });
  const std::string future = kube::EncodeContinue({rv + 100, std::string("default/p0\0", 11)});
  Json late = s.Get("/api/v1/pods?limit=1&continue=" + future, 504);
  EXPECT_EQ(late["reason"], "Timeout");
  EXPECT_EQ(late["message"], "Timeout: Too large resource version: " + std::to_string(rv + 100) +
                                 ", current: " + std::to_string(rv));
  EXPECT_EQ(late["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
}

TEST(ListPagingTest, SelectorsApplyBeforeTheLimit) {
  Served s("selector");
  for (int i = 0; i < 9; ++i) s.Pod("p" + std::to_string(i), i % 3 == 0 ? "gpu" : "cpu");
  Json first = s.Get("/api/v1/namespaces/default/pods?limit=2&labelSelector=team%3Dgpu");
  EXPECT_EQ(Names(first), (std::vector<std::string>{"p0", "p3"}));
  EXPECT_FALSE(first["metadata"].contains("remainingItemCount"));
  EXPECT_EQ(All(s, "/api/v1/namespaces/default/pods?limit=2&labelSelector=team%3Dgpu"),
            (std::vector<std::string>{"p0", "p3", "p6"}));
}

TEST(ListPagingTest, TableFormPagesToo) {
  Served s("table");
  for (int i = 0; i < 5; ++i) s.Pod("p" + std::to_string(i));
  const std::string table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  Json first = s.Get("/api/v1/namespaces/default/pods?limit=3", 200, table);
  EXPECT_EQ(first["kind"], "Table");
  EXPECT_EQ(Names(first, "rows"), (std::vector<std::string>{"p0", "p1", "p2"}));
  EXPECT_EQ(first["metadata"]["remainingItemCount"], 2);
  Json second = s.Get("/api/v1/namespaces/default/pods?limit=3&continue=" +
                          first["metadata"]["continue"].get<std::string>(),
                      200, table);
  EXPECT_EQ(Names(second, "rows"), (std::vector<std::string>{"p3", "p4"}));
  EXPECT_FALSE(second["metadata"].contains("continue"));
  EXPECT_EQ(second["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

Millis Now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// More pods than the daemon keeps trees of (the first 300 are kept as packed text alone), team
// "gpu" for odd numbers and "cpu" for even ones; all but 20 run on node n0. Their number.
size_t ColdPods(Served& s) {
  const size_t pods = Cluster::kHotTrees + 300;
  s.Node("n0", {{"cpu", "4"}, {"memory", "1Gi"}, {"pods", std::to_string(pods - 20)}});
  // Created from 16 threads: their journal commits are shared, as with concurrent clients.
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < pods; i += 16) s.Pod("p" + std::to_string(i), i % 2 ? "gpu" : "cpu");
    });
  for (auto& t : threads) t.join();
  return pods;
}

// Pods beyond the daemon's hot trees are kept as packed text alone, and a Table's row of one is
// written from that text, parsing only what the pod printer reads: every row, in every
// includeObject form, is the row of the pod's tree as the JSON list gives it (AGE apart, which
// the two answers compute at their own instants).
TEST(ListPagingTest, ATablesRowsOfColdPodsAreThoseOfTheirTrees) {
  Served s("table-cold");
  const size_t pods = ColdPods(s);
  const Json list = s.Get("/api/v1/namespaces/default/pods");
  ASSERT_EQ(list["items"].size(), pods);
  const auto& r = *kube::FindResourceByKind("v1", "Pod");
  const std::string table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  size_t running = 0;
  for (const char* include : {"", "None", "Object"}) {
    const Json got =
        s.Get(std::string("/api/v1/namespaces/default/pods?includeObject=") + include, 200, table);
    const Json want =
        kube::MakeTable(r, std::vector<Json>(list["items"].begin(), list["items"].end()), Now(),
                        kube::ParseIncludeObject(include));
    ASSERT_EQ(got["rows"].size(), pods) << include;
    for (size_t i = 0; i < pods; ++i) {
      Json a = got["rows"][i], b = want["rows"][i];
      a["cells"][4] = b["cells"][4] = "AGE";
      ASSERT_EQ(a, b) << include << " row " << i;
      running += a["cells"][2] == "Running";
    }
  }
  EXPECT_GT(running, 0u) << "some pods run";
  EXPECT_LT(running, 3 * pods) << "some pods wait";
}

// Selectors on cold pods are matched on what they read of each pod's text: a list, a watch's
// initial events and a collection's delete select the pods their trees would. (Regression: the
// delete read a cold pod's key from a tree already let go, a 500.)
TEST(ListPagingTest, SelectorsPickColdPodsAsTheirTreesWould) {
  Served s("select-cold");
  const size_t pods = ColdPods(s);
  const Json all = s.Get("/api/v1/namespaces/default/pods");
  ASSERT_EQ(all["items"].size(), pods);
  std::vector<std::string> gpu, pending;
  for (const Json& p : all["items"]) {
    if (p["metadata"]["labels"]["team"] == "gpu") gpu.push_back(p["metadata"]["name"]);
    if (p["status"]["phase"] == "Pending") pending.push_back(p["metadata"]["name"]);
  }
  ASSERT_EQ(gpu.size(), pods / 2);
  ASSERT_EQ(pending.size(), 20u);
  EXPECT_EQ(Names(s.Get("/api/v1/namespaces/default/pods?labelSelector=team%3Dgpu")), gpu);
  EXPECT_EQ(Names(s.Get("/api/v1/pods?fieldSelector=status.phase%3DPending")), pending);
  EXPECT_EQ(All(s, "/api/v1/pods?limit=700&labelSelector=team%3Dgpu"), gpu);
  // One namespace's range holds refs: a page's continue key is read from a cold pod's text.
  EXPECT_EQ(All(s, "/api/v1/namespaces/default/pods?limit=700&labelSelector=team%3Dgpu"), gpu);
  auto watch = s.cli->Get(
      "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1&labelSelector=team%3Dgpu");
  ASSERT_TRUE(watch);
  std::vector<std::string> added;
  std::istringstream lines(watch->body);
  for (std::string line; std::getline(lines, line);) {
    const Json e = Json::parse(line);
    if (e["type"] == "ADDED") added.push_back(e["object"]["metadata"]["name"]);
  }
  EXPECT_EQ(added, gpu);
  // The same watch as Tables: each row's pod parsed once, the selector matched on that tree.
  watch = s.cli->Get(
      "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1&labelSelector=team%3Dgpu",
      {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}});
  ASSERT_TRUE(watch);
  added.clear();
  std::istringstream rows(watch->body);
  for (std::string line; std::getline(rows, line);) {
    const Json e = Json::parse(line);
    if (e["type"] != "ADDED") continue;
    ASSERT_EQ(e["object"]["kind"], "Table") << line;
    for (const Json& row : e["object"]["rows"]) added.push_back(row["object"]["metadata"]["name"]);
  }
  EXPECT_EQ(added, gpu);
  auto gone = s.cli->Delete("/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dp1");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 200) << gone->body;
  EXPECT_EQ(Names(Json::parse(gone->body)), std::vector<std::string>{"p1"});
  auto p1 = s.cli->Get("/api/v1/namespaces/default/pods/p1");  // gone, or terminating
  ASSERT_TRUE(p1);
  EXPECT_TRUE(p1->status == 404 || Json::parse(p1->body)["metadata"].contains("deletionTimestamp"))
      << p1->body;
  auto p3 = s.cli->Get("/api/v1/namespaces/default/pods/p3");
  ASSERT_TRUE(p3);
  EXPECT_FALSE(Json::parse(p3->body)["metadata"].contains("deletionTimestamp")) << p3->body;
}

// A field selector spec.nodeName=NODE (kubelets' and node agents' list) picks the node's pods from
// the store's index: the same pods, in the same order, as the whole list filtered by node, in
// every namespace or one, paged; its kept pages are not those of the whole list at the same
// resourceVersion (nor the other way round).
TEST(ListPagingTest, ANodesPodsAreTheListFilteredByNode) {
  Served s("node");
  for (int i = 0; i < 2; ++i)
    s.Node("n" + std::to_string(i), {{"cpu", "8"}, {"memory", "1Gi"}, {"pods", "110"}});
  for (int i = 0; i < 12; ++i) {  // a CPU each: 8 fit a node
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Pod";
    m.namespace_ = "default";
    m.object = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "p" + std::to_string(i)}, {"namespace", "default"}}},
        {"spec",
         {{"containers",
           {{{"name", "c"}, {"image", "x"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
    ASSERT_TRUE(s.daemon->Mutate(std::move(m)).ok());
  }
  const Json all = s.Get("/api/v1/pods");
  std::map<std::string, std::vector<std::string>> by_node;
  for (const auto& p : all["items"])
    by_node[p["spec"].value("nodeName", "")].push_back(p["metadata"]["name"]);
  ASSERT_EQ(by_node[""].size(), 0u) << "every pod is bound";
  ASSERT_EQ(by_node.size(), 3u) << "both nodes have pods";  // (and the "" just read)
  for (const std::string node : {"n0", "n1"}) {
    const std::string q = "fieldSelector=spec.nodeName%3D" + node;
    EXPECT_EQ(Names(s.Get("/api/v1/pods?" + q)), by_node[node]) << node;
    EXPECT_EQ(Names(s.Get("/api/v1/namespaces/default/pods?" + q)), by_node[node]) << node;
    EXPECT_TRUE(s.Get("/api/v1/namespaces/other/pods?" + q)["items"].empty()) << node;
    EXPECT_EQ(All(s, "/api/v1/pods?limit=2&" + q), by_node[node]) << node;
    // With another term, and !=: matched after the pick.
    EXPECT_EQ(Names(s.Get("/api/v1/pods?" + q + ",metadata.name%3Dp0")).size(),
              by_node[node].front() == "p0" ? 1u : 0u);
  }
  EXPECT_EQ(Names(s.Get("/api/v1/pods?fieldSelector=spec.nodeName!%3Dn0")), by_node["n1"]);
  // The first pages of both lists at one resourceVersion, then each continued.
  const Json node_page = s.Get("/api/v1/pods?limit=1&fieldSelector=spec.nodeName%3Dn0");
  const Json whole_page = s.Get("/api/v1/pods?limit=1");
  ASSERT_EQ(node_page["metadata"]["resourceVersion"], whole_page["metadata"]["resourceVersion"]);
  const Json whole_rest = s.Get("/api/v1/pods?limit=100&continue=" +
                                whole_page["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(whole_rest["items"].size(), 11u);
  const Json node_rest = s.Get("/api/v1/pods?limit=100&fieldSelector=spec.nodeName%3Dn0&continue=" +
                               node_page["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(node_rest["items"].size(), by_node["n0"].size() - 1);
}

// A list's body is the bytes of the whole list dumped (kube::WireJson) from the stored objects, as
// it was when written from the list's tree: whole or in pages, of a kind kept packed (Pods) or
// as plain text (Nodes; the first list makes their texts, the second reads them).
std::string Raw(Served& s, const std::string& path) {
  auto r = s.cli->Get(path);
  EXPECT_TRUE(r && r->status == 200) << path;
  return r ? r->body : "";
}

TEST(ListPagingTest, ListBodiesAreTheListDumped) {
  Served s("bytes");
  for (int i = 0; i < 7; ++i)  // escapes and UTF-8 in some
    s.ServedApi::Pod("p" + std::to_string(i),
                     {{"annotations", {{"note", i % 2 ? "caf\u00e9 \"q\"\n" : "plain"}}}});
  for (int i = 0; i < 3; ++i) s.Node("n" + std::to_string(i), {{"cpu", "8"}, {"memory", "1Gi"}});
  const auto want = [&](const std::string& kind, const Json& metadata, size_t from, size_t n) {
    Json items = Json::array();
    s.daemon->Read([&](const Cluster& c) {
      const auto all = c.store().List(kind, "");
      for (size_t i = from; i < all.size() && i < from + n; ++i) items.push_back(*all[i]);
      return 0;
    });
    return kube::WireJson(
        {{"apiVersion", "v1"}, {"items", items}, {"kind", kind + "List"}, {"metadata", metadata}});
  };
  for (int round = 0; round < 2; ++round) {
    for (const char* path : {"/api/v1/pods", "/api/v1/namespaces/default/pods"}) {
      const std::string body = Raw(s, path);
      EXPECT_EQ(body, want("Pod", Json::parse(body)["metadata"], 0, 7)) << path;
    }
    const std::string nodes = Raw(s, "/api/v1/nodes");
    EXPECT_EQ(nodes, want("Node", Json::parse(nodes)["metadata"], 0, 3));
    std::string path = "/api/v1/pods?limit=3";
    for (size_t from = 0; from < 7; from += 3) {
      const std::string body = Raw(s, path);
      const Json metadata = Json::parse(body)["metadata"];
      EXPECT_EQ(body, want("Pod", metadata, from, 3)) << path;
      path = "/api/v1/pods?limit=3&continue=" + metadata.value("continue", "");
    }
  }
}

}  // namespace list_paging_test
}  // namespace arbiter::server
