#include "server/http/http_api.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <limits>
#include <random>
#include <tuple>

#include "adapters/json/member.h"
#include "adapters/kube/auth_review.h"
#include "adapters/kube/continue_token.h"
#include "adapters/kube/discovery.h"
#include "adapters/kube/generate_name.h"
#include "adapters/kube/limits.h"
#include "adapters/kube/openapi.h"
#include "adapters/kube/patch.h"
#include "adapters/kube/protobuf_body.h"
#include "adapters/kube/request_info.h"
#include "adapters/kube/request_options.h"
#include "adapters/kube/resources.h"
#include "adapters/kube/selector_reads.h"
#include "adapters/kube/selectors.h"
#include "adapters/kube/status.h"
#include "adapters/kube/table.h"
#include "adapters/kube/watch.h"
#include "adapters/yaml/go_field_types.h"
#include "server/http/api_auth.h"
#include "server/http/list_pages.h"
#include "server/http/request_log.h"
#include "server/metrics/metrics.h"
#include "server/metrics/process_metrics.h"
#include "server/state/api_status.h"
#include "server/state/pod_status.h"
#include "server/state/priority_admission.h"

namespace arbiter::server {

namespace {

using Clock = std::chrono::steady_clock;

// The body moved into the response (httplib 0.11's set_content copies it: every scrape of an
// 80 MB /metrics was copied once more).
void SetContent(httplib::Response& res, std::string body, const char* content_type) {
  res.body = std::move(body);
  res.headers.erase("Content-Type");
  res.set_header("Content-Type", content_type);
}

void SendJson(httplib::Response& res, int code, const Json& body,
              const std::string& content_type = "application/json") {
  res.status = code;
  SetContent(res, kube::WireJson(body), content_type.c_str());
}

void SendStatus(httplib::Response& res, const kube::KubeStatus& s) {
  SendJson(res, s.code, s.body);
}

// A request path split into what it names.
struct Target {
  std::string group, version;
  const kube::ResourceInfo* resource = nullptr;
  std::string namespace_, name, sub;
  std::string proxy_path;   // nodes/NAME/proxy/PATH: PATH ("metrics/cadvisor")
  bool watch_path = false;  // /api/v1/watch/... (the path above without "watch")
  enum class What { kNone, kApi, kApis, kGroup, kResourceList, kResource } what = What::kNone;
};

Target Parse(const std::string& path) {
  std::vector<std::string> s;  // the path's non-empty segments
  for (size_t at = 0; at < path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    if (end > at) s.emplace_back(path, at, end - at);
    at = end + 1;
  }
  Target t;
  size_t i = 0;
  if (s.empty()) return t;
  if (s[0] == "api") {
    if (s.size() == 1) {
      t.what = Target::What::kApi;
      return t;
    }
    t.version = s[1];
    i = 2;
  } else if (s[0] == "apis") {
    if (s.size() == 1) {
      t.what = Target::What::kApis;
      return t;
    }
    t.group = s[1];
    if (s.size() == 2) {
      t.what = Target::What::kGroup;
      return t;
    }
    t.version = s[2];
    i = 3;
  } else {
    return t;
  }
  std::vector<std::string> rest(s.begin() + static_cast<long>(i), s.end());
  if (!rest.empty() && rest[0] == "watch") {
    t.watch_path = true;
    rest.erase(rest.begin());
    if (rest.empty()) {
      t.what = Target::What::kResource;  // no resource: 404
      return t;
    }
  }
  if (rest.empty()) {
    t.what = Target::What::kResourceList;
    return t;
  }
  if (rest[0] == "namespaces" && rest.size() >= 3) {
    const kube::ResourceInfo* r = kube::FindResource(t.group, t.version, rest[2]);
    if (r && r->namespaced) {
      t.resource = r;
      t.namespace_ = rest[1];
      if (rest.size() > 3) t.name = rest[3];
      if (rest.size() > 4) t.sub = rest[4];
      if (rest.size() > 5) t.resource = nullptr;
      t.what = Target::What::kResource;
      return t;
    }
  }
  t.resource = kube::FindResource(t.group, t.version, rest[0]);
  if (rest.size() > 1) t.name = rest[1];
  if (rest.size() > 2) t.sub = rest[2];
  if (rest.size() > 3 && t.sub == "proxy") {
    for (size_t k = 3; k < rest.size(); ++k) t.proxy_path += (k > 3 ? "/" : "") + rest[k];
  } else if (rest.size() > 3) {
    t.resource = nullptr;
  }
  t.what = Target::What::kResource;
  return t;
}

std::string Param(const httplib::Request& req, const char* key) {
  return req.has_param(key) ? req.get_param_value(key) : "";
}

// A create's, update's or patch's query options as kube-apiserver checks them (dryRun,
// fieldManager, fieldValidation, force: request_options.h). False: refused, the answer sent.
bool ParseOptions(const httplib::Request& req, httplib::Response& res, kube::OptionsKind kind,
                  bool* dry_run) {
  if (auto bad = kube::CheckWriteOptions(req.params, kind, dry_run)) {
    SendStatus(res, *bad);
    return false;
  }
  return true;
}

// 64 random bits for metadata.generateName (not part of the journal: the name is).
uint64_t RandomBits() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

Millis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ------------------------------------------------------------------ reads

Json ListBody(const kube::ResourceInfo& r, std::vector<Json> items, int64_t rv) {
  return {{"kind", r.kind + "List"},
          {"apiVersion", r.ApiVersion()},
          {"metadata", {{"resourceVersion", std::to_string(rv)}}},
          {"items", std::move(items)}};
}

struct Selectors {
  kube::LabelSelector labels;
  kube::FieldSelector fields;
  json_sparse::Keep reads;  // what Matches reads of an object (kube::SelectorReads)
  bool Matches(const Json& o) const { return labels.MatchesObject(o) && fields.Matches(o); }
  // Matches of a stored object: one kept as text alone (a cold Pod) is matched on what the
  // selectors read of its text (`scratch` holds the text), not on its whole tree parsed again.
  bool MatchesStored(const StoredObject& o, std::string& scratch) const {
    if (labels.Empty() && fields.Empty()) return true;
    return server::MatchesStored(
        o, reads, [this](const Json& j) { return Matches(j); }, scratch);
  }
  // The node of a term spec.nodeName=NODE (nullptr: none), which picks from the store's index.
  const std::string* Node() const {
    for (const auto& f : fields.requirements)
      if (f.equals && f.field == "spec.nodeName" && !f.value.empty()) return &f.value;
    return nullptr;
  }
};

std::optional<Selectors> ParseSelectors(const httplib::Request& req, httplib::Response& res,
                                        const kube::ResourceInfo& r) {
  Selectors sel;
  auto l = kube::ParseLabelSelector(Param(req, "labelSelector"));
  if (!l.ok()) {
    SendStatus(res, kube::BadRequest(l.message()));
    return std::nullopt;
  }
  auto f = kube::ParseFieldSelector(Param(req, "fieldSelector"), r);
  if (!f.ok()) {
    SendStatus(res, kube::BadRequest(f.message()));
    return std::nullopt;
  }
  sel.labels = std::move(l).value();
  sel.fields = std::move(f).value();
  sel.reads = kube::SelectorReads(sel.labels, sel.fields);
  return sel;
}

void HandleWatch(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t,
                 const Selectors& sel, int min_timeout_s);

// ?limit: a count (0, negative or none: the whole list); anything else is a 400.
std::optional<size_t> ParseLimit(const httplib::Request& req, httplib::Response& res) {
  const std::string text = Param(req, "limit");
  if (text.empty()) return 0;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') {
    SendStatus(res, kube::BadRequest("invalid limit \"" + text + "\": must be an integer"));
    return std::nullopt;
  }
  return n > 0 ? static_cast<size_t>(n) : 0;
}

// The range a list request pages through, and its resourceVersion (list_pages.h): the current
// objects for a first page (or a token with resourceVersion -1), the kept range of the first
// page for a continue, or the current objects when none of the kind changed since; nullopt when
// the answer was sent (a bad token: 400; a snapshot that is gone: 410 with a token that
// continues from the current objects).
struct PickedRange {
  std::shared_ptr<const ListRange> range;
  int64_t rv = 0;
  size_t begin = 0;
};

std::optional<PickedRange> PickRange(Daemon& d, ListSnapshots& lists, const httplib::Request& req,
                                     httplib::Response& res, const kube::ResourceInfo& r,
                                     const std::string& ns, bool all_namespaces,
                                     const std::string* node) {
  PickedRange p;
  const auto current = [&] {
    auto range = std::make_shared<ListRange>();
    p.rv = d.Read([&](const Cluster& c) {
      *range = PickObjects(c.store(), r.kind, ns, node);
      return c.store().resource_version();
    });
    p.range = std::move(range);
  };
  const std::string token_text = Param(req, "continue");
  if (token_text.empty()) {
    current();
    // A resourceVersion the store has not reached: kube-apiserver's 504 (at once, where it waits
    // up to 3 s for it first). It was the list of now, 200. (Parsed by HandleList.)
    const uint64_t want = kube::ParseResourceVersion(Param(req, "resourceVersion")).value();
    if (want > static_cast<uint64_t>(p.rv)) {
      SendStatus(res, kube::TooLargeResourceVersion(want, p.rv));
      return std::nullopt;
    }
    return p;
  }
  auto token = kube::DecodeContinue(token_text);
  if (!token.ok()) {
    SendStatus(res, kube::BadRequest("invalid continue token: " + token.status().message()));
    return std::nullopt;
  }
  const std::string rv_param = Param(req, "resourceVersion");
  if (!rv_param.empty() && rv_param != "0") {
    SendStatus(res,
               kube::BadRequest("specifying resource version is not allowed when using continue"));
    return std::nullopt;
  }
  const int64_t want = token.value().resource_version;
  const int64_t now_ms = WallNow();
  if (want < 0) {
    current();
  } else if (auto kept = lists.Find(r.kind, ns, want, now_ms, node)) {
    p.range = std::move(kept);
    p.rv = want;
  } else {
    // No snapshot: the current objects are one only if none of the kind changed since `want`.
    // A token from the future (forged, or from before a restart that lost writes): kube-apiserver
    // cannot read at that revision either and answers its 504, not 410.
    auto range = std::make_shared<ListRange>();
    int64_t now_rv = 0;
    const bool same = d.Read([&](const Cluster& c) {
      now_rv = c.store().resource_version();
      if (c.store().kind_version(r.kind) > want || now_rv < want) return false;
      *range = PickObjects(c.store(), r.kind, ns, node);
      return true;
    });
    if (now_rv < want) {
      SendStatus(res, kube::TooLargeResourceVersion(want, now_rv));
      return std::nullopt;
    }
    if (!same) {
      kube::KubeStatus gone = kube::Expired(kube::kInconsistentContinue);
      gone.body["metadata"]["continue"] = kube::EncodeContinue({-1, token.value().start});
      SendStatus(res, gone);
      return std::nullopt;
    }
    p.range = std::move(range);
    p.rv = want;
  }
  p.begin = StartIndex(*p.range, token.value().start, all_namespaces);
  return p;
}

// The list's metadata: resourceVersion, and continue and remainingItemCount when more follow.
Json ListMetadata(const ListPage& page, int64_t rv) {
  Json m = {{"resourceVersion", std::to_string(rv)}};
  if (page.continue_key) m["continue"] = kube::EncodeContinue({rv, *page.continue_key});
  if (page.remaining) m["remainingItemCount"] = *page.remaining;
  return m;
}

// Room in a large body for the HTTP head, which the server puts in front of it in place
// (HttpServer's Queue) rather than copying the body into a larger buffer.
constexpr size_t kHeadRoom = 1024;

// The answer, written object by object from the stored ones into the body (keys in the order
// nlohmann writes them, so the bytes are those of dumping the whole list), in one pass over the
// objects (a second would read each again from memory). The buffer is sized up front from the
// first objects' sizes, with room to spare: a large body is mapped memory, whose pages cost
// nothing until written, and a body that outgrows it is only copied once more.
void SendListBody(httplib::Response& res, const kube::ResourceInfo& r, const ListPage& page,
                  const Json& metadata) {
  std::string tail = "],\"kind\":";
  kube::AppendWireJson(tail, r.kind + "List");
  tail += ",\"metadata\":";
  kube::AppendWireJson(tail, metadata);
  tail += '}';
  const size_t n = page.items.size(), sampled = std::min<size_t>(n, 16);
  size_t sample = 0;
  for (size_t i = 0; i < sampled; ++i) sample += page.items[i]->WireTextSize() + 1;
  std::string& out = res.body;
  out.clear();
  out.reserve(256 + tail.size() + (sampled ? sample * n / sampled * 3 / 2 : 0) + kHeadRoom);
  out += "{\"apiVersion\":";
  kube::AppendWireJson(out, r.ApiVersion());
  out += ",\"items\":[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    page.items[i]->AppendWireText(out);
  }
  out += tail;
  res.status = 200;
  res.set_header("Content-Type", "application/json");
}

void SendListTable(httplib::Response& res, const kube::ResourceInfo& r, const ListPage& page,
                   const Json& metadata, kube::IncludeObject include) {
  std::string& out = res.body;
  out.clear();
  const Millis now = WallNow();
  kube::TableOpen(out, r, metadata);
  // An object kept as text alone (a cold Pod) is written from its text, parsing only what its
  // printer reads; one that has its tree from the tree. The bytes are the same.
  // The body is sized from its first rows, as SendListBody's: grown by doubling, each list left
  // the allocator a trail of freed buffers of every size (RSS +54 MB over 20 Tables of 10k pods).
  std::string text;
  const size_t head = out.size(), n = page.items.size(), sampled = std::min<size_t>(n, 16);
  for (size_t i = 0; i < n; ++i) {
    if (i == sampled) out.reserve(head + (out.size() - head) / i * n * 3 / 2 + 16 + kHeadRoom);
    const StoredObject& o = *page.items[i];
    if (o.compacted()) {
      text.clear();
      o.AppendWireText(text);
      if (kube::TableRowFromText(out, r, text, now, include, i == 0)) continue;
    }
    kube::TableRow(out, r, *o.tree(), now, include, i == 0);
  }
  kube::TableClose(out);
  res.status = 200;
  res.set_header("Content-Type", "application/json");
}

void HandleList(Daemon& d, ListSnapshots& lists, const httplib::Request& req,
                httplib::Response& res, const Target& t, int min_timeout_s) {
  const kube::ResourceInfo& r = *t.resource;
  auto sel = ParseSelectors(req, res, r);
  if (!sel) return;
  if (auto bad = kube::CheckListOptions(req.params)) return SendStatus(res, *bad);
  const bool watch = kube::QueryBool(req.params, "watch");
  // kube-apiserver: a list answers the cache's BadRequest, a watch the bare storage error (500).
  if (auto rv = kube::ParseResourceVersion(Param(req, "resourceVersion")); !rv.ok())
    return SendStatus(
        res, watch ? kube::Failure(500, rv.status().message())
                   : kube::BadRequest("invalid resource version: " + rv.status().message()));
  if (watch) return HandleWatch(d, req, res, t, *sel, min_timeout_s);
  const auto limit = ParseLimit(req, res);
  if (!limit) return;
  const bool all_namespaces = r.namespaced && t.namespace_.empty();
  // Under the lock only the shared objects are picked; matching and serializing come after.
  const std::string* node = sel->Node();
  auto picked = PickRange(d, lists, req, res, r, t.namespace_, all_namespaces, node);
  if (!picked) return;
  const bool selects = !sel->labels.Empty() || !sel->fields.Empty();
  std::function<bool(const StoredObject&)> match;
  std::string scratch;
  if (selects) match = [&](const StoredObject& o) { return sel->MatchesStored(o, scratch); };
  const ListPage page = PageOf(*picked->range, picked->begin, *limit, match, all_namespaces);
  if (page.continue_key)
    lists.Put(r.kind, t.namespace_, picked->rv, picked->range, WallNow(), node);
  const Json metadata = ListMetadata(page, picked->rv);
  if (kube::WantsTable(req.get_header_value("Accept")))
    return SendListTable(res, r, page, metadata,
                         kube::ParseIncludeObject(Param(req, "includeObject")));
  SendListBody(res, r, page, metadata);
}

// A GET at a resourceVersion, as kube-apiserver's storage reads it: a bad one is its bare 500, one
// the store has not reached its 504 (at once; kube-apiserver first waits up to 3 s for it). It
// was ignored: the object of now, 200.
void HandleGet(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  const std::string ns = r.namespaced ? t.namespace_ : "";
  const auto want = kube::ParseResourceVersion(Param(req, "resourceVersion"));
  if (!want.ok()) return SendStatus(res, kube::Failure(500, want.status().message()));
  int64_t now_rv = 0;
  const std::shared_ptr<const Json> obj = d.Read([&](const Cluster& c) {
    now_rv = c.store().resource_version();
    return c.store().Share(r.kind, ns, t.name);
  });
  if (*want > static_cast<uint64_t>(now_rv))
    return SendStatus(res, kube::TooLargeResourceVersion(*want, now_rv));
  if (!obj) return SendStatus(res, kube::NotFound(kube::ResourceName::Of(r), t.name));
  if (kube::WantsTable(req.get_header_value("Accept")))
    return SendJson(res, 200,
                    kube::MakeTable(r, std::vector<Json>{*obj}, WallNow(),
                                    kube::ParseIncludeObject(Param(req, "includeObject"))));
  SendJson(res, 200, *obj);
}

// pods/log, pods/exec, pods/attach and pods/portforward: the pods of `arbiter serve` run on
// virtual nodes, so there is no container to read or enter. A pod that exists gets a 400
// Status saying so (kubectl prints it: "Error from server (BadRequest): pods are virtual in
// this mode ..."), one that does not the usual NotFound.
bool IsContainerSubresource(const std::string& sub) {
  return sub == "log" || sub == "exec" || sub == "attach" || sub == "portforward";
}

void HandleContainerSubresource(Daemon& d, httplib::Response& res, const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  const bool exists = d.Read([&](const Cluster& c) {
    return c.store().Share(r.kind, t.namespace_, t.name);
  }) != nullptr;
  if (!exists) return SendStatus(res, kube::NotFound(kube::ResourceName::Of(r), t.name));
  const std::string what = t.sub == "log"      ? "no container output to read"
                           : t.sub == "exec"   ? "no container to run a command in"
                           : t.sub == "attach" ? "no container to attach to"
                                               : "no container to forward ports to";
  SendStatus(
      res, kube::BadRequest("pods are virtual in this mode: pod " + t.namespace_ + "/" + t.name +
                            " has " + what +
                            " (arbiter serve schedules, preempts and meters pods on virtual nodes; "
                            "nothing runs them). Its status and events say what it did: kubectl "
                            "describe pod " +
                            t.name + " -n " + t.namespace_));
}

// GET nodes/NAME/proxy/metrics/cadvisor and .../metrics/dcgm: the virtual node's own metrics
// endpoints (metrics.h), as a Prometheus scrapes a real node's through kube-apiserver's proxy. Only
// the copy of the node's workloads is taken under the lock.
void HandleNodeMetrics(Daemon& d, httplib::Response& res, const Target& t) {
  const std::optional<NodeMetrics> which =
      t.proxy_path == "metrics/cadvisor" ? std::optional(NodeMetrics::kCadvisor)
      : t.proxy_path == "metrics/dcgm"   ? std::optional(NodeMetrics::kDcgm)
                                         : std::nullopt;
  if (!which) return SendStatus(res, kube::PathNotFound());
  const Millis now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  std::optional<MetricsFacts> facts = d.Read([&](const Cluster& c) -> std::optional<MetricsFacts> {
    if (!c.store().Share(t.resource->kind, "", t.name)) return std::nullopt;
    return CollectNodeMetrics(c, t.name, std::max(now, c.now()));
  });
  if (!facts) return SendStatus(res, kube::NotFound(kube::ResourceName::Of(*t.resource), t.name));
  SetContent(res, RenderNodeMetrics(*facts, *which), "text/plain; version=0.0.4");
}

// Watch: chunked JSON lines {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}.
// resourceVersion "" or "0": the current objects first (ADDED), then changes. The handler only
// builds the first lines; the server's event loop sends the changes (http_server.h: a watch costs
// a buffer, not a thread). timeoutSeconds: kube-apiserver's --min-request-timeout semantics
// (none: a random time in [min, 2 min]), at most 2 min; negative: the watch is over before it
// starts, 200 with only kube-apiserver's ERROR event `context deadline exceeded` (it sends that
// or nothing, as its timer and the watch race), no objects (it used to last the random time).
// A watch's first answer, the ADDED event of each object of `range` that passes the selectors,
// then `tail`, made a batch at a time as the connection drains (WatchStream::initial_more): the
// range shares the store's objects as they were at the pick, so a watcher that never reads holds
// a window of bytes, not a copy of the list (a hostile-tenant trial held 1 GB with 100 unread
// watches of one namespace). Each line is written from the stored object's text (the bytes of
// dumping the event); the tree (parsed again if the store keeps the object as text) only for
// tables, which then match selectors on it too; without one a selector reads only its members of
// a cold pod's text.
std::function<bool(std::string&)> InitialEvents(ListRange range, const Selectors& sel, bool selects,
                                                bool table, std::function<Json(const Json&)> shape,
                                                std::string tail) {
  constexpr size_t kBatchBytes = 64u << 10;
  constexpr size_t kBatchObjects = 256;
  auto shared = std::make_shared<const ListRange>(std::move(range));
  return [shared, sel, selects, table, shape = std::move(shape), tail = std::move(tail),
          next = size_t{0}, scratch = std::string()](std::string& out) mutable {
    const ListRange& objects = *shared;
    for (size_t n = 0; next < objects.size() && n < kBatchObjects && out.size() < kBatchBytes;
         ++next, ++n) {
      const StoredRef& o = objects[next];
      if (table) {
        const std::shared_ptr<const Json> tree = o.json_ptr();
        if (selects && !sel.Matches(*tree)) continue;
        out += "{\"object\":";
        kube::AppendWireJson(out, shape(*tree));
      } else {
        if (selects && !sel.MatchesStored(o.stored(), scratch)) continue;
        out += "{\"object\":";
        o.stored().AppendWireText(out);
      }
      out += ",\"type\":\"ADDED\"}\n";
    }
    if (next < objects.size()) return true;
    out += tail;
    tail.clear();
    return false;
  };
}

// Where a watch starts (w.after_rv) and what it sends first (w.initial): false when it is
// answered instead (a resourceVersion ahead of the store).
bool StartWatch(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t,
                const Selectors& sel, bool selects, bool table, bool bookmarks,
                const std::function<Json(const Json&)>& shape, WatchStream& w) {
  const kube::ResourceInfo& r = *t.resource;
  const std::string rv_param = Param(req, "resourceVersion");
  // A watch list (sendInitialEvents, with resourceVersionMatch=NotOlderThan: CheckListOptions):
  // true sends the current objects whatever the resourceVersion, then (with bookmarks) the
  // bookmark annotated k8s.io/initial-events-end; false sends none, only the changes after the
  // resourceVersion (after now for "" or "0"), as kube-apiserver's watch cache does.
  const bool from_now = rv_param.empty() || rv_param == "0";
  const bool initial_param = req.has_param("sendInitialEvents");
  const bool send_initial = kube::QueryBool(req.params, "sendInitialEvents");
  if (initial_param && !send_initial && from_now) {
    w.after_rv = d.Read([](const Cluster& c) { return c.store().resource_version(); });
  } else if (initial_param ? send_initial : from_now) {
    ListRange current;  // picked as a list's are (PickObjects)
    w.after_rv = d.Read([&](const Cluster& c) {
      current = PickObjects(c.store(), r.kind, t.namespace_, sel.Node());
      return c.store().resource_version();
    });
    std::string tail;
    if (send_initial && bookmarks)
      tail = kube::WireJson(kube::BookmarkEvent(r, w.after_rv, true)) + "\n";
    w.initial_more = InitialEvents(std::move(current), sel, selects, table, shape, std::move(tail));
  } else {
    const uint64_t rv = kube::ParseResourceVersion(rv_param).value();  // checked by HandleList
    w.after_rv = static_cast<int64_t>(std::min<uint64_t>(rv, std::numeric_limits<int64_t>::max()));
    // Ahead of the store: refused as a list is (kube's cacher gives up waiting for it), not
    // silently skipping every change up to it.
    const int64_t now_rv = d.Read([](const Cluster& c) { return c.store().resource_version(); });
    if (w.after_rv > now_rv)
      return SendStatus(res, kube::TooLargeResourceVersion(w.after_rv, now_rv)), false;
  }
  return true;
}

void HandleWatch(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t,
                 const Selectors& sel, int min_timeout_s) {
  const kube::ResourceInfo& r = *t.resource;
  const bool bookmarks = kube::QueryBool(req.params, "allowWatchBookmarks");
  const int64_t max_timeout = 2 * static_cast<int64_t>(min_timeout_s);
  int64_t timeout = min_timeout_s + static_cast<int64_t>(RandomBits() % (min_timeout_s + 1u));
  const int64_t asked = std::atoll(Param(req, "timeoutSeconds").c_str());  // CheckListOptions
  if (asked > 0) timeout = std::min(asked, max_timeout);  // 0 or none: kube-apiserver's random
  if (asked < 0) {
    res.status = 200;
    res.set_content(
        Json{{"type", "ERROR"}, {"object", kube::WatchDeadlineExceeded().body}}.dump() + "\n",
        "application/json;stream=watch");
    return;
  }
  const bool table = kube::WantsTable(req.get_header_value("Accept"));
  const kube::IncludeObject include = kube::ParseIncludeObject(Param(req, "includeObject"));
  const kube::ResourceInfo* rp = t.resource;
  // A watch asked as Table sends each object as a one-row Table (as kube-apiserver does).
  auto shape = [table, include, rp](const Json& o) {
    return table ? kube::MakeTable(*rp, std::vector<Json>{o}, WallNow(), include) : o;
  };
  WatchStream w;
  w.content_type = "application/json;stream=watch";
  w.kind = r.kind;
  w.namespace_ = t.namespace_;
  const bool selects = !sel.labels.Empty() || !sel.fields.Empty();
  if (!StartWatch(d, req, res, t, sel, selects, table, bookmarks, shape, w)) return;
  w.end = Clock::now() + std::chrono::seconds(timeout);
  // A plain watch is sent each change's line as made once for all plain watches (the loop's);
  // `append` serves the others.
  w.plain = !selects && !table;
  w.append = [sel, shape, table](const WatchLog::Entry& entry, std::string& out) {
    const WatchEvent& e = entry.event;
    const std::shared_ptr<const Json> tree = e.object.tree();
    if (!sel.Matches(*tree)) return;
    if (table)
      out += Json{{"type", e.type}, {"object", shape(*tree)}}.dump() + "\n";
    else
      entry.AppendLine(out);
  };
  if (bookmarks)
    w.bookmark = [kind = r.kind, api_version = r.ApiVersion()](int64_t rv) {
      return Json{{"type", "BOOKMARK"},
                  {"object",
                   {{"kind", kind},
                    {"apiVersion", api_version},
                    {"metadata", {{"resourceVersion", std::to_string(rv)}}}}}}
                 .dump() +
             "\n";
    };
  w.too_old = [](int64_t rv) {
    return Json{{"type", "ERROR"}, {"object", kube::TooOldResourceVersion(rv, 0).body}}.dump() +
           "\n";
  };
  res.status = 200;
  if (!HttpServer::ServeWatch(std::move(w)))
    SendStatus(res, kube::InternalError("a watch outside the server's handlers"));
}

// ------------------------------------------------------------------ writes

void Answer(httplib::Response& res, MutationResult r, int code, const kube::ResourceInfo& ri,
            const std::string& ns, const std::string& name) {
  if (!r.ok()) return SendStatus(res, ToKube(*r.error, ri, ns, name));
  for (const auto& w : r.warnings) {
    std::string text = w;
    for (char& c : text)
      if (c == '"' || c == '\n') c = '\'';
    res.set_header("Warning", "299 - \"" + text + "\"");
  }
  if (r.object.is_null() && r.stored_object) {  // Daemon::Mutate(m, false): the stored text
    res.status = code;
    SetContent(res, r.text.empty() ? r.stored_object->WireText() : std::move(r.text),
               "application/json");
    return;
  }
  SendJson(res, code, r.object);
}

kube::KubeStatus UnsupportedBody(const std::string& type) {
  return kube::UnsupportedMediaType(
      type, {"application/json", "application/yaml",
             std::string(kube::kProtobufMediaType) + " for " + kube::ProtobufKinds()});
}

// Bodies are JSON, YAML (kube::ParseYamlBody: bounded), or protobuf for the kinds kubectl's
// typed generators send that way (`create namespace|quota|priorityclass|pdb|job`, `debug
// --copy-to`; kube::DecodeProtobufBody). Other types get kube-apiserver's 415 for an unknown format
// (docs/kube-api.md).
std::optional<Json> Body(const httplib::Request& req, httplib::Response& res) {
  // Go's mime.ParseMediaType (kube-apiserver's): case-insensitive, its parameters well formed.
  const std::optional<std::string> media = kube::MediaTypeOf(req.get_header_value("Content-Type"));
  if (!media) {
    SendStatus(res, UnsupportedBody(req.get_header_value("Content-Type")));
    return std::nullopt;
  }
  const std::string& type = *media;
  if (type == kube::kProtobufMediaType) {
    kube::ProtobufBody pb = kube::DecodeProtobufBody(req.body);
    if (pb.ok()) return std::move(pb.object);
    kube::KubeStatus s = pb.error == kube::ProtobufBody::Error::kMalformed
                             ? kube::BadRequest(pb.message)
                             : UnsupportedBody(type);
    if (pb.error == kube::ProtobufBody::Error::kUnsupportedKind)
      s.body["message"] = s.Message() + " (" + pb.message + ")";
    SendStatus(res, s);
    return std::nullopt;
  }
  if (type == "application/yaml") {  // kube-apiserver's 400 words for a body it cannot decode
    auto yaml = kube::ParseYamlBody(req.body);
    if (yaml.ok()) return std::move(yaml).value();
    SendStatus(res, kube::BadRequest(yaml.message()));
    return std::nullopt;
  }
  if (!type.empty() && type != "application/json" && type != "*/*") {
    SendStatus(res, UnsupportedBody(type));
    return std::nullopt;
  }
  try {
    return Json::parse(req.body);
  } catch (const std::exception& e) {
    SendStatus(res, kube::BadRequest(std::string("the request body is not JSON: ") + e.what()));
    return std::nullopt;
  }
}

// A string member of an object, "" when absent or of another type (client input).
using json_member::StringMember;

std::string NameOf(const Json& obj) {
  return obj.is_object() && obj.contains("metadata") ? StringMember(obj["metadata"], "name") : "";
}

// Kubernetes' Priority admission on a pod's create (server/state/priority_admission.h): a
// spec.priority other than the class's is 403. nullopt: admitted.
std::optional<kube::KubeStatus> AdmitPriority(Daemon& d, const kube::ResourceInfo& r,
                                              const Json& pod) {
  const auto spec = pod.is_object() ? pod.find("spec") : pod.end();
  if (spec == pod.end() || !spec->is_object() || !spec->contains("priority")) return std::nullopt;
  const std::vector<std::shared_ptr<const Json>> classes =
      d.Read([](const Cluster& c) { return c.store().ListShared("PriorityClass", ""); });
  if (auto refusal = PriorityAdmissionRefusal(pod, classes))
    return kube::Forbidden(kube::ResourceName::Of(r), NameOf(pod), *refusal);
  return std::nullopt;
}

// What the API checks of an object before the daemon sees it: the metadata limits (limits.h)
// and, on a pod's create, the Priority admission. False: refused, the answer sent.
bool Admit(Daemon& d, httplib::Response& res, const kube::ResourceInfo& r, bool create,
           const Json& obj) {
  // kube-apiserver's decoder: a field of another JSON type than its Go type's is 400 (before
  // anything else is judged), never stored (yaml/go_field_types.h).
  if (auto undecodable = yaml::DecodeErrorMessage(obj, r.kind, r.version)) {
    SendStatus(res, kube::BadRequest(*undecodable));
    return false;
  }
  if (auto causes = kube::ValidateLabelsAndAnnotations(obj); !causes.empty()) {
    SendStatus(res, kube::Invalid(r, NameOf(obj), causes));
    return false;
  }
  if (create && r.id == KindId::kPod)
    if (auto refused = AdmitPriority(d, r, obj)) {
      SendStatus(res, *refused);
      return false;
    }
  return true;
}

void HandleWrite(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t,
                 Mutation::Op op) {
  const kube::ResourceInfo& r = *t.resource;
  bool dry_run = false;  // the options are read before the body, as kube-apiserver does
  if (!ParseOptions(
          req, res,
          op == Mutation::Op::kCreate ? kube::OptionsKind::kCreate : kube::OptionsKind::kUpdate,
          &dry_run))
    return;
  auto body = Body(req, res);
  if (!body) return;
  if (!body->is_object())
    return SendStatus(res, kube::BadRequest("the request body is not an object"));
  if (!body->contains("kind")) (*body)["kind"] = r.kind;
  if (!body->contains("apiVersion")) (*body)["apiVersion"] = r.ApiVersion();
  if ((*body)["kind"] != r.kind)
    return SendStatus(res, kube::BadRequest("the object's kind " + body->value("kind", "") +
                                            " is not " + r.kind));
  if (!Admit(d, res, r, op == Mutation::Op::kCreate, *body)) return;
  Mutation m;
  m.op = op;
  m.kind = r.kind;
  m.namespace_ = r.namespaced ? t.namespace_ : "";
  m.name = t.name;
  m.dry_run = dry_run;
  Json& meta = (*body)["metadata"];
  // metadata.generateName: a name is made here (so the journal records it), again on a collision.
  const bool generate = op == Mutation::Op::kCreate && meta.is_object() &&
                        meta.value("name", "").empty() && meta.contains("generateName") &&
                        meta["generateName"].is_string() &&
                        !meta["generateName"].get<std::string>().empty();
  for (int attempt = 0;; ++attempt) {
    if (generate)
      meta["name"] = kube::GenerateName(meta["generateName"].get<std::string>(), RandomBits());
    const std::string name =
        op == Mutation::Op::kCreate && meta.is_object() ? meta.value("name", "") : t.name;
    Mutation attempt_m = m;
    attempt_m.object = generate ? *body : std::move(*body);  // (without a generated name: once)
    MutationResult result = d.Mutate(std::move(attempt_m), /*copy_object=*/false);
    if (generate && !result.ok() && result.error->reason == ApiError::Reason::kAlreadyExists &&
        result.error->kind == r.kind && attempt < 7)
      continue;
    return Answer(res, std::move(result), op == Mutation::Op::kCreate ? 201 : 200, r, t.namespace_,
                  name);
  }
}

void HandlePatch(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  auto type = kube::PatchTypeFromContentType(req.get_header_value("Content-Type"));
  std::vector<std::string> accepted;
  for (auto pt : kube::AcceptedPatchTypes(r)) accepted.push_back(kube::ContentTypeOf(pt));
  if (!type || !kube::Accepts(r, *type))
    return SendStatus(res,
                      kube::UnsupportedMediaType(req.get_header_value("Content-Type"), accepted));
  bool dry_run = false;
  if (!ParseOptions(
          req, res,
          *type == kube::PatchType::kApply ? kube::OptionsKind::kApply : kube::OptionsKind::kPatch,
          &dry_run))
    return;
  const std::string ns = r.namespaced ? t.namespace_ : "";
  const bool precondition = req.body.find("resourceVersion") != std::string::npos;
  // Server-side apply owns fields per manager: kubectl --server-side sends fieldManager=kubectl,
  // then (on an object made by client-side apply) the last-applied annotation alone as
  // kubectl-last-applied. `force` is accepted; no conflicts are detected (docs/kube-api.md).
  kube::ApplyOptions apply;
  if (*type == kube::PatchType::kApply) apply.field_manager = Param(req, "fieldManager");
  for (int attempt = 0;; ++attempt) {
    const std::shared_ptr<const Json> stored =
        d.Read([&](const Cluster& c) { return c.store().Share(r.kind, ns, t.name); });
    std::optional<Json> live = stored ? std::optional<Json>(*stored) : std::nullopt;
    if (!live && *type != kube::PatchType::kApply)
      return SendStatus(res, kube::NotFound(kube::ResourceName::Of(r), t.name));
    auto merged = kube::ApplyPatch(*type, live ? &*live : nullptr, req.body, r, apply);
    if (!merged.ok()) {
      if (merged.code() == StatusCode::kResourceExhausted)  // a JSON Patch past its bounds
        return SendStatus(res, kube::RequestEntityTooLarge(merged.message()));
      if (merged.code() == StatusCode::kConflict)
        return SendStatus(
            res,
            kube::Invalid(r, t.name, {kube::Cause{"FieldValueInvalid", merged.message(), ""}}));
      return SendStatus(res, kube::BadRequest(merged.message()));
    }
    Json obj = std::move(merged).value();
    // A patch adds to what is stored: the result is bounded as a body is.
    if (kube::NestsDeeperThan(obj, kube::kMaxNesting)) return SendStatus(res, kube::BodyTooDeep());
    if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = Json::object();
    // kube-apiserver's checkName on the patched object: a patch that drops the name (a merge
    // patch {"metadata": null}) is refused, not given the URL's name back.
    const Json& patched = obj["metadata"].contains("name") ? obj["metadata"]["name"] : Json();
    const std::string patched_name = patched.is_string() ? patched.get<std::string>() : "";
    if (patched_name != t.name)
      return SendStatus(res,
                        kube::BadRequest("the name of the object (" + patched_name +
                                         ") does not match the name on the URL (" + t.name + ")"));
    if (!Admit(d, res, r, !live, obj)) return;
    Mutation m;
    m.op = live ? Mutation::Op::kUpdate : Mutation::Op::kCreate;
    m.kind = r.kind;
    m.namespace_ = ns;
    m.name = t.name;
    m.object = std::move(obj);
    m.dry_run = dry_run;
    MutationResult result = d.Mutate(std::move(m));
    const bool raced = !result.ok() && (result.error->reason == ApiError::Reason::kConflict ||
                                        result.error->reason == ApiError::Reason::kAlreadyExists ||
                                        result.error->reason == ApiError::Reason::kNotFound);
    if (raced && !precondition && attempt < 5) continue;
    return Answer(res, std::move(result), live ? 200 : 201, r, t.namespace_, t.name);
  }
}

// A DELETE's options (request_options.h: the body's, else the query's) on its mutation: the
// grace period in ms (a negative one is 1 s, as kube-apiserver's BeforeDelete makes it), the
// propagation, the dry run and the preconditions. False: refused, the answer sent.
bool ParseDeleteOptions(const httplib::Request& req, httplib::Response& res, bool eviction,
                        Mutation* m) {
  kube::DeleteOptions o;
  // A protobuf body (client-go's typed clients) is decoded to its JSON form, then read as JSON is:
  // a DeleteOptions, or an Eviction with its deleteOptions. It used to be ignored (a uid
  // precondition never held the delete back).
  const bool protobuf = kube::MediaTypeOf(req.get_header_value("Content-Type")).value_or("") ==
                        kube::kProtobufMediaType;
  std::string decoded;
  if (protobuf && !req.body.empty()) {
    kube::ProtobufBody pb =
        eviction ? kube::DecodeProtobufBody(req.body) : kube::DecodeProtobufDeleteOptions(req.body);
    if (!pb.ok()) {
      SendStatus(res, kube::BadRequest(pb.message));
      return false;
    }
    decoded = pb.object.dump();
  }
  const std::string_view body = protobuf ? std::string_view(decoded) : std::string_view(req.body);
  if (auto bad = kube::DecodeDeleteOptions(req.params, body, eviction, &o)) {
    SendStatus(res, *bad);
    return false;
  }
  if (const auto g = o.grace_period_seconds)
    m->grace_period =
        (*g < 0 ? 1 : std::min(*g, std::numeric_limits<int64_t>::max() / 1000)) * 1000;
  m->propagation = o.Propagation();
  m->dry_run = m->dry_run || o.DryRun();
  m->precondition_uid = o.precondition_uid;
  m->precondition_rv = o.precondition_resource_version;
  return true;
}

// kube-apiserver's warning on a batch/v1 Job deleted without a propagation policy.
constexpr char kJobOrphanWarning[] =
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning";

void HandleDelete(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.kind = r.kind;
  m.namespace_ = r.namespaced ? t.namespace_ : "";
  m.name = t.name;
  if (!ParseDeleteOptions(req, res, false, &m)) return;
  const bool warn = r.id == KindId::kJob && m.propagation.empty();
  if (warn) m.propagation = "Orphan";  // batch/v1's default (journaled as such)
  MutationResult result = d.Mutate(std::move(m));
  if (warn) result.warnings.push_back(kJobOrphanWarning);
  Answer(res, std::move(result), 200, r, t.namespace_, t.name);
}

// deletecollection (DELETE on a collection, with labelSelector / fieldSelector): each object the
// selectors match is deleted as its own DELETE would be (a journal record each); the answer is
// the list of the deleted objects' last states. Namespaces have no deletecollection.
void HandleDeleteCollection(Daemon& d, const httplib::Request& req, httplib::Response& res,
                            const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  if (r.id == KindId::kNamespace) return SendStatus(res, kube::MethodNotAllowed());
  auto sel = ParseSelectors(req, res, r);
  if (!sel) return;
  Mutation options;  // each object's delete, the preconditions included (kube-apiserver's
                     // DeleteCollection deletes each as its DELETE would: one that fails them
                     // is its 409 Conflict, and the deletion stops there)
  options.op = Mutation::Op::kDelete;
  options.kind = r.kind;
  if (!ParseDeleteOptions(req, res, false, &options)) return;
  if (r.id == KindId::kJob && options.propagation.empty()) options.propagation = "Orphan";
  std::vector<std::pair<std::string, std::string>> keys;
  // Picked under the lock as a list's are, matched after it (the objects as they were at the pick).
  const ListRange picked = d.Read(
      [&](const Cluster& c) { return PickObjects(c.store(), r.kind, t.namespace_, sel->Node()); });
  std::string scratch;
  for (size_t i = 0; i < picked.size(); ++i)
    if (sel->MatchesStored(picked[i].stored(), scratch)) keys.push_back(picked.key(i));
  std::vector<Json> items;
  for (const auto& [ns, name] : keys) {
    Mutation m = options;
    m.namespace_ = ns;
    m.name = name;
    MutationResult result = d.Mutate(std::move(m));
    if (!result.ok() && (result.error->reason == ApiError::Reason::kNotFound ||
                         result.error->reason == ApiError::Reason::kNamespaceNotFound))
      continue;  // raced
    if (!result.ok()) return SendStatus(res, ToKube(*result.error, r, ns, name));
    items.push_back(std::move(result.object));
  }
  const int64_t rv = d.Read([](const Cluster& c) { return c.store().resource_version(); });
  SendJson(res, 200, ListBody(r, std::move(items), rv));
}

// An Eviction's kind, name and namespace as kube-apiserver checks them (its decoder, its create
// handler, the eviction's own check), in its words. Before, another kind or namespace evicted the
// URL's pod all the same, and a name that was not a string was a 500.
std::optional<kube::KubeStatus> CheckEviction(const Json& body, const std::string& ns,
                                              const std::string& name) {
  if (!body.is_object()) return std::nullopt;  // the deleteOptions decoder's 400
  const std::string lead = "Eviction in version \"v1\" cannot be handled as a Eviction: ";
  const std::string kind = StringMember(body, "kind");
  if (!kind.empty() && kind != "Eviction") {
    std::string version = StringMember(body, "apiVersion");
    version = version.substr(version.find('/') + 1);
    return kube::BadRequest(kind + " in version \"" + version +
                            "\" cannot be handled as a Eviction: converting (" + version + "." +
                            kind + ") to (policy.Eviction): unknown conversion");
  }
  const auto meta = body.find("metadata");
  if (meta == body.end() || meta->is_null()) return std::nullopt;
  if (!meta->is_object())
    return kube::BadRequest(lead + "json: cannot unmarshal " + kube::GoValueWord(*meta) +
                            " into Go struct field Eviction.metadata of type v1.ObjectMeta");
  for (const char* field : {"name", "namespace"})
    if (auto it = meta->find(field); it != meta->end() && !it->is_null() && !it->is_string())
      return kube::BadRequest(lead + "json: cannot unmarshal " + kube::GoValueWord(*it) +
                              " into Go struct field ObjectMeta.metadata." + field +
                              " of type string");
  if (!StringMember(*meta, "namespace").empty() && StringMember(*meta, "namespace") != ns)
    return kube::BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  if (!StringMember(*meta, "name").empty() && StringMember(*meta, "name") != name)
    return kube::BadRequest("name in URL does not match name in Eviction object");
  return std::nullopt;
}

// pods/eviction (policy/v1 Eviction): the pod is deleted with the eviction's grace period if its
// PodDisruptionBudget allows (Cluster::Evict; 429 TooManyRequests otherwise).
void HandleEvict(Daemon& d, const httplib::Request& req, httplib::Response& res, const Target& t) {
  const kube::ResourceInfo& r = *t.resource;
  bool dry_run = false;  // an eviction is a create: CreateOptions in the query
  if (!ParseOptions(req, res, kube::OptionsKind::kCreate, &dry_run)) return;
  if (!req.body.empty()) {
    auto body = Body(req, res);
    if (!body) return;
    if (auto bad = CheckEviction(*body, t.namespace_, t.name)) return SendStatus(res, *bad);
  }
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.eviction = true;
  m.dry_run = dry_run;
  m.kind = r.kind;
  m.namespace_ = t.namespace_;
  m.name = t.name;
  if (!ParseDeleteOptions(req, res, true, &m)) return;  // the Eviction's deleteOptions
  m.propagation.clear();
  MutationResult result = d.Mutate(std::move(m));
  if (!result.ok()) return SendStatus(res, ToKube(*result.error, r, t.namespace_, t.name));
  SendJson(res, 201,
           kube::SuccessStatus(kube::ResourceName::Of(r), t.name,
                               result.object["metadata"].value("uid", "")));
}

// What every API request is checked for before it is parsed or routed: text that is valid UTF-8
// (the path, the query, a body that is not protobuf), and a JSON body that nests at most
// kube::kMaxNesting levels — counted on the text, before any recursion. YAML bodies (apply) are
// bounded by ParseBody (patch.h). nullopt: go on.
std::optional<kube::KubeStatus> CheckInput(const httplib::Request& req) {
  if (!kube::IsValidUtf8(req.path)) return kube::BadRequest("the request path is not valid UTF-8");
  for (const auto& [key, value] : req.params)
    if (!kube::IsValidUtf8(key) || !kube::IsValidUtf8(value))
      return kube::BadRequest("a query parameter is not valid UTF-8");
  if (req.body.empty()) return std::nullopt;
  const std::string type = kube::MediaTypeOf(req.get_header_value("Content-Type")).value_or("");
  if (type == kube::kProtobufMediaType) return std::nullopt;
  if (!kube::IsValidUtf8(req.body)) return kube::BadRequest("the request body is not valid UTF-8");
  const size_t first = req.body.find_first_not_of(" \t\r\n");
  const bool json =
      (type != "application/apply-patch+yaml" && type != "application/yaml") ||
      (first != std::string::npos && (req.body[first] == '{' || req.body[first] == '['));
  if (json && kube::JsonTextNestsDeeperThan(req.body, kube::kMaxNesting))
    return kube::BodyTooDeep();
  return std::nullopt;
}

}  // namespace

ApiServer::ApiServer(Daemon& daemon, ApiOptions options)
    : daemon_(daemon),
      options_(std::move(options)),
      lists_(std::make_unique<ListSnapshots>()),
      requests_(std::make_shared<RequestMetrics>()) {
  options_.limits.max_body_bytes = kube::kMaxBodyBytes;
  options_.min_request_timeout_s = std::max(1, options_.min_request_timeout_s);
  auto tls = NewTlsContext(options_.tls);
  if (!tls.ok()) setup_ = tls.status();
  svr_ = std::make_unique<HttpServer>(options_.limits, &daemon_.watch_log(),
                                      tls.ok() ? tls.value() : nullptr);
  InstallApiAuth(*svr_, options_.tokens);  // also starts each request's log context
  // A change is answered once its journal record is durable, by the server's loop: no worker
  // waits for the disk, so every request in flight shares the next commit.
  daemon_.SetDeferral(&HttpServer::AnswerAfter);
  daemon_.SetReadTimeout(options_.limits.request_timeout_ms);  // reads too wait at most that
  Daemon* d = &daemon_;
  svr_->set_durability(
      {[d](int64_t seq) { return d->Durable(seq); },
       [d](httplib::Response& res) {
         const Status h = d->Health();  // as Mutate would have answered
         SendStatus(res, kube::ServiceUnavailable(
                             h.ok() ? "the daemon is stopping: the change may not be durable"
                                    : h.message()));
       },
       [](httplib::Response& res) {  // --request-timeout passed, the journal still busy
         SendStatus(res, kube::Timeout("request did not complete within the allotted timeout: "
                                       "its change is not durable yet and may still be "
                                       "committed"));
       },
       SaveRequestContext, RestoreRequestContext});
  // The answers the server gives itself (limits, caps) are Kubernetes Status bodies too.
  svr_->set_refusal([](int code, const std::string& message, httplib::Response& res) {
    kube::KubeStatus s = code == 413   ? kube::BodyTooLarge()
                         : code == 429 ? kube::TooManyRequests(message)
                         : code == 405 ? kube::MethodNotAllowed()
                                       : kube::Failure(code, message);
    SendStatus(res, s);
    res.status = code;
  });
  const TokenSource* tokens = options_.tokens.get();
  svr_->set_reserved(
      [tokens](const httplib::Request& req) { return ReservedRequest(tokens, req); });
  Routes();
}

ApiServer::~ApiServer() = default;

Result<int> ApiServer::Bind(const std::string& host, int port) {
  if (!setup_.ok()) return setup_;
  auto bound = svr_->Bind(host, port);
  if (!bound.ok()) return bound;
  address_ = host + ":" + std::to_string(bound.value());
  return bound;
}

void ApiServer::Run() { svr_->Run(); }

void ApiServer::Stop() {
  daemon_.watch_log().Close();
  svr_->Stop();
}

HttpServerStats ApiServer::stats() const { return svr_->stats(); }

// The caller of a request the hook let through (api_auth.h): the token's user, or without
// --token-file kube-apiserver's old insecure-port user, a cluster admin, as every request is
// allowed then.
kube::UserInfo ApiServer::Caller(const httplib::Request& req) const {
  if (options_.tokens)
    if (auto u =
            kube::Authenticate(*options_.tokens->Current(), req.get_header_value("Authorization")))
      return *u;
  return kube::UserInfo{"system:unsecured", "", {"system:masters", "system:authenticated"}};
}

// `kubectl auth can-i` and `kubectl auth whoami` (kube/auth_review.h): answered from the same
// policy and tokens the hook in front of every request uses.
void ApiServer::SelfReviewRoutes(
    HttpServer& s, const std::function<HttpServer::Handler(const HttpServer::Handler&)>& bounded) {
  s.Post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
         bounded([this](const httplib::Request& req, httplib::Response& res) {
           if (auto refused = CheckInput(req)) return SendStatus(res, *refused);
           auto body = Body(req, res);
           if (!body) return;
           auto attrs = kube::AccessReviewAttributes(*body);
           if (!attrs.ok()) return SendStatus(res, kube::BadRequest(attrs.status().message()));
           const kube::UserInfo user = Caller(req);
           const kube::Decision d = kube::Authorize(user, *attrs);
           SendJson(res, 201,
                    kube::AccessReviewResponse(*body, d, kube::ForbiddenReason(user, *attrs)));
         }));
  s.Post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
         bounded([this](const httplib::Request& req, httplib::Response& res) {
           if (auto refused = CheckInput(req)) return SendStatus(res, *refused);
           SendJson(res, 201, kube::SelfSubjectReviewResponse(Caller(req)));
         }));
}

namespace {
// The request as the metrics' labels read it (process_metrics.h).
RequestFacts RequestFactsOf(const httplib::Request& req) {
  const kube::RequestAttributes a = kube::RequestAttributesOf(
      req.method, req.path, kube::QueryBool(req.params, "watch") ? "true" : "false");
  RequestFacts f{req.method,
                 req.path,
                 req.get_header_value("Content-Type"),
                 {},
                 a.resource_request,
                 a.verb,
                 a.api_group,
                 a.resource,
                 a.subresource,
                 a.namespace_,
                 a.name};
  for (size_t i = 0; i < req.get_param_value_count("dryRun"); ++i)
    f.dry_run.push_back(req.get_param_value("dryRun", i));
  return f;
}

// Health (/healthz /livez /readyz) and /version.
void HealthRoutes(HttpServer& s, Daemon* d, const std::string& version) {
  for (const char* p : {"/healthz", "/livez"}) {
    s.Get(p, [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
  }
  s.Get("/version", [version](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, kube::VersionBody(kube::ArbiterVersionInfo(version)));
  });
  // Not ready once the journal failed (the daemon is read-only), with the reason.
  s.Get("/readyz", [d](const httplib::Request&, httplib::Response& res) {
    const Status h = d->Health();
    if (h.ok()) return res.set_content("ok", "text/plain");
    res.status = 503;
    res.set_content("[-]journal failed: " + h.message() + "\nreadyz check failed\n", "text/plain");
  });
}

// /metrics and /debug/arbiter/state.
void MetricsRoutes(HttpServer& s, Daemon* d, const ApiOptions& options,
                   const std::shared_ptr<RequestMetrics>& requests) {
  s.Get("/metrics", [d, extra = options.extra_metrics, pod_usage = options.pod_usage_on_metrics,
                     requests](const httplib::Request&, httplib::Response& res) {
    const JournalStats j = d->journal().stats();
    const Millis now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    // Under the lock only the copy of the facts; their text after it is released.
    const MetricsFacts facts =
        d->Read([&](const Cluster& c) { return CollectMetrics(c, std::max(now, c.now())); });
    std::string tail = RenderProcessMetrics() + requests->Render();
    if (extra) tail += extra();
    SetContent(res, RenderMetrics(facts, j, pod_usage, tail), "text/plain; version=0.0.4");
  });
  // The state tests compare across restarts: resourceVersion, decision digest, invariants.
  s.Get("/debug/arbiter/state", [d](const httplib::Request&, httplib::Response& res) {
    Json body = d->Read([](const Cluster& c) {
      const Status inv = c.engine().CheckInvariants();
      return Json{{"resourceVersion", c.store().resource_version()},
                  {"decisionDigest", std::to_string(c.decision_digest())},
                  {"decisionCount", c.decision_count()},
                  {"liveWorkloads", c.engine().live_workloads()},
                  {"invariants", inv.ok() ? "ok" : inv.message()}};
    });
    const StartupInfo& st = d->startup();
    body["startup"] = {
        {"fromSnapshot", st.from_snapshot}, {"replayed", st.replayed}, {"seconds", st.seconds}};
    body["journalSeq"] = d->journal().last_seq();
    SendJson(res, 200, body);
  });
}

void OpenApiRoutes(HttpServer& s) {
  s.Get("/openapi/v3", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, kube::OpenApiV3Index());
  });
  s.Get(R"(/openapi/v3/(.+))", [](const httplib::Request& req, httplib::Response& res) {
    auto doc = kube::OpenApiV3Document(req.matches[1].str());
    if (!doc) return SendStatus(res, kube::PathNotFound());
    SendJson(res, 200, *doc);
  });
}

// A handler that throws (input a check missed) answers a Status, never an empty 500; so does a
// path no route serves.
void StatusOnFailure(HttpServer& s) {
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const ReadTimeout& e) {  // a stuck journal: as kube-apiserver's request timeout
          res.status = 504;
          return SendStatus(res, kube::Timeout(std::string("request did not complete within the "
                                                           "allotted timeout: ") +
                                               e.what()));
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendStatus(res, kube::InternalError(what));
      });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) SendStatus(res, kube::PathNotFound());
  });
}

// Discovery (/api, /apis, a group, a group version's resource list): false for a resource path,
// which it leaves to ServeResource.
bool ServeDiscovery(const Target& t, const std::string& accept, const std::string& address,
                    httplib::Response& res) {
  switch (t.what) {
    case Target::What::kNone:
      SendStatus(res, kube::PathNotFound());
      return true;
    case Target::What::kApi:
    case Target::What::kApis: {
      const bool core = t.what == Target::What::kApi;
      const kube::DiscoveryShape shape = kube::NegotiateDiscovery(accept);
      res.set_header("Vary", "Accept");
      if (shape != kube::DiscoveryShape::kLegacy)
        SendJson(res, 200, kube::AggregatedDiscovery(core, shape),
                 kube::DiscoveryContentType(shape));
      else
        SendJson(res, 200, core ? kube::CoreApiVersions(address) : kube::ApiGroupList());
      return true;
    }
    case Target::What::kGroup: {
      auto g = kube::ApiGroup(t.group);
      if (!g)
        SendStatus(res, kube::PathNotFound());
      else
        SendJson(res, 200, *g);
      return true;
    }
    case Target::What::kResourceList: {
      auto l = kube::ApiResourceList(t.group, t.version);
      if (!l)
        SendStatus(res, kube::PathNotFound());
      else
        SendJson(res, 200, *l);
      return true;
    }
    case Target::What::kResource:
      break;
  }
  return false;
}

// A request on a resource, routed by method, name and subresource to its handler.
void ServeResource(Daemon& d, ListSnapshots& lists, int min_request_timeout_s,
                   const httplib::Request& req, httplib::Response& res, const Target& t) {
  if (!t.resource) return SendStatus(res, kube::PathNotFound());
  const kube::ResourceInfo& r = *t.resource;
  if (r.id == KindId::kPod && !t.name.empty() && IsContainerSubresource(t.sub) &&
      (req.method == "GET" || req.method == "POST"))
    return HandleContainerSubresource(d, res, t);
  if (r.id == KindId::kNode && !t.name.empty() && t.sub == "proxy" && req.method == "GET")
    return HandleNodeMetrics(d, res, t);
  if (!t.sub.empty() && !r.FindSubresource(t.sub)) return SendStatus(res, kube::PathNotFound());
  if (req.method == "GET") {
    if (t.name.empty()) return HandleList(d, lists, req, res, t, min_request_timeout_s);
    return HandleGet(d, req, res, t);
  }
  if (req.method == "POST") {
    if (t.sub == "eviction") return HandleEvict(d, req, res, t);
    if (!t.name.empty()) return SendStatus(res, kube::MethodNotAllowed());
    return HandleWrite(d, req, res, t, Mutation::Op::kCreate);
  }
  if (req.method == "DELETE" && t.name.empty() && t.sub.empty())
    return HandleDeleteCollection(d, req, res, t);
  if (!t.sub.empty() || t.name.empty()) return SendStatus(res, kube::MethodNotAllowed());
  if (req.method == "PUT") return HandleWrite(d, req, res, t, Mutation::Op::kUpdate);
  if (req.method == "PATCH") return HandlePatch(d, req, res, t);
  if (req.method == "DELETE") return HandleDelete(d, req, res, t);
  SendStatus(res, kube::MethodNotAllowed());
}

// /api/v1/watch/... and /apis/G/V/watch/... (kube-apiserver's deprecated watch paths, which 1.36
// still serves; they were 404 here): a GET watches the list, or one object (as metadata.name=NAME
// added to the field selector), whatever ?watch says; another method is 405, a subresource 404.
void ServeWatchPath(Daemon& d, ListSnapshots& lists, int min_request_timeout_s,
                    const httplib::Request& req, httplib::Response& res, Target t) {
  if (!t.resource || !t.sub.empty()) return SendStatus(res, kube::PathNotFound());
  if (req.method != "GET") return SendStatus(res, kube::MethodNotAllowed());
  httplib::Request watch = req;
  watch.params.erase("watch");
  watch.params.emplace("watch", "true");
  if (!t.name.empty()) {
    const std::string fields = Param(req, "fieldSelector");
    watch.params.erase("fieldSelector");
    std::string name;  // escaped as fields.EscapeValue does: the name is one value
    for (const char c : t.name) {
      if (c == '\\' || c == ',' || c == '=') name += '\\';
      name += c;
    }
    watch.params.emplace("fieldSelector",
                         (fields.empty() ? "" : fields + ",") + "metadata.name=" + name);
    t.name.clear();
  }
  HandleList(d, lists, watch, res, t, min_request_timeout_s);
}

}  // namespace

void ApiServer::Routes() {
  HttpServer& s = *svr_;
  auto log = options_.log;
  s.set_logger(
      [log, requests = requests_](const httplib::Request& req, const httplib::Response& res) {
        const RequestLogInput in = RequestLogInputOf(req, res);
        requests->Observe(KubeRequestLabels(RequestFactsOf(req)), res.status,
                          LoggedLatencyMs(in) / 1000);
        if (log) log(RequestLogText(in));
      });
  HealthRoutes(s, &daemon_, options_.version);
  MetricsRoutes(s, &daemon_, options_, requests_);
  OpenApiRoutes(s);
  StatusOnFailure(s);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    if (auto refused = CheckInput(req)) return SendStatus(res, *refused);
    const Target t = Parse(req.path);
    if (ServeDiscovery(t, req.get_header_value("Accept"), address_, res)) return;
    if (t.watch_path)
      return ServeWatchPath(daemon_, *lists_, options_.min_request_timeout_s, req, res, t);
    ServeResource(daemon_, *lists_, options_.min_request_timeout_s, req, res, t);
  };
  // Bodies were read by the server, at most kube::kMaxBodyBytes of them, chunked or not
  // (http_request_parser.h); multipart forms are not a Kubernetes body.
  auto bounded = [](const HttpServer::Handler& then) {
    return [then](const httplib::Request& req, httplib::Response& res) {
      if (req.is_multipart_form_data())
        return SendStatus(res, kube::UnsupportedMediaType(req.get_header_value("Content-Type"),
                                                          {"application/json"}));
      then(req, res);
    };
  };
  auto not_found = [](const httplib::Request&, httplib::Response& res) {
    SendStatus(res, kube::PathNotFound());
  };
  SelfReviewRoutes(s, bounded);
  for (const char* p : {R"(/api(/.*)?)", R"(/apis(/.*)?)"}) {
    s.Get(p, handler);
    s.Post(p, bounded(handler));
    s.Put(p, bounded(handler));
    s.Patch(p, bounded(handler));
    s.Delete(p, bounded(handler));
  }
  s.Post(".*", bounded(not_found));
  s.Put(".*", bounded(not_found));
  s.Patch(".*", bounded(not_found));
  s.Delete(".*", bounded(not_found));
  dashboard::RegisterRoutes(s, daemon_, options_.dashboard);
}

}  // namespace arbiter::server
