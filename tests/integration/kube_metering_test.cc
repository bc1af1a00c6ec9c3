// `arbiter scheduler --ledger` against the real test cluster (scripts/services/kube.sh, CTest
// fixture "kube"; docs/kubernetes.md "Metering"): pods with arbiter.dev/duration run and finish on
// a KWOK node, and the ledger then holds their request track, from each pod's status.startTime to
// its container's finishedAt as kube-apiserver has them, priced by the cluster's PriceBook object:
// quantities and amounts compared as exact decimals with what the pods' own timestamps give.
#include <map>
#include <set>

#include "adapters/sqlite/ledger.h"
#include "core/duration.h"
#include "integration/kube_fixture.h"

namespace kube_metering_test {

using arbiter::Decimal;
using kube_fixture::Get;
using kube_fixture::Kubectl;
using kube_fixture::Until;

// Per core-hour 3.6, GiB-hour 0.036, GPU-hour 36: per second 0.001, 0.00001 and 0.01.
const char* kPriceBook = R"(apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: mt-prices}
spec:
  currency: CNY
  effectiveFrom: "2026-01-01T00:00:00Z"
  mode: Request
  prices: {cpu: "3.6", memory: "0.036", nvidia.com/gpu: "36"}
)";

std::string Pod(const std::string& name, int gpus, const std::string& duration) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: mt\n  annotations: {arbiter.dev/duration: " + duration +
         "}\nspec:\n  schedulerName: arbiter-mt\n  terminationGracePeriodSeconds: 1\n"
         "  containers:\n  - name: main\n    image: busybox\n" +
         kube_fixture::Resources(gpus);
}

// Sums of the ledger's current rows of namespace mt, per (workload, resource).
struct Sum {
  arbiter::billing::i128 request_raw = 0;
  Decimal quantity, amount;
};
std::map<std::pair<std::string, std::string>, Sum> LedgerSums(const std::string& path) {
  std::map<std::pair<std::string, std::string>, Sum> out;
  auto ledger = arbiter::sqlite::Ledger::OpenForReading(path);
  if (!ledger.ok()) return out;
  arbiter::sqlite::RowFilter f;
  f.namespace_ = "mt";
  auto rows = (*ledger)->ReadDetailed(f);
  if (!rows.ok()) return out;
  for (const auto& r : *rows) {
    Sum& s = out[{r.row.workload, r.row.resource}];
    s.request_raw += r.row.request_raw;
    s.quantity += r.rated.billed_quantity;
    s.amount += r.rated.amount;
  }
  return out;
}

class KubeMetering : public kube_fixture::KubeTest {};

TEST_F(KubeMetering, FinishedPodsAreInTheLedgerFromStartToFinishPricedExactly) {
  ASSERT_NO_FATAL_FAILURE(Fresh("mt", "mt-0"));
  ASSERT_NO_FATAL_FAILURE(Node("mt-0", "mt"));
  ASSERT_NO_FATAL_FAILURE(Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: mt}\n---\n" +
                                std::string(kPriceBook)));
  const std::string ledger = (arbiter::testing::Scratch("mt") / "ledger.db").string();
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(ledger + ext);
  kube_fixture::Scheduler sched("arbiter-mt", "mt", LogFile("mt"), "",
                                "--ledger " + ledger + " --meter-every 1s");
  ASSERT_NO_FATAL_FAILURE(Apply(Pod("p-1", 1, "3s") + "---\n" + Pod("p-2", 2, "5s")));
  // Each pod's run as kube-apiserver has it (whole seconds, RFC 3339).
  std::map<std::string, std::pair<int, int64_t>> want;  // workload -> (GPUs, seconds)
  for (const auto& [pod, gpus] : std::map<std::string, int>{{"p-1", 1}, {"p-2", 2}}) {
    ASSERT_EQ(Until("pod " + pod + " -n mt", "{.status.phase}",
                    [](const std::string& v) { return v == "Succeeded"; }),
              "Succeeded")
        << kube_fixture::ReadFile(LogFile("mt"));
    auto start = arbiter::ParseRfc3339(Get("pod " + pod + " -n mt", "{.status.startTime}"));
    auto end = arbiter::ParseRfc3339(
        Get("pod " + pod + " -n mt", "{.status.containerStatuses[0].state.terminated.finishedAt}"));
    ASSERT_TRUE(start.ok() && end.ok());
    ASSERT_GT(*end, *start);
    want["mt/" + pod] = {gpus, (*end - *start) / 1000};
  }
  // Rows written (every second, open hours included) until they hold both runs whole.
  std::map<std::pair<std::string, std::string>, Sum> got;
  auto complete = [&] {
    got = LedgerSums(ledger);
    for (const auto& [w, g] : want)
      if (!got.count({w, "nvidia.com/gpu"}) ||
          got[{w, "nvidia.com/gpu"}].request_raw !=
              arbiter::billing::i128{g.first} * 1000 * g.second * 1000)
        return false;
    return true;
  };
  for (int i = 0; i < 300 && !complete(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(complete()) << kube_fixture::ReadFile(LogFile("mt"));
  for (const auto& [w, g] : want) {
    SCOPED_TRACE(w);
    const int64_t secs = g.second;
    const int gpus = g.first;
    auto at = [&, w = w](const std::string& resource) { return got[{w, resource}]; };
    // cpu 1 core, memory 1 GiB, GPUs: quantities in core-, GiB- and GPU-seconds.
    EXPECT_EQ(at("cpu").quantity, Decimal::FromInt(secs));
    EXPECT_EQ(at("cpu").amount, Decimal::FromUnits(secs * 1000000));  // 0.001 / s
    EXPECT_EQ(at("memory").quantity, Decimal::FromInt(secs));
    EXPECT_EQ(at("memory").amount, Decimal::FromUnits(secs * 10000));  // 0.00001 / s
    EXPECT_EQ(at("nvidia.com/gpu").quantity, Decimal::FromInt(secs * gpus));
    EXPECT_EQ(at("nvidia.com/gpu").amount,
              Decimal::FromUnits(secs * gpus * 10000000));  // 0.01 / s
  }
  EXPECT_EQ(got.size(), 6u);  // nothing else in mt
  sched.Stop();
  Kubectl("delete namespace mt --wait=false");
  Kubectl("delete node mt-0 --wait=false");
  Kubectl("delete pricebook mt-prices");
}

}  // namespace kube_metering_test
