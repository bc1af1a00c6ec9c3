// The informer's shutdown (src/adapters/kubeclient/informer.h) when Stop comes while a list is in
// flight, as it does when `arbiter scheduler` loses its Lease under load (issue 26: a leader
// exited with a segfault instead of its exit 1). The list must be held at the server until Stop
// has been called, which a real kube-apiserver cannot be made to do: an httplib TLS server plays
// that part (the informer's behaviour, not Kubernetes', is under test; the Kube* tests run the
// informers against kube-apiserver). Before the fix, the informer left a pointer to the client it
// destroyed, the second Stop (~Informer) called into it: a segfault here (heap-use-after-free
// under -DARBITER_SANITIZE=ON).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "adapters/kubeclient/informer.h"
#include "apps/test_pki.h"

namespace arbiter::kubeclient {
namespace kube_informer_test {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Answers the pod list only when released; counts lists and watches.
class HeldListServer {
 public:
  explicit HeldListServer(const std::filesystem::path& dir)
      : server_((dir / "server.pem").c_str(), (dir / "server.key").c_str()) {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.has_param("watch")) {
        ++watches_;
        res.status = 200;
        res.set_content("", "application/json");
        return;
      }
      std::unique_lock<std::mutex> l(mu_);
      ++lists_;
      cv_.notify_all();
      cv_.wait_for(l, std::chrono::seconds(20), [&] { return released_; });
      res.set_content(
          R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]})",
          "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~HeldListServer() {
    Release();
    server_.stop();
    thread_.join();
  }
  bool WaitForList() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(20), [&] { return lists_ > 0; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int port() const { return port_; }
  int watches() const { return watches_.load(); }

 private:
  httplib::SSLServer server_;
  std::mutex mu_;
  std::condition_variable cv_;
  int lists_ = 0;
  bool released_ = false;
  std::atomic<int> watches_{0};
  int port_ = 0;
  std::thread thread_;
};

// Stop while the first list is held: the list still comes in (delivered whole), no watch is
// opened after Stop, and stopping again (the destructor) is safe.
TEST(KubeInformer, StopDuringAListEndsCleanly) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-informer-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(arbiter::testing::MakeTestPki(dir));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    HeldListServer server(dir);
    KubeConfig k;
    k.server = "https://127.0.0.1:" + std::to_string(server.port());
    k.ca_pem = Slurp(dir / "ca.pem");
    DeltaQueue queue;
    {
      Informer informer({"Pod", "/api/v1/pods", "v1"}, 0, k, &queue, {});
      informer.Start();
      ASSERT_TRUE(server.WaitForList());
      std::thread stopper([&] { informer.Stop(); });  // waits for the held list
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      server.Release();
      stopper.join();
      EXPECT_EQ(informer.lists(), 1);
      EXPECT_EQ(informer.watches(), 0);
    }  // ~Informer: Stop again
    EXPECT_EQ(server.watches(), 0);
    const std::vector<Delta> got = queue.TakeAll(0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].op, Delta::Op::kSynced);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace kube_informer_test
}  // namespace arbiter::kubeclient
