// Regression: deleting a finished (Succeeded) pod under the real kubectl removed only the stored
// object; the engine was never told, so a ResourceQuota's `count/pods` (which counts a terminal
// pod until it is deleted) kept counting it forever and refused every new pod once full. The
// daemon now sends the engine DeletePod for a finished pod too. Checked across both restart paths:
// a restore from a snapshot taken after the pods finished (the deletion comes after it), and a
// journal replay of the deletions.
#include <gtest/gtest.h>

#include <fstream>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_pod_delete_quota_test {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

std::string PodYaml(const std::string& name, const std::string& duration) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: team\n  annotations:\n    arbiter.dev/duration: " + duration +
         "\nspec:\n  containers:\n  - name: main\n    image: busybox\n    resources:\n      "
         "requests: {cpu: \"1\"}\n";
}

const char* kSetup =
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-0\nstatus:\n  capacity: {cpu: \"32\", "
    "memory: 256Gi, pods: \"110\"}\n"
    "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"
    "---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: objects\n  namespace: team\n"
    "spec:\n  hard:\n    count/pods: \"2\"\n";

// `kubectl get resourcequota`'s REQUEST column, e.g. "count/pods: 1/2".
std::string QuotaRow(const ServeProcess& s) {
  return s.Kubectl("get resourcequota objects -n team --no-headers").out;
}

TEST(ServePodDeleteQuotaTest, DeletedFinishedPodsNoLongerCountAgainstCountPods) {
  const auto dir = ScratchDir("pod-delete-quota");
  {
    // A snapshot after every record: the restart below restores the finished pods from one.
    ServeProcess s(dir, {"--snapshot-every", "1", "--snapshot-growth", "0"});
    ASSERT_TRUE(s.Start()) << s.log();
    Write(dir / "setup.yaml", kSetup);
    ASSERT_EQ(s.Kubectl("apply -f " + (dir / "setup.yaml").string()).rc, 0);
    for (const char* name : {"a", "b"}) {
      Write(dir / (std::string(name) + ".yaml"), PodYaml(name, "1s"));
      CommandOutput a = s.Kubectl("apply -f " + (dir / (std::string(name) + ".yaml")).string());
      ASSERT_EQ(a.rc, 0) << a.out;
    }
    for (const char* name : {"a", "b"}) {
      CommandOutput done =
          s.Kubectl("wait --for=jsonpath='{.status.phase}'=Succeeded -n team pod/" +
                    std::string(name) + " --timeout=60s");
      ASSERT_EQ(done.rc, 0) << done.out;
    }
    EXPECT_NE(s.KubectlUntil("get resourcequota objects -n team --no-headers", "count/pods: 2/2")
                  .out.find("count/pods: 2/2"),
              std::string::npos);
    ASSERT_EQ(s.Stop(), 0) << s.log();
  }
  {
    ServeProcess s(dir);  // restored from the snapshot, then journal records from here on
    ASSERT_TRUE(s.Start()) << s.log();
    ASSERT_NE(s.log().find("\"fromSnapshot\":true"), std::string::npos) << s.log();
    EXPECT_NE(QuotaRow(s).find("count/pods: 2/2"), std::string::npos) << QuotaRow(s);
    CommandOutput del = s.Kubectl("delete pod a b -n team");
    ASSERT_EQ(del.rc, 0) << del.out;
    EXPECT_NE(s.KubectlUntil("get resourcequota objects -n team --no-headers", "count/pods: 0/2")
                  .out.find("count/pods: 0/2"),
              std::string::npos)
        << QuotaRow(s);
    Write(dir / "c.yaml", PodYaml("c", "1h"));
    CommandOutput c = s.Kubectl("apply -f " + (dir / "c.yaml").string());
    ASSERT_EQ(c.rc, 0) << c.out;
    CommandOutput scheduled =
        s.Kubectl("wait --for=condition=PodScheduled -n team pod/c --timeout=30s");
    EXPECT_EQ(scheduled.rc, 0) << scheduled.out << s.Kubectl("describe pod c -n team").out;
    EXPECT_NE(s.KubectlUntil("get resourcequota objects -n team --no-headers", "count/pods: 1/2")
                  .out.find("count/pods: 1/2"),
              std::string::npos)
        << QuotaRow(s);
    ASSERT_EQ(s.Stop(), 0) << s.log();
  }
  {
    ServeProcess s(dir);  // the deletions and "c" replayed from the journal
    ASSERT_TRUE(s.Start()) << s.log();
    EXPECT_NE(s.log().find("\"replayed\":"), std::string::npos) << s.log();
    EXPECT_NE(QuotaRow(s).find("count/pods: 1/2"), std::string::npos) << QuotaRow(s);
    CommandOutput pods = s.Kubectl("get pods -n team -o name");
    EXPECT_EQ(pods.out, "pod/c\n") << pods.out;
    // One more fits (2/2); the quota is full again.
    Write(dir / "d.yaml", PodYaml("d", "1h"));
    ASSERT_EQ(s.Kubectl("apply -f " + (dir / "d.yaml").string()).rc, 0);
    CommandOutput scheduled =
        s.Kubectl("wait --for=condition=PodScheduled -n team pod/d --timeout=30s");
    EXPECT_EQ(scheduled.rc, 0) << scheduled.out;
    EXPECT_NE(s.KubectlUntil("get resourcequota objects -n team --no-headers", "count/pods: 2/2")
                  .out.find("count/pods: 2/2"),
              std::string::npos)
        << QuotaRow(s);
    EXPECT_EQ(s.Stop(), 0);
  }
}

}  // namespace serve_pod_delete_quota_test
}  // namespace arbiter::testing
