// A hostile client against the real `arbiter serve` (issue 27, "Crashes and exhaustion", and the
// Priority admission of "Tenancy"): invalid UTF-8 anywhere, bodies nesting 100,000 levels,
// chunked bodies past the limit, oversized objects, and a pod that sets its own spec.priority.
// Each answer is a Kubernetes Status, and the daemon is still serving (and exits cleanly on
// SIGTERM) afterwards.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "adapters/yaml/go_field_types.h"
#include "server/serve_process.h"
#include "server/state/cluster.h"

namespace arbiter::testing {
namespace serve_hostile_input_test {

using server::Json;

httplib::Client Client(const ServeProcess& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60);
  c.set_write_timeout(60);
  return c;
}

// The answer's Status body ({} when there is none).
Json StatusOf(const httplib::Result& r) {
  if (!r) return Json::object();
  Json j = Json::parse(r->body, nullptr, false);
  return j.is_object() ? j : Json::object();
}

std::string Describe(const httplib::Result& r) {
  if (!r) return "no answer: " + httplib::to_string(r.error());
  return std::to_string(r->status) + " " + r->body.substr(0, 400);
}

void ExpectStatus(const httplib::Result& r, int code, const std::string& reason) {
  ASSERT_TRUE(r) << Describe(r);
  EXPECT_EQ(r->status, code) << Describe(r);
  const Json st = StatusOf(r);
  EXPECT_EQ(st.value("kind", ""), "Status") << Describe(r);
  EXPECT_EQ(st.value("reason", ""), reason) << Describe(r);
  EXPECT_EQ(st.value("code", 0), code) << Describe(r);
}

void ExpectServing(const ServeProcess& s) {
  auto c = Client(s);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r) << "the daemon stopped answering: " << httplib::to_string(r.error()) << "\n"
                 << s.log().substr(0, 4000);
  EXPECT_EQ(r->status, 200);
}

std::string PodJson(const std::string& name, const std::string& ns, const std::string& cpu,
                    const Json& extra_spec = Json::object()) {
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"containers",
         {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
  pod["spec"].update(extra_spec);
  return pod.dump();
}

std::string Deep(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(ServeHostileInputTest, InvalidUtf8InPathsAndQueriesNeverStopsTheDaemon) {
  ServeProcess s(ScratchDir("hostile-utf8-path"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  // The path, unrouted and routed; query values echoed in messages; names that reach the journal.
  auto root = c.Get("/%FF");
  ASSERT_TRUE(root) << Describe(root);
  EXPECT_EQ(root->status, 404);
  ExpectStatus(c.Get("/api/v1/namespaces/default/pods/%FF"), 400, "BadRequest");
  ExpectStatus(c.Get("/api/v1/namespaces/default/pods?labelSelector=%FF"), 400, "BadRequest");
  ExpectStatus(c.Get("/api/v1/namespaces/default/pods?fieldSelector=%FF%FE"), 400, "BadRequest");
  ExpectStatus(c.Delete("/api/v1/namespaces/default/pods/%FF"), 400, "BadRequest");
  ExpectStatus(c.Patch("/api/v1/namespaces/default/pods/x?fieldManager=%FF",
                       PodJson("x", "default", "1"), "application/apply-patch+yaml"),
               400, "BadRequest");
  ExpectStatus(c.Post("/api/v1/namespaces/default/pods?dryRun=%C0", PodJson("y", "default", "1"),
                      "application/json"),
               400, "BadRequest");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);  // an abort would not be a clean exit
}

// kube-apiserver reads a query as Go's url.ParseQuery: `labelSelector=app=web` (curl users leave
// the '=' unencoded) is the selector "app=web". It used to select nothing (the value was "web",
// the text after the last '=', a selector asking for a label key "web").
TEST(ServeHostileInputTest, AnUnencodedEqualsSignInAQueryValueIsPartOfTheValue) {
  ServeProcess s(ScratchDir("hostile-query-equals"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  Json web = Json::parse(PodJson("web", "default", "1"));
  web["metadata"]["labels"] = {{"app", "web"}};
  ASSERT_EQ(c.Post("/api/v1/namespaces/default/pods", web.dump(), "application/json")->status, 201);
  ASSERT_EQ(
      c.Post("/api/v1/namespaces/default/pods", PodJson("db", "default", "1"), "application/json")
          ->status,
      201);
  for (const std::string query : {"labelSelector=app=web", "labelSelector=app%3Dweb",
                                  "labelSelector=app==web", "fieldSelector=metadata.name=web"}) {
    auto r = c.Get("/api/v1/namespaces/default/pods?" + query);
    ASSERT_TRUE(r) << Describe(r);
    ASSERT_EQ(r->status, 200) << query << " " << Describe(r);
    const Json items = Json::parse(r->body)["items"];
    ASSERT_EQ(items.size(), 1u) << query << " " << r->body.substr(0, 400);
    EXPECT_EQ(items[0]["metadata"]["name"], "web") << query;
  }
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// A tenant's JSON Patch copying an array into itself 40 times (2^40 elements) got the daemon
// killed for memory; it is 413 as in kube-apiserver (what copies add is bounded), the pod is
// unchanged and the daemon serves on. A DELETE whose preconditions name another uid or
// resourceVersion is 409 Conflict and deletes nothing (they were ignored).
TEST(ServeHostileInputTest, AJsonPatchCopyBombIs413AndDeletePreconditionsHold) {
  ServeProcess s(ScratchDir("hostile-patch-bomb"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  auto created =
      c.Post("/api/v1/namespaces/default/pods", PodJson("p", "default", "1"), "application/json");
  ASSERT_TRUE(created && created->status == 201) << Describe(created);
  Json bomb = Json::array({{{"op", "add"},
                            {"path", "/metadata/annotations"},
                            {"value", {{"a", {std::string(1000, 'x')}}}}}});
  for (int i = 0; i < 40; ++i)
    bomb.push_back({{"op", "copy"},
                    {"from", "/metadata/annotations/a"},
                    {"path", "/metadata/annotations/a/-"}});
  auto r = c.Patch("/api/v1/namespaces/default/pods/p", bomb.dump(), "application/json-patch+json");
  ExpectStatus(r, 413, "RequestEntityTooLarge");
  EXPECT_NE(StatusOf(r).value("message", "").find("the accumulated size increase of copy"),
            std::string::npos)
      << Describe(r);
  ExpectServing(s);
  const Json pod = Json::parse(created->body);
  const std::string uid = pod["metadata"]["uid"];
  auto deleted = c.Delete("/api/v1/namespaces/default/pods/p",
                          Json{{"kind", "DeleteOptions"},
                               {"apiVersion", "v1"},
                               {"preconditions", {{"uid", "not-" + uid}}}}
                              .dump(),
                          "application/json");
  ExpectStatus(deleted, 409, "Conflict");
  EXPECT_NE(StatusOf(deleted).value("message", "").find("does not match the UID in record (" + uid),
            std::string::npos)
      << Describe(deleted);
  // kube-apiserver names the kind there (it was "pods"): `Operation cannot be fulfilled on Pod`.
  EXPECT_EQ(StatusOf(deleted)
                .value("message", "")
                .rfind("Operation cannot be fulfilled on Pod \"p\": ", 0),
            0u)
      << Describe(deleted);
  EXPECT_EQ(StatusOf(deleted)["details"].value("kind", ""), "Pod") << Describe(deleted);
  auto still = c.Get("/api/v1/namespaces/default/pods/p");
  ASSERT_TRUE(still) << Describe(still);
  EXPECT_EQ(still->status, 200);
  deleted = c.Delete("/api/v1/namespaces/default/pods/p",
                     Json{{"preconditions", {{"uid", uid}}}}.dump(), "application/json");
  ASSERT_TRUE(deleted) << Describe(deleted);
  EXPECT_EQ(deleted->status, 200) << Describe(deleted);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeHostileInputTest, InvalidUtf8InBodiesIs400WithAStatus) {
  ServeProcess s(ScratchDir("hostile-utf8-body"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  std::string bad = PodJson("u", "default", "1");
  bad.replace(bad.find("busybox"), 7, "busy\xFF\xFEox");
  ExpectStatus(c.Post("/api/v1/namespaces/default/pods", bad, "application/json"), 400,
               "BadRequest");
  ExpectStatus(c.Put("/api/v1/namespaces/default/pods/u", bad, "application/json"), 400,
               "BadRequest");
  const std::string yaml =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: u\n  labels: {a: \"\xC3\x28\"}\nspec:\n  "
      "containers: [{name: c, image: busybox}]\n";
  ExpectStatus(c.Patch("/api/v1/namespaces/default/pods/u?fieldManager=t", yaml,
                       "application/apply-patch+yaml"),
               400, "BadRequest");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeHostileInputTest, BodiesNestingDeeperThan64LevelsAreRefusedBeforeAnyRecursion) {
  ServeProcess s(ScratchDir("hostile-deep"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  const std::string deep = Deep(100000);  // 200 KB, far under the body limit
  const std::string pod = PodJson("deep", "default", "1");
  const std::string body = pod.substr(0, pod.size() - 2) + ",\"x\":" + deep + "}}";
  ExpectStatus(c.Post("/api/v1/namespaces/default/pods", body, "application/json"), 400,
               "BadRequest");
  ExpectStatus(c.Put("/api/v1/namespaces/default/pods/deep", body, "application/json"), 400,
               "BadRequest");
  ExpectStatus(
      c.Post("/api/v1/namespaces/default/pods/deep/eviction",
             "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"deleteOptions\":" + deep + "}",
             "application/json"),
      400, "BadRequest");
  ExpectStatus(c.Delete("/api/v1/namespaces/default/pods/deep", "{\"deleteOptions\":" + deep + "}",
                        "application/json"),
               400, "BadRequest");
  ExpectStatus(c.Patch("/api/v1/namespaces/default/pods/deep", "{\"spec\":" + deep + "}",
                       "application/merge-patch+json"),
               400, "BadRequest");
  // YAML flow collections (server-side apply) are bounded too.
  ExpectStatus(c.Patch("/api/v1/namespaces/default/pods/deep?fieldManager=t",
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nspec: " + deep + "\n",
                       "application/apply-patch+yaml"),
               400, "BadRequest");
  // 64 levels are still fine to parse (the kind's validator judges the content).
  auto ok = c.Post("/api/v1/namespaces/default/pods",
                   pod.substr(0, pod.size() - 2) + ",\"x\":" + Deep(56) + "}}", "application/json");
  ASSERT_TRUE(ok) << Describe(ok);
  EXPECT_NE(ok->status, 500) << Describe(ok);
  EXPECT_EQ(StatusOf(ok).value("message", "").find("nests deeper"), std::string::npos)
      << Describe(ok);
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// A chunked POST of `total` bytes over a raw socket; the answer is read while the body is still
// being written (the daemon answers and closes as soon as the limit is passed).
std::string ChunkedPost(int port, const std::string& path, size_t total,
                        const std::string& method = "POST") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  std::string answer;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) answer.append(buf, static_cast<size_t>(n));
  });
  auto send_all = [fd](const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  };
  bool open = send_all(method + " " + path +
                       " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  for (size_t sent = 0; open && sent < total; sent += 0x10000) open = send_all(chunk);
  if (open) send_all("0\r\n\r\n");
  shutdown(fd, SHUT_WR);
  reader.join();
  close(fd);
  return answer;
}

TEST(ServeHostileInputTest, ChunkedAndLongBodiesStopAtTheLimitWith413) {
  ServeProcess s(ScratchDir("hostile-chunked"));
  ASSERT_TRUE(s.Start()) << s.log();
  // 16 MiB chunked: refused once past 3 MiB, for the API and any other path.
  for (const std::string path : {"/api/v1/namespaces/default/pods", "/elsewhere"}) {
    const std::string answer = ChunkedPost(s.port(), path, 16u << 20);
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << path << ": " << answer.substr(0, 400);
    EXPECT_NE(answer.find("Request entity too large: limit is 3145728"), std::string::npos)
        << answer.substr(0, 400);
  }
  // No method reads a body without the bound (cpp-httplib reads PRI's).
  const std::string pri = ChunkedPost(s.port(), "/x", 16u << 20, "PRI");
  EXPECT_EQ(pri.rfind("HTTP/1.1 405", 0), 0u) << pri.substr(0, 400);
  // A Content-Length body past 3 MiB, kube-apiserver's limit.
  auto c = Client(s);
  ExpectStatus(c.Post("/api/v1/namespaces/default/pods", std::string((3u << 20) + 1, ' '),
                      "application/json"),
               413, "RequestEntityTooLarge");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeHostileInputTest, LabelsAnnotationsAndObjectSizeHaveKubernetesLimits) {
  ServeProcess s(ScratchDir("hostile-sizes"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  auto with_meta = [](const std::string& name, const Json& meta) {
    Json pod = Json::parse(PodJson(name, "default", "100m"));
    pod["metadata"].update(meta);
    return pod.dump();
  };
  // 300 KiB of annotations.
  auto big = c.Post("/api/v1/namespaces/default/pods",
                    with_meta("a", {{"annotations", {{"note", std::string(300 << 10, 'x')}}}}),
                    "application/json");
  ExpectStatus(big, 422, "Invalid");
  EXPECT_EQ(StatusOf(big).value("message", ""),
            "Pod \"a\" is invalid: metadata.annotations: Too long: must have at most 262144 "
            "bytes");
  // Label keys and values.
  auto key = c.Post("/api/v1/namespaces/default/pods",
                    with_meta("b", {{"labels", {{"bad key", "v"}}}}), "application/json");
  ExpectStatus(key, 422, "Invalid");
  EXPECT_EQ(StatusOf(key).value("message", ""),
            "Pod \"b\" is invalid: metadata.labels: Invalid value: \"bad key\": name part must "
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  auto value =
      c.Post("/api/v1/namespaces/default/pods",
             with_meta("c", {{"labels", {{"app", std::string(64, 'v')}}}}), "application/json");
  ExpectStatus(value, 422, "Invalid");
  EXPECT_EQ(StatusOf(value).value("message", ""),
            "Pod \"c\" is invalid: metadata.labels: Invalid value: \"" + std::string(64, 'v') +
                "\": must be no more than 63 characters");
  // 120,000 valid labels: 1.7 MB, under the body limit but over 1.5 MiB as an object.
  Json labels = Json::object();
  for (int i = 0; i < 120000; ++i) labels["l" + std::to_string(100000 + i)] = "v";
  auto many = c.Post("/api/v1/namespaces/default/pods", with_meta("d", {{"labels", labels}}),
                     "application/json");
  ExpectStatus(many, 413, "RequestEntityTooLarge");
  EXPECT_NE(StatusOf(many).value("message", "").find("limit is 1572864"), std::string::npos)
      << Describe(many);
  // A merge patch cannot grow an object past the limits either.
  auto small =
      c.Post("/api/v1/namespaces/default/pods", with_meta("e", Json::object()), "application/json");
  ASSERT_TRUE(small && small->status == 201) << Describe(small);
  ExpectStatus(
      c.Patch("/api/v1/namespaces/default/pods/e",
              Json{{"metadata", {{"annotations", {{"n", std::string(300 << 10, 'x')}}}}}}.dump(),
              "application/merge-patch+json"),
      422, "Invalid");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// The phase of a pod, "" when it cannot be read.
std::string Phase(httplib::Client& c, const std::string& ns, const std::string& name) {
  auto r = c.Get("/api/v1/namespaces/" + ns + "/pods/" + name);
  if (!r || r->status != 200) return "";
  const Json p = Json::parse(r->body);
  return p.contains("status") ? p["status"].value("phase", "") : "";
}

TEST(ServeHostileInputTest, APodCannotSetItsOwnPriorityToPreemptAnotherNamespace) {
  ServeProcess s(ScratchDir("hostile-priority"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  for (const char* ns : {"team-a", "team-b"}) {
    auto r = c.Post(
        "/api/v1/namespaces",
        Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}.dump(),
        "application/json");
    ASSERT_TRUE(r && r->status == 201) << Describe(r);
  }
  auto node = c.Post("/api/v1/nodes",
                     Json{{"apiVersion", "v1"},
                          {"kind", "Node"},
                          {"metadata", {{"name", "n1"}}},
                          {"status", {{"capacity", {{"cpu", "2"}, {"memory", "8Gi"}}}}}}
                         .dump(),
                     "application/json");
  ASSERT_TRUE(node && node->status == 201) << Describe(node);
  auto victim =
      c.Post("/api/v1/namespaces/team-a/pods", PodJson("a", "team-a", "1"), "application/json");
  ASSERT_TRUE(victim && victim->status == 201) << Describe(victim);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Phase(c, "team-a", "a") != "Running" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(Phase(c, "team-a", "a"), "Running");

  // No class, no global default: the priority is 0, and a pod saying otherwise is refused.
  auto escalate = c.Post("/api/v1/namespaces/team-b/pods",
                         PodJson("b", "team-b", "2", {{"priority", 1000000}}), "application/json");
  ExpectStatus(escalate, 403, "Forbidden");
  EXPECT_EQ(StatusOf(escalate).value("message", ""),
            "pods \"b\" is forbidden: the integer value of priority (1000000) must not be "
            "provided in pod spec; priority admission controller computed 0 from the given "
            "PriorityClass name");
  auto gone = c.Get("/api/v1/namespaces/team-b/pods/b");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  // The value the admission would compute is accepted as given.
  auto zero = c.Post("/api/v1/namespaces/team-b/pods",
                     PodJson("z", "team-b", "100m", {{"priority", 0}}), "application/json");
  ASSERT_TRUE(zero && zero->status == 201) << Describe(zero);
  // The built-in classes resolve without an object.
  auto critical =
      c.Post("/api/v1/namespaces/team-b/pods",
             PodJson("crit", "team-b", "100m", {{"priorityClassName", "system-cluster-critical"}}),
             "application/json");
  ASSERT_TRUE(critical && critical->status == 201) << Describe(critical);
  EXPECT_EQ(Json::parse(critical->body)["spec"].value("priority", 0), 2000000000);
  auto wrong = c.Post("/api/v1/namespaces/team-b/pods",
                      PodJson("node-crit", "team-b", "100m",
                              {{"priorityClassName", "system-node-critical"}, {"priority", 7}}),
                      "application/json");
  ExpectStatus(wrong, 403, "Forbidden");
  EXPECT_NE(StatusOf(wrong).value("message", "").find("computed 2000001000"), std::string::npos)
      << Describe(wrong);
  // A global default class is what a pod without a class gets.
  auto def = c.Post("/apis/scheduling.k8s.io/v1/priorityclasses",
                    Json{{"apiVersion", "scheduling.k8s.io/v1"},
                         {"kind", "PriorityClass"},
                         {"metadata", {{"name", "normal"}}},
                         {"value", 100},
                         {"globalDefault", true}}
                        .dump(),
                    "application/json");
  ASSERT_TRUE(def && def->status == 201) << Describe(def);
  auto zero_now = c.Post("/api/v1/namespaces/team-b/pods",
                         PodJson("z2", "team-b", "100m", {{"priority", 0}}), "application/json");
  ExpectStatus(zero_now, 403, "Forbidden");
  EXPECT_NE(StatusOf(zero_now).value("message", "").find("computed 100 from"), std::string::npos)
      << Describe(zero_now);
  // team-a's pod was never preempted.
  EXPECT_EQ(Phase(c, "team-a", "a"), "Running");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// A node with room for every pod of a test (a bound pod's status is made from its containers).
void AddBigNode(httplib::Client& c) {
  auto node = c.Post(
      "/api/v1/nodes",
      Json{{"apiVersion", "v1"},
           {"kind", "Node"},
           {"metadata", {{"name", "big"}}},
           {"status", {{"capacity", {{"cpu", "1000"}, {"memory", "1000Gi"}, {"pods", "1000"}}}}}}
          .dump(),
      "application/json");
  ASSERT_TRUE(node && node->status == 201) << Describe(node);
}

// A field of another JSON type than its Go type's (a tenant's `"args": "x"`) was stored, and
// every typed client listing pods broke on it (`kubectl describe node`, drain, informers); an
// `"image": 5` was a 500 (the pod's status was made reading the image as a string).
// kube-apiserver's decoder refuses both with 400 BadRequest, and so does the daemon, storing
// nothing: creates, updates, patches and a Job's pod template alike.
TEST(ServeHostileInputTest, AFieldOfAnotherJsonTypeIs400AndNothingIsStored) {
  ServeProcess s(ScratchDir("hostile-field-types"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  AddBigNode(c);
  const std::string lead =
      "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal ";
  auto bad = [&](const std::string& name, const Json& container_fields) {
    Json pod = Json::parse(PodJson(name, "default", "1"));
    pod["spec"]["containers"][0].update(container_fields);
    return pod.dump();
  };
  struct Case {
    std::string body, type, message;
  };
  const std::vector<Case> cases = {
      {bad("image-number", {{"image", 5}}), "application/json",
       lead + "number into Go struct field Container.spec.containers.image of type string"},
      {bad("args-string", {{"args", "x"}}), "application/json",
       lead + "string into Go struct field Container.spec.containers.args of type []string"},
      // kubectl's YAML 1.1 reads `image: y` as true and sends that.
      {bad("image-bool", {{"image", true}}), "application/json",
       lead + "bool into Go struct field Container.spec.containers.image of type string"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: yaml-bool}\nspec:\n  containers:\n"
       "  - name: c\n    image: true\n",
       "application/yaml",
       lead + "bool into Go struct field Container.spec.containers.image of type string"},
      {bad("port-string", {{"ports", {{{"containerPort", "80"}}}}}), "application/json",
       lead + "string into Go struct field ContainerPort.spec.containers.ports.containerPort of "
              "type int32"}};
  for (const Case& k : cases) {
    auto r = c.Post("/api/v1/namespaces/default/pods", k.body, k.type);
    ExpectStatus(r, 400, "BadRequest");
    EXPECT_EQ(StatusOf(r).value("message", ""), k.message) << Describe(r);
  }
  // An update and a patch of a stored pod, a Job's template.
  ASSERT_EQ(
      c.Post("/api/v1/namespaces/default/pods", PodJson("p", "default", "1"), "application/json")
          ->status,
      201);
  ExpectStatus(
      c.Put("/api/v1/namespaces/default/pods/p", bad("p", {{"image", 5}}), "application/json"), 400,
      "BadRequest");
  ExpectStatus(c.Patch("/api/v1/namespaces/default/pods/p",
                       R"({"spec":{"containers":[{"name":"c","args":"x"}]}})",
                       "application/strategic-merge-patch+json"),
               400, "BadRequest");
  const Json job = Json::parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
      "spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c",
      "image":"x","args":"y"}]}}}})");
  auto r = c.Post("/apis/batch/v1/namespaces/default/jobs", job.dump(), "application/json");
  ExpectStatus(r, 400, "BadRequest");
  EXPECT_EQ(StatusOf(r).value("message", ""),
            "Job in version \"v1\" cannot be handled as a Job: json: cannot unmarshal string into "
            "Go struct field Container.spec.template.spec.containers.args of type []string");
  // Only `p` is stored, as it was; the list decodes.
  auto list = c.Get("/api/v1/namespaces/default/pods");
  ASSERT_TRUE(list && list->status == 200) << Describe(list);
  const Json items = Json::parse(list->body)["items"];
  ASSERT_EQ(items.size(), 1u) << list->body.substr(0, 400);
  EXPECT_EQ(items[0]["spec"]["containers"][0]["image"], "busybox");
  EXPECT_EQ(Json::parse(c.Get("/apis/batch/v1/namespaces/default/jobs")->body)["items"].size(), 0u);
  // The daemon's YAML bodies are YAML 1.2 (docs/serve.md): `image: y` is the string "y" here.
  auto y = c.Post("/api/v1/namespaces/default/pods",
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: yaml-y}\nspec:\n  containers:\n"
                  "  - name: c\n    image: y\n",
                  "application/yaml");
  ASSERT_TRUE(y) << Describe(y);
  EXPECT_EQ(y->status, 201) << Describe(y);
  EXPECT_EQ(Json::parse(y->body)["spec"]["containers"][0]["image"], "y");
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// Every value of `j`'s pointer.
void Pointers(const Json& j, const Json::json_pointer& at, std::vector<Json::json_pointer>* out) {
  out->push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) Pointers(it.value(), at / it.key(), out);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) Pointers(j[i], at / i, out);
}

// Whether `v` put at `p` in the fuzzed pod, whose value there was `was` (of the field's Go
// type), has another JSON type than the field's Go type: what kube-apiserver's decoder refuses.
// (Independent of the table: the base pod's values say the types.)
bool WrongType(const std::string& p, const Json& was, const Json& v) {
  if (v.is_null()) return false;
  const bool quantity = p.find("/resources/requests/") != std::string::npos ||
                        p.find("/resources/limits/") != std::string::npos;
  if (was.is_number_integer()) {
    if (!v.is_number_integer()) return true;
    const bool int32 = p.find("containerPort") != std::string::npos;
    return int32 && v.get<int64_t>() > std::numeric_limits<int32_t>::max();
  }
  if (was.is_string()) return !v.is_string() && !(quantity && v.is_number());
  if (was.is_boolean()) return !v.is_boolean();
  if (was.is_array()) {
    if (!v.is_array()) return true;
    return !v.empty() && !was.empty() && v[0].type() != was[0].type();
  }
  if (!v.is_object()) return true;
  // {"k": 5}: a map of strings refuses it; a struct ignores an unknown field; 5 is a quantity.
  for (const char* map : {"/labels", "/annotations", "/nodeSelector"})
    if (p.size() >= strlen(map) && p.compare(p.size() - strlen(map), std::string::npos, map) == 0)
      return !v.empty();
  return false;
}

// A valid pod's fields given other JSON types at random: each create is 201 with every stored
// field of its Go type, or 400 / 422 / 403 with a Status; never a 500; the daemon serves on and
// every pod it lists decodes.
TEST(ServeHostileInputTest, FuzzedFieldTypesAreStoredWithTheirGoTypesOrRefusedNever500) {
  ServeProcess s(ScratchDir("hostile-field-fuzz"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto c = Client(s);
  AddBigNode(c);
  const Json base = Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"f",
    "labels":{"app":"a"},"annotations":{"arbiter.dev/duration":"1h"},"finalizers":["x/y"]},
    "spec":{"containers":[{"name":"c","image":"busybox","command":["sh"],"args":["-c","x"],
    "env":[{"name":"A","value":"1"}],"ports":[{"containerPort":80,"protocol":"TCP"}],
    "resources":{"requests":{"cpu":"100m","memory":"64Mi"}},"stdin":true,"tty":false,
    "securityContext":{"runAsUser":1000},"volumeMounts":[{"name":"v","mountPath":"/v"}],
    "imagePullPolicy":"Always","workingDir":"/"}],"restartPolicy":"Never",
    "nodeSelector":{"kubernetes.io/os":"linux"},"tolerations":[{"key":"k","operator":"Exists",
    "effect":"NoExecute","tolerationSeconds":30}],"terminationGracePeriodSeconds":30,"schedulerName":"default-scheduler",
    "dnsPolicy":"ClusterFirst","hostNetwork":false,"volumes":[{"name":"v","emptyDir":{}}],
    "serviceAccountName":"default","activeDeadlineSeconds":600}})");
  const std::vector<Json> values = {"s",
                                    7,
                                    1.5,
                                    true,
                                    Json::object(),
                                    Json::array(),
                                    nullptr,
                                    Json::array({5}),
                                    Json{{"k", 5}},
                                    5000000000LL};
  auto valid = c.Post("/api/v1/namespaces/default/pods", base.dump(), "application/json");
  ASSERT_TRUE(valid) << Describe(valid);
  ASSERT_EQ(valid->status, 201) << Describe(valid);
  std::mt19937 rng(7);
  std::map<int, int> answers;
  for (int i = 0; i < 200; ++i) {
    Json pod = base;
    pod["metadata"]["name"] = "f-" + std::to_string(i);
    std::vector<Json::json_pointer> at;
    Pointers(pod, Json::json_pointer(), &at);
    const Json::json_pointer p = at[1 + rng() % (at.size() - 1)];
    const std::string where = p.to_string();
    if (where == "/kind" || where == "/apiVersion" || where == "/metadata" ||
        where == "/metadata/name")
      continue;
    const Json was = pod[p];
    pod[p] = values[rng() % values.size()];
    const bool wrong = WrongType(where, was, pod[p]);
    auto r = c.Post("/api/v1/namespaces/default/pods", pod.dump(), "application/json");
    ASSERT_TRUE(r) << Describe(r);
    ++answers[r->status];
    ASSERT_NE(r->status / 100, 5) << where << " " << pod.dump() << " " << Describe(r);
    const bool undecodable =
        StatusOf(r).value("message", "").find("cannot be handled as a Pod") != std::string::npos;
    EXPECT_EQ(undecodable, wrong) << where << " " << pod[p].dump() << " " << Describe(r);
    if (wrong) {
      EXPECT_EQ(r->status, 400) << where << " " << Describe(r);
    }
    if (r->status == 201) {
      EXPECT_TRUE(yaml::CheckGoTypes(Json::parse(r->body), "Pod").empty()) << r->body;
    } else {
      EXPECT_EQ(StatusOf(r).value("kind", ""), "Status") << Describe(r);
    }
  }
  EXPECT_GT(answers[201], 20);
  EXPECT_GT(answers[400], 20);
  auto list = c.Get("/api/v1/namespaces/default/pods");
  ASSERT_TRUE(list && list->status == 200) << Describe(list);
  for (const Json& item : Json::parse(list->body)["items"])
    EXPECT_TRUE(yaml::CheckGoTypes(item, "Pod", 1).empty()) << item.dump();
  ExpectServing(s);
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

}  // namespace serve_hostile_input_test
}  // namespace arbiter::testing
