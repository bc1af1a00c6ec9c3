#include "adapters/kubeclient/informer.h"

#include <algorithm>
#include <chrono>

namespace arbiter::kubeclient {

void DeltaQueue::Push(Delta d) {
  {
    std::lock_guard<std::mutex> l(mu_);
    q_.push_back(std::move(d));
  }
  cv_.notify_one();
}

void DeltaQueue::Wake() {
  {
    std::lock_guard<std::mutex> l(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

std::vector<Delta> DeltaQueue::TakeAll(Millis wait) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, std::chrono::milliseconds(wait), [&] { return !q_.empty() || woken_; });
  woken_ = false;
  std::vector<Delta> out(std::make_move_iterator(q_.begin()), std::make_move_iterator(q_.end()));
  q_.clear();
  return out;
}

Informer::Informer(ResourceSpec spec, size_t index, KubeConfig config, DeltaQueue* out,
                   InformerOptions options)
    : spec_(std::move(spec)),
      index_(index),
      config_(std::move(config)),
      out_(out),
      options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  thread_ = std::thread([this] { Run(); });
}

// stop_ is set under client_mu_, which Run also holds when it checks stop_ and publishes its
// client: either Run sees stop_ and never publishes, or Stop sees the client and cuts it while
// Run still owns it (Run unpublishes it under the lock before the client is destroyed). It was
// set outside the lock: a List in progress at Stop returned, Run published its client, saw stop_,
// left with active_ pointing at the client it then destroyed, and the second Stop (~Informer)
// called into freed memory: a segfault at the exit of `arbiter scheduler` (issue 26).
void Informer::Stop() {
  {
    std::lock_guard<std::mutex> l(client_mu_);
    stop_ = true;
    if (active_) active_->Stop();
  }
  { std::lock_guard<std::mutex> l(sleep_mu_); }  // a Sleep between its check and its wait
  sleep_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Informer::Log(const std::string& m) const {
  if (options_.log) options_.log(spec_.kind + " informer: " + m);
}

bool Informer::Sleep(Millis ms) {
  std::unique_lock<std::mutex> l(sleep_mu_);
  sleep_cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return stop_.load(); });
  return !stop_;
}

namespace informer_detail {

// kube-apiserver cannot serve the list at the resourceVersion asked: 410 Gone (Expired: compacted,
// or a continue token too old), or "Too large resource version" (504, cause
// ResourceVersionTooLarge: a server whose cache is behind the version asked). client-go's
// reflector then lists again from etcd (resourceVersion unset), as here.
bool VersionUnavailable(int status, std::string_view body) {
  if (status == 410) return true;
  if (status != 504) return false;
  const Json j = Json::parse(body.begin(), body.end(), nullptr, false);
  if (!j.is_object() || !j.contains("details") || !j["details"].is_object()) return false;
  const Json& causes = j["details"].value("causes", Json::array());
  if (!causes.is_array()) return false;
  for (const Json& c : causes)
    if (c.is_object() && c.value("reason", "") == "ResourceVersionTooLarge") return true;
  return false;
}

}  // namespace informer_detail

bool Informer::List(ApiClient& c) {
  // The first list from kube-apiserver's watch cache (resourceVersion=0: any version, as
  // client-go's reflector lists first), not a quorum read of etcd; a relist (the watch's version
  // expired, a stream that did not decode) or a refusal of version 0 reads etcd (unset).
  const bool from_cache = lists_ == 0 && !quorum_;
  if (ListPages(c, from_cache ? "0" : "")) return true;
  if (!from_cache || !quorum_) return false;
  return ListPages(c, "");
}

bool Informer::ListPages(ApiClient& c, const std::string& version) {
  std::vector<Json> items;
  std::string cont;
  std::string rv;
  do {
    Params q = {{"limit", "500"}};
    if (!cont.empty()) {
      q.push_back({"continue", cont});  // the token holds the version: none may be given with it
    } else if (!version.empty()) {
      q.push_back({"resourceVersion", version});
    }
    auto r = c.Get(spec_.api_path, q);
    if (!r.ok()) {
      // The watch cache answers version 0 in one page, whatever the limit: one too large for the
      // client is read from etcd, page by page.
      const bool too_large = r.status().code() == StatusCode::kResourceExhausted;
      Log("list: " + r.message() +
          (too_large && !version.empty() ? "; listing again from etcd" : ""));
      if (too_large && !version.empty()) quorum_ = true;
      return false;
    }
    if (informer_detail::VersionUnavailable(r->status, r->body)) {
      Log("list: HTTP " + std::to_string(r->status) + ": " + StatusMessage(r->body) +
          "; listing again from etcd");
      quorum_ = true;
      return false;
    }
    if (r->status == 404) {  // the kind is not served (a CRD not installed yet)
      std::string hint;
      if (spec_.api_path.find("/apis/arbiter.dev/") == 0)
        hint = ": kubectl apply -f deploy/ installs Arbiter's CRDs";
      else if (spec_.api_path.find("/apis/scheduling.x-k8s.io/") == 0)
        hint = ": scheduler-plugins or deploy/podgroup-crd.yaml installs the PodGroup CRD";
      if (!not_served_)  // said once, not at every retry
        Log("list: " + spec_.api_path + " is not served (404" + hint +
            "); treated as empty, retried every 10 s");
      not_served_ = true;
      out_->Push(Delta{index_, Delta::Op::kSynced, Json(), {}});
      rv_.clear();
      return false;
    }
    if (r->status != 200) {
      Log("list: HTTP " + std::to_string(r->status) + ": " + StatusMessage(r->body));
      return false;
    }
    not_served_ = false;
    auto parsed = ParseListBody(r->body);
    if (!parsed.ok()) {
      Log("list: " + parsed.message());
      return false;
    }
    ListPage page = std::move(parsed).value();
    for (auto& item : page.items) {
      if (!item.contains("apiVersion")) item["apiVersion"] = spec_.api_version;
      if (!item.contains("kind")) item["kind"] = spec_.kind;
      items.push_back(std::move(item));
    }
    cont = page.continue_token;
    rv = page.resource_version;
  } while (!cont.empty() && !stop_);
  ++lists_;
  rv_ = rv;
  out_->Push(Delta{index_, Delta::Op::kSynced, Json(), std::move(items)});
  return true;
}

Informer::WatchEnd Informer::Watch(ApiClient& c) {
  Params q = {{"watch", "1"},
              {"allowWatchBookmarks", "true"},
              {"resourceVersion", rv_},
              {"timeoutSeconds", std::to_string(options_.watch_timeout_seconds)}};
  WatchDecoder decoder;
  bool relist = false;
  auto on_bytes = [&](std::string_view bytes) {
    decoder.Feed(bytes);
    while (auto e = decoder.Next()) {
      switch (e->type) {
        case WatchEvent::Type::kError:
          Log("watch: ERROR event " + std::to_string(e->error_code) + ": " +
              e->object.value("message", ""));
          relist = true;  // 410 Gone and any other error: list again
          return false;
        case WatchEvent::Type::kBookmark:
          break;
        case WatchEvent::Type::kAdded:
        case WatchEvent::Type::kModified:
        case WatchEvent::Type::kDeleted:
          if (!e->object.contains("apiVersion")) e->object["apiVersion"] = spec_.api_version;
          if (!e->object.contains("kind")) e->object["kind"] = spec_.kind;
          out_->Push(
              Delta{index_,
                    e->type == WatchEvent::Type::kDeleted ? Delta::Op::kDelete : Delta::Op::kUpsert,
                    std::move(e->object),
                    {}});
          break;
      }
      if (!e->resource_version.empty()) rv_ = e->resource_version;
    }
    if (!decoder.status().ok()) {
      Log("watch: " + decoder.status().message() + "; listing again");
      relist = true;
      return false;
    }
    return !stop_.load();
  };
  std::string error_body;
  ++watches_;
  auto r = c.Stream(spec_.api_path, q, (options_.watch_timeout_seconds + 30) * 1000LL, on_bytes,
                    &error_body);
  if (relist) return WatchEnd::kRelist;
  if (!r.ok()) {
    if (!stop_) Log(r.message() + "; reopening from resourceVersion " + rv_);
    return WatchEnd::kFailed;
  }
  if (*r == 410) return WatchEnd::kRelist;
  if (*r != 200) {
    Log("watch: HTTP " + std::to_string(*r) + ": " + StatusMessage(error_body));
    return WatchEnd::kRelist;
  }
  return WatchEnd::kReopen;
}

void Informer::Run() {
  Millis backoff = 200;
  bool need_list = true;
  while (!stop_) {
    auto client = ApiClient::Connect(config_);
    if (!client.ok()) {  // the config was checked at start: not expected
      Log(client.message());
      if (!Sleep(5000)) return;
      continue;
    }
    ApiClient& c = **client;
    if (need_list) {
      if (!List(c)) {
        if (!Sleep(rv_.empty() ? 10000 : backoff)) return;
        backoff = std::min<Millis>(backoff * 2, 5000);
        continue;
      }
      need_list = false;
      backoff = 200;
    }
    {
      std::lock_guard<std::mutex> l(client_mu_);
      if (stop_) break;
      active_ = &c;
    }
    const WatchEnd end = Watch(c);
    {
      std::lock_guard<std::mutex> l(client_mu_);
      active_ = nullptr;
    }
    if (end == WatchEnd::kRelist) need_list = true;
    if (end != WatchEnd::kReopen) {
      if (!Sleep(backoff)) return;
      backoff = std::min<Millis>(backoff * 2, 5000);
    } else {
      backoff = 200;
    }
  }
}

}  // namespace arbiter::kubeclient
