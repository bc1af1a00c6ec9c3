// The rest of the API subset kubectl users hit, against the real daemon and kubectl 1.32:
// ?dryRun=All (`--dry-run=server`), metadata.generateName (`kubectl create`), deletecollection,
// pod updates as Kubernetes allows them, `arbiter serve --config FILE`.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

std::string PodYaml(const std::string& name_line, const std::string& app) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  " + name_line +
         "\n  namespace: default\n  labels: {app: \"" + app +
         "\"}\nspec:\n  containers:\n  - name: main\n    image: busybox:1\n    resources:\n      "
         "requests: {cpu: \"1\"}\n";
}

std::string Curl(const std::string& args) { return RunCommand("curl -s " + args).out; }

std::string JournalSeq(const ServeProcess& s) {
  const std::string body = Curl(s.url() + "/debug/arbiter/state");
  std::smatch m;
  std::regex_search(body, m, std::regex(R"("journalSeq":(\d+))"));
  return m.size() > 1 ? m[1].str() : body;
}

TEST(ServeApiSubsetTest, ServerSideDryRunValidatesAndStoresNothing) {
  ServeProcess s(ScratchDir("dry-run"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "p.yaml", PodYaml("name: p", "x"));
  Write(s.dir() / "q.yaml", PodYaml("name: q", "x"));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "q.yaml").string()).rc, 0);
  const std::string seq = JournalSeq(s);
  CommandOutput a = s.Kubectl("apply --dry-run=server -f " + (s.dir() / "p.yaml").string());
  ASSERT_EQ(a.rc, 0) << a.out;
  EXPECT_NE(a.out.find("pod/p created (server dry run)"), std::string::npos) << a.out;
  EXPECT_NE(s.Kubectl("get pod p").rc, 0);
  CommandOutput d = s.Kubectl("delete pod q --dry-run=server");
  ASSERT_EQ(d.rc, 0) << d.out;
  EXPECT_NE(d.out.find("(server dry run)"), std::string::npos) << d.out;
  EXPECT_EQ(s.Kubectl("get pod q -o name").out, "pod/q\n");
  // A bad object is still refused with the validator's message.
  Write(s.dir() / "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: main\n"
        "    resources:\n      requests: {cpu: lots}\n");
  CommandOutput b = s.Kubectl("apply --dry-run=server -f " + (s.dir() / "bad.yaml").string());
  EXPECT_NE(b.rc, 0) << b.out;
  EXPECT_NE(b.out.find("is invalid"), std::string::npos) << b.out;
  EXPECT_EQ(JournalSeq(s), seq);  // no journal record
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeApiSubsetTest, GenerateNameGivesThePrefixAndFiveKubernetesCharacters) {
  ServeProcess s(ScratchDir("generate-name"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "g.yaml", PodYaml("generateName: train-", "x"));
  const std::regex created(R"(pod/(train-[bcdfghjklmnpqrstvwxz2456789]{5}) created)");
  std::smatch m1, m2;
  CommandOutput c1 = s.Kubectl("create -f " + (s.dir() / "g.yaml").string());
  ASSERT_TRUE(std::regex_search(c1.out, m1, created)) << c1.out;
  CommandOutput c2 = s.Kubectl("create -f " + (s.dir() / "g.yaml").string());
  ASSERT_TRUE(std::regex_search(c2.out, m2, created)) << c2.out;
  EXPECT_NE(m1[1].str(), m2[1].str());
  EXPECT_EQ(s.Kubectl("get pod " + m1[1].str() + " -o name").out, "pod/" + m1[1].str() + "\n");
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeApiSubsetTest, DeleteCollectionDeletesWhatTheSelectorMatches) {
  ServeProcess s(ScratchDir("deletecollection"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "pods.yaml", PodYaml("name: x-1", "x") + "---\n" + PodYaml("name: x-2", "x") +
                                   "---\n" + PodYaml("name: y-1", "y") + "---\n" +
                                   PodYaml("name: z-1", "z"));
  CommandOutput applied = s.Kubectl("apply -f " + (s.dir() / "pods.yaml").string());
  ASSERT_EQ(applied.rc, 0) << applied.out;
  const std::string body = Curl("-X DELETE -w '\\n%{http_code}' '" + s.url() +
                                "/api/v1/namespaces/default/pods?labelSelector=app%3Dx'");
  EXPECT_NE(body.find("\"kind\":\"PodList\""), std::string::npos) << body;
  EXPECT_NE(body.find("\n200"), std::string::npos) << body;
  EXPECT_NE(body.find("\"name\":\"x-1\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"name\":\"x-2\""), std::string::npos) << body;
  EXPECT_EQ(body.find("\"name\":\"y-1\""), std::string::npos) << body;
  // kubectl's own deletes by selector work too (one DELETE per pod).
  CommandOutput k = s.Kubectl("delete pods -l app=y");
  EXPECT_EQ(k.rc, 0) << k.out;
  EXPECT_EQ(s.KubectlUntil("get pods -o name", "pod/z-1\n").out, "pod/z-1\n");
  // Namespaces have no deletecollection.
  EXPECT_NE(Curl("-X DELETE -w '\\n%{http_code}' " + s.url() + "/api/v1/namespaces").find("\n405"),
            std::string::npos);
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeApiSubsetTest, PodUpdatesAreThoseKubernetesAllows) {
  ServeProcess s(ScratchDir("pod-update"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "p.yaml", PodYaml("name: p", "x"));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "p.yaml").string()).rc, 0);
  CommandOutput img = s.Kubectl("set image pod/p main=busybox:2");
  EXPECT_EQ(img.rc, 0) << img.out;
  EXPECT_EQ(s.Kubectl("get pod p -o jsonpath='{.spec.containers[0].image}'").out, "busybox:2");
  CommandOutput lab = s.Kubectl("label pod p tier=gold");
  EXPECT_EQ(lab.rc, 0) << lab.out;
  CommandOutput res = s.Kubectl(
      "patch pod p -p '{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{"
      "\"requests\":{\"cpu\":\"2\"}}}]}}'");
  EXPECT_NE(res.rc, 0) << res.out;
  EXPECT_NE(res.out.find("The Pod \"p\" is invalid: spec: Forbidden: pod updates may not change "
                         "fields other than `spec.containers[*].image`"),
            std::string::npos)
      << res.out;
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeApiSubsetTest, ConfigFileGivesOptionsFlagsWinAndUnknownKeysAreRefusedWithTheLine) {
  const auto dir = ScratchDir("config");
  Write(dir / "bad.yaml", "listen: 127.0.0.1:0\nsnapshot-every: 5\nlistne: x\n");
  CommandOutput bad =
      RunCommand("timeout 60 " + std::string(ARBITER_BINARY) + " serve --data " +
                 (dir / "d").string() + " --config " + (dir / "bad.yaml").string() + " 2>&1");
  EXPECT_NE(bad.rc, 0) << bad.out;
  EXPECT_NE(bad.out.find("bad.yaml:3: unknown key \"listne\""), std::string::npos) << bad.out;
  // --data from the file (it is required): the daemon opens the file's directory. (`timeout`: a
  // file that is not read would leave a daemon serving.)
  Write(dir / "data-only.yaml", "data: /dev/null/arbiter-data\nlisten: 127.0.0.1:0\n");
  CommandOutput data = RunCommand("timeout 60 " + std::string(ARBITER_BINARY) + " serve --config " +
                                  (dir / "data-only.yaml").string() + " 2>&1");
  EXPECT_NE(data.rc, 0) << data.out;
  EXPECT_NE(data.out.find("/dev/null/arbiter-data"), std::string::npos) << data.out;
  // The file's listen is shadowed by the flag (port 1 could not be bound); its snapshot-every
  // and snapshot-growth apply: after a restart the daemon starts from a snapshot.
  Write(dir / "serve.yaml", "listen: 127.0.0.1:1\nsnapshot-every: 2\nsnapshot-growth: 0\n");
  ServeProcess s(dir / "run", {"--config", (dir / "serve.yaml").string()});
  ASSERT_TRUE(s.Start()) << s.log();
  Write(dir / "p.yaml", PodYaml("name: p", "x") + "---\n" + PodYaml("name: q", "x"));
  ASSERT_EQ(s.Kubectl("apply -f " + (dir / "p.yaml").string()).rc, 0);
  EXPECT_EQ(s.Stop(), 0);
  ASSERT_TRUE(s.Start()) << s.log();
  EXPECT_NE(Curl(s.url() + "/debug/arbiter/state").find("\"fromSnapshot\":true"),
            std::string::npos);
  EXPECT_EQ(s.Stop(), 0);
}

}  // namespace
}  // namespace arbiter::testing
