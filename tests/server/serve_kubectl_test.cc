// `arbiter serve` under the real kubectl (Debian's kubernetes-client, 1.32): apply, get, wait,
// describe, delete, refusal of a bad object, preemption, restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_kubectl_test {

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

std::string PodYaml(const std::string& name, int gpus, const std::string& extra_annotations = "",
                    const std::string& priority_class = "") {
  std::string y =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: default\n";
  y += "  annotations:\n    arbiter.dev/shutdown-time: 1s\n" + extra_annotations;
  y += "spec:\n";
  if (!priority_class.empty()) y += "  priorityClassName: " + priority_class + "\n";
  y += "  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {cpu: "
       "\"1\", "
       "nvidia.com/gpu: \"" +
       std::to_string(gpus) + "\"}\n      limits: {nvidia.com/gpu: \"" + std::to_string(gpus) +
       "\"}\n";
  return y;
}

const char* kNode =
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-0\n  labels: {nvidia.com/gpu.product: "
    "NVIDIA-A100-SXM4-80GB}\nstatus:\n  capacity: {cpu: \"32\", memory: 256Gi, nvidia.com/gpu: "
    "\"8\", pods: "
    "\"110\"}\n";

TEST(ServeKubectlTest, KubectlIsTheReal132Client) {
  CommandOutput v = RunCommand("kubectl version --client 2>&1");
  ASSERT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("v1.32"), std::string::npos) << v.out;
}

TEST(ServeKubectlTest, ApplyExamplePoolClientSideThenGetAndDelete) {
  ServeProcess s(ScratchDir("apply-client"));
  ASSERT_TRUE(s.Start()) << s.log();
  CommandOutput a = s.Kubectl("apply -f " + kPool);
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  EXPECT_NE(a.out.find("pod/train-a-1 created"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("elasticquota.arbiter.dev/team-b created"), std::string::npos) << a.out;
  // Applying again changes nothing.
  CommandOutput again = s.Kubectl("apply -f " + kPool);
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("pod/train-a-1 unchanged"), std::string::npos) << again.out;
  CommandOutput pods = s.Kubectl("get pods -A -o wide");
  ASSERT_EQ(pods.rc, 0) << pods.out;
  EXPECT_NE(pods.out.find("NOMINATED NODE"), std::string::npos) << pods.out;
  EXPECT_NE(pods.out.find("train-a-1"), std::string::npos) << pods.out;
  EXPECT_NE(pods.out.find("Running"), std::string::npos) << pods.out;
  // train-a-2 waits for team-a's ResourceQuota: its STATUS is the pending reason.
  EXPECT_NE(pods.out.find("QuotaExceeded"), std::string::npos) << pods.out;
  CommandOutput quota = s.Kubectl("get resourcequota -n team-a team-a-gpu");
  EXPECT_NE(quota.out.find("requests.nvidia.com/gpu: "), std::string::npos) << quota.out;
  EXPECT_NE(quota.out.find("/16"), std::string::npos) << quota.out;
  CommandOutput eq = s.Kubectl("get elasticquota -A");
  EXPECT_NE(eq.out.find("team-b"), std::string::npos) << eq.out;
  EXPECT_NE(eq.out.find("nvidia.com/gpu:"), std::string::npos) << eq.out;
  CommandOutput nodes = s.Kubectl("get nodes");
  EXPECT_NE(nodes.out.find("a100-0"), std::string::npos) << nodes.out;
  CommandOutput del = s.Kubectl("delete pod -n team-a train-a-1 --timeout=60s");
  EXPECT_EQ(del.rc, 0) << del.out;
  CommandOutput gone = s.Kubectl("get pod -n team-a train-a-1");
  EXPECT_NE(gone.rc, 0);
  EXPECT_NE(gone.out.find("NotFound"), std::string::npos) << gone.out;
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

TEST(ServeKubectlTest, ApplyExamplePoolServerSide) {
  ServeProcess s(ScratchDir("apply-server"));
  ASSERT_TRUE(s.Start()) << s.log();
  CommandOutput a = s.Kubectl("apply --server-side -f " + kPool);
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  EXPECT_NE(a.out.find("pod/train-a-1 serverside-applied"), std::string::npos) << a.out;
  CommandOutput q = s.Kubectl("get elasticquotas -A");
  EXPECT_NE(q.out.find("team-b"), std::string::npos) << q.out;
  EXPECT_EQ(s.Stop(), 0);
}

// kubectl 1.32's --server-side on an object made by client-side apply applies the file as
// manager "kubectl", then the last-applied annotation alone as "kubectl-last-applied": the
// second apply must not take "kubectl"'s fields away (it did when fieldManager was ignored).
TEST(ServeKubectlTest, ServerSideApplyAfterClientSideApplyKeepsEverySpec) {
  ServeProcess s(ScratchDir("csa-ssa"));
  ASSERT_TRUE(s.Start()) << s.log();
  ASSERT_EQ(s.Kubectl("apply -f " + kPool).rc, 0);
  CommandOutput a = s.Kubectl("apply --server-side -f " + kPool);
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  EXPECT_NE(a.out.find("resourcequota/team-a-gpu serverside-applied"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find("failed to migrate"), std::string::npos) << a.out;
  CommandOutput rq = s.Kubectl(
      "get resourcequota -n team-a team-a-gpu -o "
      "jsonpath='{.spec.hard.requests\\.nvidia\\.com/gpu}'");
  EXPECT_EQ(rq.out, "16") << rq.out;
  CommandOutput eq =
      s.Kubectl("get elasticquota -n team-a team-a -o jsonpath='{.spec.cohort} {.spec.min.cpu}'");
  EXPECT_EQ(eq.out, "gpu-pool 64") << eq.out;
  CommandOutput pp = s.Kubectl("get poolpolicy default -o jsonpath='{.spec.quota.whenExceeded}'");
  EXPECT_EQ(pp.out, "Queue") << pp.out;
  CommandOutput node =
      s.Kubectl("get node a100-0 -o jsonpath='{.metadata.labels.topology\\.kubernetes\\.io/zone}'");
  EXPECT_EQ(node.out, "zone-a") << node.out;
  CommandOutput managers = s.Kubectl(
      "get resourcequota -n team-a team-a-gpu -o jsonpath='{.metadata.managedFields[*].manager}'");
  EXPECT_NE(managers.out.find("kubectl-last-applied"), std::string::npos) << managers.out;
  // Applying the same file again, either way, changes nothing.
  CommandOutput again = s.Kubectl("apply --server-side -f " + kPool);
  ASSERT_EQ(again.rc, 0) << again.out;
  rq = s.Kubectl(
      "get resourcequota -n team-a team-a-gpu -o "
      "jsonpath='{.spec.hard.requests\\.nvidia\\.com/gpu}'");
  EXPECT_EQ(rq.out, "16") << rq.out;
  CommandOutput csa = s.Kubectl("apply -f " + kPool);
  EXPECT_EQ(csa.rc, 0) << csa.out;
  EXPECT_NE(csa.out.find("resourcequota/team-a-gpu unchanged"), std::string::npos) << csa.out;
  EXPECT_EQ(s.Stop(), 0);
}

// Two apply managers: each owns what it applied; the second one's apply merges, and the first
// one's re-apply keeps the second one's fields.
TEST(ServeKubectlTest, ServerSideApplyOfTwoManagersMergesTheirFields) {
  ServeProcess s(ScratchDir("ssa-managers"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "pc.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: ssa-test}\n"
        "value: 500\ndescription: from the platform team\n");
  Write(s.dir() / "labels.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: ssa-test\n"
        "  labels: {owner: labeler}\n");
  const std::string pc = (s.dir() / "pc.yaml").string();
  ASSERT_EQ(s.Kubectl("apply --server-side -f " + pc).rc, 0);
  CommandOutput l = s.Kubectl("apply --server-side --field-manager=labeler -f " +
                              (s.dir() / "labels.yaml").string());
  ASSERT_EQ(l.rc, 0) << l.out << s.log();
  const std::string query =
      "get priorityclass ssa-test -o jsonpath='{.value} {.metadata.labels.owner} {.description}'";
  EXPECT_EQ(s.Kubectl(query).out, "500 labeler from the platform team");
  ASSERT_EQ(s.Kubectl("apply --server-side -f " + pc).rc, 0);
  EXPECT_EQ(s.Kubectl(query).out, "500 labeler from the platform team");
  EXPECT_EQ(s.Stop(), 0);
}

// kubectl's typed generators (create namespace|quota|priorityclass|pdb) send protobuf bodies
// (kubectl 1.32 does not fall back to JSON); the daemon decodes them and answers in JSON.
TEST(ServeKubectlTest, TypedGeneratorsProtobufBodiesCreateTheObjects) {
  ServeProcess s(ScratchDir("protobuf"));
  ASSERT_TRUE(s.Start()) << s.log();
  for (const char* create :
       {"create namespace dev", "create quota q --hard=cpu=2,nvidia.com/gpu=1 -n dev",
        "create priorityclass hi --value=1000 --description=x",
        "create pdb p --selector=app=a --min-available=1 -n dev",
        "create pdb p2 --selector=app=a --max-unavailable=20% -n dev"}) {
    CommandOutput c = s.Kubectl(create);
    EXPECT_EQ(c.rc, 0) << create << ": " << c.out << s.log();
    EXPECT_NE(c.out.find(" created"), std::string::npos) << c.out;
  }
  EXPECT_EQ(s.Kubectl("get namespace dev -o jsonpath='{.metadata.name}'").out, "dev");
  EXPECT_EQ(s.Kubectl("get quota q -n dev -o jsonpath='{.spec}'").out,
            "{\"hard\":{\"cpu\":\"2\",\"nvidia.com/gpu\":\"1\"}}");
  EXPECT_EQ(s.Kubectl("get priorityclass hi -o jsonpath='{.value} {.description}'").out, "1000 x");
  EXPECT_EQ(s.Kubectl("get pdb p -n dev -o jsonpath='{.spec}'").out,
            "{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"a\"}}}");
  EXPECT_EQ(s.Kubectl("get pdb p2 -n dev -o jsonpath='{.spec.maxUnavailable}'").out, "20%");
  CommandOutput again = s.Kubectl("create priorityclass hi --value=5");
  EXPECT_NE(again.rc, 0);
  EXPECT_NE(again.out.find("\"hi\" already exists"), std::string::npos) << again.out;
  EXPECT_EQ(s.Stop(), 0);
}

// `kubectl create job` sends its batch/v1 Job as protobuf too (gogo-protobuf: every non-pointer
// field written, empty ones included); the Job is created as its JSON would create it and runs
// its pod. A Job body with a field the decoder does not decode (volumes) is refused with 415.
TEST(ServeKubectlTest, CreateJobProtobufBodyCreatesTheJobAndItsPod) {
  ServeProcess s(ScratchDir("protobuf-job"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "node.yaml", kNode);
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "node.yaml").string()).rc, 0);
  ASSERT_EQ(s.Kubectl("create namespace dev").rc, 0);
  CommandOutput c = s.Kubectl("create job j --image=busybox -n dev -- sleep 5");
  ASSERT_EQ(c.rc, 0) << c.out << s.log();
  EXPECT_NE(c.out.find("job.batch/j created"), std::string::npos) << c.out;
  EXPECT_EQ(s.Kubectl("get job j -n dev -o jsonpath='{.spec.template.spec.containers[0].image} "
                      "{.spec.template.spec.containers[0].command} "
                      "{.spec.template.spec.restartPolicy}'")
                .out,
            "busybox [\"sleep\",\"5\"] Never");
  CommandOutput pod = s.KubectlUntil(
      "get pods -n dev -l batch.kubernetes.io/job-name=j -o jsonpath='{.items[0].metadata."
      "ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name} "
      "{.items[0].spec.containers[0].image}'",
      "Job/j busybox");
  EXPECT_EQ(pod.out, "Job/j busybox") << pod.out << s.Kubectl("get job j -n dev -o yaml").out;

  auto field = [](int n, const std::string& v) {
    return std::string(1, static_cast<char>(n << 3 | 2)) + static_cast<char>(v.size()) + v;
  };
  const std::string pod_spec =
      field(1, field(1, "data")) + field(2, field(1, "c") + field(2, "busybox"));
  const std::string job =
      std::string("k8s\0", 4) + field(1, field(1, "batch/v1") + field(2, "Job")) +
      field(2, field(1, field(1, "v")) + field(2, field(6, field(2, pod_spec))));
  {
    std::ofstream f(s.dir() / "job.pb", std::ios::binary);
    f << job;
  }
  const std::string refused = RunCommand("curl -s -w ' %{http_code}' -X POST " + s.url() +
                                         "/apis/batch/v1/namespaces/dev/jobs -H 'Content-Type: "
                                         "application/vnd.kubernetes.protobuf' --data-binary @" +
                                         (s.dir() / "job.pb").string())
                                  .out;
  EXPECT_NE(refused.find("protobuf bodies of Job (batch/v1): spec.template.spec.volumes (field 1) "
                         "is not decoded; send the object as JSON"),
            std::string::npos)
      << refused;
  EXPECT_EQ(refused.substr(refused.size() - 4), " 415");
  EXPECT_NE(s.Kubectl("get job v -n dev").rc, 0);
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

// `kubectl run` with the common flags (kubectl 1.32 sends its Pod as JSON): the pod is scheduled
// and Running with its labels, env, port and command (or args). `kubectl debug --copy-to` sends
// its copy of the pod as protobuf (client-go's typed client): decoded, every one of those fields
// is kept, and the copy runs too. `kubectl debug node/N` sends volumes and host namespaces, which
// are not decoded: 415 naming spec.volumes, and no pod is made.
TEST(ServeKubectlTest, KubectlRunPodRunsAndItsProtobufDebugCopyRunsToo) {
  ServeProcess s(ScratchDir("kubectl-run"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "node.yaml", kNode);
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "node.yaml").string()).rc, 0);
  CommandOutput r = s.Kubectl(
      "run web --image=busybox --restart=Never --labels=app=web,tier=a --env=A=1 --env=B=two "
      "--port=8080 --image-pull-policy=IfNotPresent --privileged --command -- sleep 3600");
  ASSERT_EQ(r.rc, 0) << r.out << s.log();
  EXPECT_NE(r.out.find("pod/web created"), std::string::npos) << r.out;
  ASSERT_EQ(s.Kubectl("run args --image=busybox --restart=Never -- echo hi").rc, 0);
  for (const char* pod : {"pod/web", "pod/args"}) {
    CommandOutput w = s.Kubectl(std::string("wait --for=jsonpath='{.status.phase}'=Running ") +
                                pod + " --timeout=30s");
    EXPECT_EQ(w.rc, 0) << pod << ": " << w.out << s.Kubectl("get pods -o wide").out;
  }
  const std::string fields =
      " -o jsonpath='{.spec.containers[0].image} {.spec.containers[0].command} "
      "{.spec.containers[0].ports} {.spec.containers[0].env} {.spec.containers[0].imagePullPolicy} "
      "{.spec.containers[0].securityContext} {.spec.dnsPolicy} {.spec.restartPolicy} "
      "{.spec.nodeName}'";
  const std::string common =
      " [\"sleep\",\"3600\"] [{\"containerPort\":8080}] "
      "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"two\"}] IfNotPresent "
      "{\"privileged\":true} ClusterFirst Never gpu-0";
  EXPECT_EQ(s.Kubectl("get pod web" + fields).out, "busybox" + common);
  EXPECT_EQ(s.Kubectl("get pod web -o jsonpath='{.metadata.labels}'").out,
            "{\"app\":\"web\",\"tier\":\"a\"}");
  EXPECT_EQ(s.Kubectl("get pod args -o jsonpath='{.spec.containers[0].args}'").out,
            "[\"echo\",\"hi\"]");

  CommandOutput d = s.Kubectl(
      "debug web --copy-to=web-copy --container=web --image=busybox:1.36 -i -t --attach=false");
  ASSERT_EQ(d.rc, 0) << d.out << s.log();
  CommandOutput w =
      s.Kubectl("wait --for=jsonpath='{.status.phase}'=Running pod/web-copy --timeout=30s");
  EXPECT_EQ(w.rc, 0) << w.out << s.Kubectl("get pod web-copy -o yaml").out;
  EXPECT_EQ(s.Kubectl("get pod web-copy" + fields).out, "busybox:1.36" + common);
  EXPECT_EQ(s.Kubectl("get pod web-copy -o jsonpath='{.spec.containers[0].stdin} "
                      "{.spec.containers[0].tty}'")
                .out,
            "true true");

  CommandOutput node = s.Kubectl("debug node/gpu-0 --image=busybox --profile=general");
  EXPECT_NE(node.rc, 0);
  EXPECT_NE(node.out.find("protobuf bodies of Pod (v1): spec.volumes (field 1) is not decoded; "
                          "send the object as JSON"),
            std::string::npos)
      << node.out;
  EXPECT_EQ(s.Kubectl("get pods -o name").out.find("node-debugger"), std::string::npos);
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

// `kubectl delete --grace-period=0 --force` after an ordinary delete of a pod that takes 10 min to
// shut down (grace 600 s): the second delete shortens the grace, as kube-apiserver lets it, and
// the pod is gone within kubectl's wait (it waited the whole shutdown before journal format 7).
TEST(ServeKubectlTest, ForceDeleteAfterAnOrdinaryDeleteEndsTheShutdown) {
  ServeProcess s(ScratchDir("kubectl-force"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "node.yaml", kNode);
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "node.yaml").string()).rc, 0);
  Write(s.dir() / "slow.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: slow\n  annotations:\n"
        "    arbiter.dev/shutdown-time: 10m\nspec:\n  terminationGracePeriodSeconds: 600\n"
        "  containers:\n  - name: main\n    image: busybox\n");
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "slow.yaml").string()).rc, 0);
  ASSERT_EQ(s.Kubectl("wait --for=jsonpath='{.status.phase}'=Running pod/slow --timeout=30s").rc,
            0);
  ASSERT_EQ(s.Kubectl("delete pod slow --wait=false").rc, 0);
  EXPECT_EQ(s.Kubectl("get pod slow -o jsonpath='{.metadata.deletionGracePeriodSeconds}'").out,
            "600");
  CommandOutput force = s.Kubectl("delete pod slow --grace-period=0 --force --timeout=30s");
  EXPECT_EQ(force.rc, 0) << force.out << s.log();
  CommandOutput gone = s.Kubectl("get pod slow");
  EXPECT_NE(gone.rc, 0);
  EXPECT_NE(gone.out.find("pods \"slow\" not found"), std::string::npos) << gone.out;
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

// A protobuf body of a kind the daemon does not decode: 415 naming the decoded kinds; a body
// that is not protobuf: 400. Other media types: 415 listing both accepted types.
TEST(ServeKubectlTest, ProtobufBodyOfAnUndecodedKindIs415AndAMalformedOneIs400) {
  ServeProcess s(ScratchDir("protobuf-bad"));
  ASSERT_TRUE(s.Start()) << s.log();
  auto field = [](int n, const std::string& v) {
    return std::string(1, static_cast<char>(n << 3 | 2)) + static_cast<char>(v.size()) + v;
  };
  const std::string cm = std::string("k8s\0", 4) +
                         field(1, field(1, "v1") + field(2, "ConfigMap")) +
                         field(2, field(1, field(1, "p")));
  {
    std::ofstream f(s.dir() / "cm.pb", std::ios::binary);
    f << cm;
  }
  Write(s.dir() / "bad.pb", "not protobuf");
  const std::string post = "curl -s -w ' %{http_code}' -X POST " + s.url() +
                           "/api/v1/namespaces/default/pods -H 'Content-Type: "
                           "application/vnd.kubernetes.protobuf' --data-binary @";
  const std::string undecoded = RunCommand(post + (s.dir() / "cm.pb").string()).out;
  EXPECT_NE(undecoded.find("UnsupportedMediaType"), std::string::npos) << undecoded;
  EXPECT_NE(undecoded.find("protobuf bodies of ConfigMap (v1) are not supported"),
            std::string::npos)
      << undecoded;
  EXPECT_NE(undecoded.find("PodDisruptionBudget (policy/v1)"), std::string::npos) << undecoded;
  EXPECT_EQ(undecoded.substr(undecoded.size() - 4), " 415");
  const std::string bad = RunCommand(post + (s.dir() / "bad.pb").string()).out;
  EXPECT_NE(bad.find("the protobuf body does not start with"), std::string::npos) << bad;
  EXPECT_EQ(bad.substr(bad.size() - 4), " 400");
  const std::string yaml =
      RunCommand("curl -s -w ' %{http_code}' -X POST " + s.url() +
                 "/api/v1/namespaces -H 'Content-Type: text/yaml' --data-binary x")
          .out;
  EXPECT_NE(yaml.find("accepted media types include: application/json, application/yaml, "
                      "application/vnd.kubernetes.protobuf for Namespace (v1)"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(yaml.substr(yaml.size() - 4), " 415");
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeKubectlTest, PodIsScheduledRunsAndSucceedsAndDescribeShowsItsEvents) {
  ServeProcess s(ScratchDir("wait"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "node.yaml", kNode);
  Write(s.dir() / "pod.yaml", PodYaml("short", 2, "    arbiter.dev/duration: 2s\n"));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "node.yaml").string()).rc, 0);
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "pod.yaml").string());
  ASSERT_EQ(a.rc, 0) << a.out;
  CommandOutput w = s.Kubectl("wait --for=condition=PodScheduled pod/short --timeout=30s");
  EXPECT_EQ(w.rc, 0) << w.out;
  CommandOutput done =
      s.Kubectl("wait --for=jsonpath='{.status.phase}'=Succeeded pod/short --timeout=60s");
  EXPECT_EQ(done.rc, 0) << done.out;
  // kubectl get events --watch: the list (as Table rows), then it keeps watching until the
  // request timeout ends it.
  CommandOutput watch = s.Kubectl("get events --watch --request-timeout=3s");
  EXPECT_NE(watch.out.find("Successfully assigned default/short to gpu-0"), std::string::npos)
      << watch.out;
  EXPECT_NE(watch.out.find("pod/short"), std::string::npos) << watch.out;
  CommandOutput d = s.Kubectl("describe pod short");
  EXPECT_EQ(d.rc, 0) << d.out;
  EXPECT_NE(d.out.find("Scheduled"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("Successfully assigned default/short to gpu-0"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("Completed"), std::string::npos) << d.out;
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeKubectlTest, BadObjectIsRefusedWithTheValidatorsFieldMessageAndNothingChanges) {
  ServeProcess s(ScratchDir("bad"));
  ASSERT_TRUE(s.Start()) << s.log();
  std::string bad = PodYaml("bad", 1);
  bad.replace(bad.find("cpu: \"1\""), 8, "cpu: lots");
  Write(s.dir() / "bad.yaml", bad);
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "bad.yaml").string());
  EXPECT_NE(a.rc, 0);
  EXPECT_NE(a.out.find("is invalid"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("spec.containers[0].resources.requests.cpu"), std::string::npos) << a.out;
  CommandOutput g = s.Kubectl("get pods");
  EXPECT_EQ(g.out.find("bad"), std::string::npos) << g.out;
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeKubectlTest, HigherPriorityPodPreemptsAndTheVictimGetsDisruptionTarget) {
  ServeProcess s(ScratchDir("preempt"));
  ASSERT_TRUE(s.Start()) << s.log();
  Write(s.dir() / "setup.yaml", std::string(kNode) +
                                    "---\napiVersion: scheduling.k8s.io/v1\nkind: "
                                    "PriorityClass\nmetadata: {name: low}\nvalue: 100\n"
                                    "---\napiVersion: scheduling.k8s.io/v1\nkind: "
                                    "PriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "setup.yaml").string()).rc, 0);
  Write(s.dir() / "low.yaml", PodYaml("low", 8, "", "low"));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "low.yaml").string()).rc, 0);
  ASSERT_EQ(s.Kubectl("wait --for=condition=PodScheduled pod/low --timeout=30s").rc, 0);
  Write(s.dir() / "high.yaml", PodYaml("high", 8, "", "high"));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "high.yaml").string()).rc, 0);
  CommandOutput dt = s.Kubectl("wait --for=condition=DisruptionTarget pod/low --timeout=30s");
  EXPECT_EQ(dt.rc, 0) << dt.out;
  CommandOutput hi =
      s.Kubectl("wait --for=jsonpath='{.spec.nodeName}'=gpu-0 pod/high --timeout=30s");
  EXPECT_EQ(hi.rc, 0) << hi.out;
  // The Priority admission's spec.priority, and Kubernetes' QoS class.
  CommandOutput prio = s.Kubectl("get pod high -o jsonpath='{.spec.priority} {.status.qosClass}'");
  EXPECT_EQ(prio.out, "1000 Burstable") << prio.out;
  // A PriorityClass's value is immutable: the field, in Kubernetes' words.
  CommandOutput change = s.Kubectl("patch priorityclass high --type=merge -p '{\"value\":5}'");
  EXPECT_NE(change.rc, 0);
  EXPECT_NE(change.out.find("is invalid: value: Forbidden: may not be changed in an update"),
            std::string::npos)
      << change.out;
  CommandOutput ev = s.Kubectl(
      "get events --field-selector involvedObject.name=low -o jsonpath='{.items[*].reason}'");
  EXPECT_NE(ev.out.find("Preempted"), std::string::npos) << ev.out;
  // Requeued, "low" is unscheduled again: not on gpu-0, STATUS its pending reason.
  CommandOutput unscheduled =
      s.Kubectl("wait --for=condition=PodScheduled=false pod/low --timeout=30s");
  EXPECT_EQ(unscheduled.rc, 0) << unscheduled.out;
  CommandOutput on_node = s.Kubectl("get pods --field-selector spec.nodeName=gpu-0 -o name");
  EXPECT_EQ(on_node.out, "pod/high\n") << on_node.out;
  CommandOutput row = s.Kubectl("get pod low --no-headers");
  EXPECT_EQ(row.out.find("ContainerCreating"), std::string::npos) << row.out;
  EXPECT_NE(row.out.find(" 1 "), std::string::npos) << row.out;  // RESTARTS
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeKubectlTest, RestartKeepsEveryObjectWithItsResourceVersion) {
  ServeProcess s(ScratchDir("restart"));
  ASSERT_TRUE(s.Start()) << s.log();
  ASSERT_EQ(s.Kubectl("apply -f " + kPool).rc, 0);
  const std::string query =
      "get pods,nodes,namespaces,resourcequotas,priorityclasses,elasticquotas -A "
      "-o jsonpath='{range .items[*]}{.kind}/{.metadata.name}@{.metadata.resourceVersion} {end}'";
  CommandOutput before = s.Kubectl(query);
  ASSERT_EQ(before.rc, 0) << before.out;
  ASSERT_EQ(s.Stop(), 0) << s.log();
  ASSERT_TRUE(s.Start()) << s.log();
  CommandOutput after = s.Kubectl(query);
  EXPECT_EQ(after.rc, 0) << after.out;
  EXPECT_EQ(before.out, after.out);
  EXPECT_NE(s.log().find("\"replayed\":"), std::string::npos);
  EXPECT_EQ(s.Stop(), 0);
}

// Regression (issue 10): a file with ResourceFlavors and an ElasticQuota naming them in
// spec.flavors, which `arbiter validate` accepts, applies under kubectl too (the daemon refused
// the quota: "unknown ResourceFlavor"); a pod takes the first flavor with quota, then the next.
TEST(ServeKubectlTest, ResourceFlavorsAndAFlavoredElasticQuotaApplyAsValidateLoadsThem) {
  ServeProcess s(ScratchDir("flavors"));
  ASSERT_TRUE(s.Start()) << s.log();
  std::string y;
  for (const char* m : {"H100", "A100"}) {
    const std::string lower = std::string(m) == "H100" ? "h100" : "a100";
    y += "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + lower +
         "-0\n  labels: {nvidia.com/gpu.product: " + m +
         "}\nstatus:\n  capacity: {cpu: \"32\", memory: 256Gi, nvidia.com/gpu: \"4\", pods: "
         "\"110\"}\n---\n";
    y += "apiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: " + lower +
         "}\nspec: {nodeLabels: {nvidia.com/gpu.product: " + m + "}}\n---\n";
  }
  y += "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: "
       "default}\n"
       "spec:\n  flavors:\n  - {name: h100, min: {nvidia.com/gpu: 4}}\n  - {name: a100, min: "
       "{nvidia.com/gpu: 4}}\n";
  Write(s.dir() / "flavors.yaml", y);
  CommandOutput v = RunCommand(std::string(ARBITER_BINARY) + " validate -f " +
                               (s.dir() / "flavors.yaml").string() + " 2>&1");
  ASSERT_EQ(v.rc, 0) << v.out;
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "flavors.yaml").string());
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  EXPECT_NE(a.out.find("elasticquota.arbiter.dev/q created"), std::string::npos) << a.out;
  Write(s.dir() / "pods.yaml", PodYaml("first", 4) + "---\n" + PodYaml("second", 4));
  ASSERT_EQ(s.Kubectl("apply -f " + (s.dir() / "pods.yaml").string()).rc, 0);
  EXPECT_EQ(s.Kubectl("wait --for=jsonpath='{.spec.nodeName}'=h100-0 pod/first --timeout=30s").rc,
            0);
  EXPECT_EQ(s.Kubectl("wait --for=jsonpath='{.spec.nodeName}'=a100-0 pod/second --timeout=30s").rc,
            0);
  EXPECT_EQ(s.Stop(), 0);
}

// kubectl get asks for ?limit=500 and follows metadata.continue (--chunk-size): every pod once,
// the header once; the raw list shows the token (issue 27).
TEST(ServeKubectlTest, GetFollowsContinueAcrossChunks) {
  ServeProcess s(ScratchDir("chunks"));
  ASSERT_TRUE(s.Start()) << s.log();
  std::string docs;
  for (int i = 0; i < 11; ++i)
    docs += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: chunk-" + std::to_string(i) +
            "\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: x\n";
  Write(s.dir() / "pods.yaml", docs);
  ASSERT_EQ(s.Kubectl("create -f " + (s.dir() / "pods.yaml").string()).rc, 0);
  CommandOutput names = s.Kubectl("get pods --chunk-size=3 -o name");
  ASSERT_EQ(names.rc, 0) << names.out;
  std::vector<std::string> want;
  for (int i = 0; i < 11; ++i) want.push_back("pod/chunk-" + std::to_string(i));
  std::sort(want.begin(), want.end());
  std::vector<std::string> got;
  std::istringstream lines(names.out);
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) got.push_back(l);
  EXPECT_EQ(got, want);
  // kubectl did page: its requests (-v=6) carry limit=3 and then the tokens.
  CommandOutput verbose = s.Kubectl("get pods --chunk-size=3 -o name -v=6");
  size_t continues = 0;
  for (size_t at = 0; (at = verbose.out.find("pods?continue=", at)) != std::string::npos; ++at)
    ++continues;
  EXPECT_NE(verbose.out.find("pods?limit=3"), std::string::npos) << verbose.out;
  EXPECT_GE(continues, 3u) << verbose.out;
  CommandOutput table = s.Kubectl("get pods --chunk-size=4");
  ASSERT_EQ(table.rc, 0) << table.out;
  size_t headers = 0, rows = 0;
  std::istringstream tl(table.out);
  for (std::string l; std::getline(tl, l);) {
    if (l.rfind("NAME", 0) == 0) ++headers;
    if (l.rfind("chunk-", 0) == 0) ++rows;
  }
  EXPECT_EQ(headers, 1u) << table.out;
  EXPECT_EQ(rows, 11u) << table.out;
  CommandOutput raw = s.Kubectl("get --raw '/api/v1/pods?limit=2'");
  ASSERT_EQ(raw.rc, 0) << raw.out;
  EXPECT_NE(raw.out.find("\"continue\":\""), std::string::npos) << raw.out;
  EXPECT_NE(raw.out.find("\"remainingItemCount\":9"), std::string::npos) << raw.out;
}

}  // namespace serve_kubectl_test
}  // namespace arbiter::testing
