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
#include <vector>

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

// Answers pod lists as kube-apiserver does, recording each list's query: a first page at
// resourceVersion=0 from "the watch cache" (everything, one page), or 410 Gone / "Too large
// resource version" for it when `refuse_cache` says so; otherwise two pages of one pod each
// (continue token "c1"; a continue with a resourceVersion is refused with 400, as the real server
// does).
class PagingServer {
 public:
  PagingServer(const std::filesystem::path& dir, int refuse_cache)
      : server_((dir / "server.pem").c_str(), (dir / "server.key").c_str()) {
    server_.Get("/api/v1/pods", [this, refuse_cache](const httplib::Request& req,
                                                     httplib::Response& res) {
      if (req.has_param("watch")) {
        res.set_content("", "application/json");
        return;
      }
      const std::string rv = req.get_param_value("resourceVersion");
      const std::string cont = req.get_param_value("continue");
      {
        std::lock_guard<std::mutex> l(mu_);
        lists_.push_back("rv=" + rv + (req.has_param("resourceVersion") ? "" : "(unset)") +
                         " limit=" + req.get_param_value("limit") + " continue=" + cont);
      }
      auto page = [&](const std::string& names, const std::string& next) {
        std::string items;
        for (char n : names)
          items += std::string(items.empty() ? "" : ",") + R"({"metadata":{"name":"p)" + n +
                   R"(","namespace":"a"}})";
        res.set_content(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12",)"
                        R"("continue":")" +
                            next + R"("},"items":[)" + items + "]}",
                        "application/json");
      };
      if (!cont.empty() && req.has_param("resourceVersion")) {
        res.status = 400;
        res.set_content(R"({"kind":"Status","status":"Failure","message":"specifying resource )"
                        R"(version is not allowed when using continue","code":400})",
                        "application/json");
      } else if (rv == "0" && refuse_cache == 410) {
        res.status = 410;
        res.set_content(R"({"kind":"Status","status":"Failure","reason":"Expired",)"
                        R"("message":"too old resource version: 0","code":410})",
                        "application/json");
      } else if (rv == "0" && refuse_cache == 504) {
        res.status = 504;
        res.set_content(R"({"kind":"Status","status":"Failure","reason":"Timeout","message":)"
                        R"("Too large resource version: 0, current: 1","details":{"causes":[)"
                        R"({"reason":"ResourceVersionTooLarge","message":"Too large resource )"
                        R"(version"}],"retryAfterSeconds":1},"code":504})",
                        "application/json");
      } else if (rv == "0") {
        page("12", "");
      } else {
        cont.empty() ? page("1", "c1") : page("2", "");
      }
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~PagingServer() {
    server_.stop();
    thread_.join();
  }
  std::vector<std::string> lists() {
    std::lock_guard<std::mutex> l(mu_);
    return lists_;
  }
  int port() const { return port_; }

 private:
  httplib::SSLServer server_;
  std::mutex mu_;
  std::vector<std::string> lists_;
  int port_ = 0;
  std::thread thread_;
};

// The first list from the watch cache (resourceVersion=0), as client-go's reflector; when the
// server cannot serve it (410 Gone, or 504 "Too large resource version"), at once from etcd
// (resourceVersion unset), page by page, the continue requests without a resourceVersion.
TEST(KubeInformer, FirstListFromTheWatchCacheElseFromEtcdPageByPage) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-informer-rv-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(arbiter::testing::MakeTestPki(dir));
  for (int refuse : {0, 410, 504}) {
    SCOPED_TRACE("refuse " + std::to_string(refuse));
    PagingServer server(dir, refuse);
    KubeConfig k;
    k.server = "https://127.0.0.1:" + std::to_string(server.port());
    k.ca_pem = Slurp(dir / "ca.pem");
    DeltaQueue queue;
    Informer informer({"Pod", "/api/v1/pods", "v1"}, 0, k, &queue, {});
    informer.Start();
    std::vector<Delta> got;
    for (int i = 0; i < 100 && got.empty(); ++i) got = queue.TakeAll(100);
    informer.Stop();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].op, Delta::Op::kSynced);
    ASSERT_EQ(got[0].items.size(), 2u);
    EXPECT_EQ(got[0].items[0]["metadata"]["name"], "p1");
    EXPECT_EQ(got[0].items[1]["metadata"]["name"], "p2");
    const std::vector<std::string> want =
        refuse == 0
            ? std::vector<std::string>{"rv=0 limit=500 continue="}
            : std::vector<std::string>{"rv=0 limit=500 continue=", "rv=(unset) limit=500 continue=",
                                       "rv=(unset) limit=500 continue=c1"};
    EXPECT_EQ(server.lists(), want);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace kube_informer_test
}  // namespace arbiter::kubeclient
