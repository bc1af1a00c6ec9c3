// deploy/validating-policy.yaml on the real test cluster (CTest fixture "kube"; docs/kubernetes.md,
// "deploy/"): kube-apiserver refuses an ElasticQuota that `arbiter validate` refuses, with
// `arbiter validate`'s words, and accepts a good one. Server-side dry runs: nothing is stored.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "integration/kube_fixture.h"

namespace kube_policy_test {

using kube_fixture::Kubectl;
using kube_fixture::KubeTest;

class KubePolicy : public KubeTest {
 protected:
  // `kubectl create --dry-run=server` of an ElasticQuota with this spec: exit code and output.
  arbiter::testing::CommandOutput DryRun(const std::string& spec) {
    const std::string file = (arbiter::testing::Scratch("kube-policy") / "quota.yaml").string();
    std::ofstream(file) << "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: "
                           "{name: quota, namespace: kv}\nspec:\n" +
                               spec;
    return Kubectl("create --dry-run=server -f " + file);
  }
  // The answer to `spec` once the policy is in force (kube-apiserver loads a new policy and its
  // binding within seconds): the first refusal, or the last answer after 60 s.
  arbiter::testing::CommandOutput Refused(const std::string& spec) {
    auto r = DryRun(spec);
    for (int i = 0; i < 300 && r.rc == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      r = DryRun(spec);
    }
    return r;
  }
};

TEST_F(KubePolicy, ElasticQuotaChecksBeyondTheSchemaRefuseWithArbiterValidatesWords) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kv", "kv-0"));
  ASSERT_EQ(Kubectl("create namespace kv --dry-run=client -o yaml | " + kube_fixture::KubectlCmd() +
                    "apply -f -")
                .rc,
            0);
  auto r = Refused("  min: {nvidia.com/gpu: 6}\n  max: {nvidia.com/gpu: 4}\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("ValidatingAdmissionPolicy 'arbiter-elasticquota'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("spec.min[nvidia.com/gpu]: min 6 exceeds max 4"), std::string::npos)
      << r.out;
  r = Refused("  min: {cpu: \"2\"}\n  lendingLimit: {memory: 1Gi}\n");
  EXPECT_NE(r.out.find("spec.lendingLimit.memory: lending limit for memory, which has no min "
                       "(only guaranteed quota is lent)"),
            std::string::npos)
      << r.out;
  r = Refused("  min: {nvidia.com/gpu: 4}\n  lendingLimit: {nvidia.com/gpu: 8}\n");
  EXPECT_NE(r.out.find("spec.lendingLimit[nvidia.com/gpu]: lending limit 8 exceeds min 4"),
            std::string::npos)
      << r.out;
  // Within bounds (quantities compared as quantities: 500m below 1): accepted.
  r = DryRun(
      "  min: {nvidia.com/gpu: 4, cpu: 500m}\n  max: {nvidia.com/gpu: 8, cpu: \"1\"}\n"
      "  lendingLimit: {nvidia.com/gpu: 2}\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  Kubectl("delete namespace kv --wait=false");
}

}  // namespace kube_policy_test
