// Cluster snapshots: "ARBITER-SERVE-SNAPSHOT 1\n", the length of a JSON header in decimal and a
// newline, the JSON header (objects, counters, the work model's state of the live workloads),
// then the engine's own snapshot bytes (docs/snapshot.md). The validation context of policy objects
// is not saved: it is loaded again from the stored objects.
#include "server/durability/cluster_snapshot.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "adapters/yaml/manifest_loader.h"
#include "driver/recorder.h"
#include "server/state/cluster.h"

namespace arbiter::server {

namespace {
constexpr std::string_view kMagic = "ARBITER-SERVE-SNAPSHOT 1\n";

template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
template <typename T>
std::optional<T> OptOf(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}
}  // namespace

// The header's values written in place (SnapshotCapture::Write), not as part of its JSON tree.
enum class SnapshotCapture::Long {
  kStore,
  kEvents,
  kPods,
  kFinishedPods,
  kLiveWorks,
  kTimers,
  kLiveTimerGenerations
};

// Their keys in the header.
const std::pair<SnapshotCapture::Long, std::string_view> SnapshotCapture::kLong[] = {
    {Long::kStore, "store"},
    {Long::kEvents, "events"},
    {Long::kPods, "pods"},
    {Long::kFinishedPods, "finishedPods"},
    {Long::kLiveWorks, "liveWorks"},
    {Long::kTimers, "timers"},
    {Long::kLiveTimerGenerations, "liveTimerGenerations"}};

std::shared_ptr<const SnapshotCapture> Cluster::CaptureSnapshot(
    const std::function<void(CaptureStep)>& after) const {
  auto step = [&](CaptureStep s) {
    if (after) after(s);
  };
  auto c = std::make_shared<SnapshotCapture>();
  c->store_ = store_.Capture();
  step(CaptureStep::kStore);
  c->uid_counter_ = uid_counter_;
  c->event_counter_ = event_counter_;
  c->events_ = events_.Keys();
  c->decision_digest_ = decision_digest_;
  c->decision_count_ = decision_count_;
  for (const auto& [job, finishes] : job_finishes_)
    for (const auto& [pod, f] : finishes)
      c->job_finishes_.emplace_back(job, pod, f.first, f.second);
  c->job_events_ = job_events_.Save();
  c->job_refusals_ = Json::array();
  for (const auto& [job, r] : job_refusals_)
    c->job_refusals_.push_back({job.first, job.second, r.first, r.second});
  c->jobs_more_ = Json::array();
  for (const auto& job : jobs_more_) c->jobs_more_.push_back({job.first, job.second});
  c->job_collections_ = Json::array();
  for (const auto& [key, jc] : job_collections_)
    c->job_collections_.push_back({key.first, key.second, jc.job, jc.orphan, jc.since, jc.after});
  c->terminating_namespaces_ = terminating_namespaces_;
  step(CaptureStep::kCounters);
  c->pods_ = pod_of_.Freeze();
  c->finished_ = finished_of_.Freeze();
  step(CaptureStep::kPods);
  // The work model's state, whole: Write keeps the live workloads' alone (SnapshotCapture::Live).
  c->works_ = recorder_->works.Freeze();
  c->timers_ = timers_.Freeze();
  step(CaptureStep::kWorks);
  c->engine_ = engine_->Capture();  // copied; encoded by Write, off the lock
  step(CaptureStep::kEngine);
  return c;
}

std::string Cluster::Snapshot() const { return CaptureSnapshot()->Bytes(); }

// The header's scalars; its long arrays and the store are null here, written in their place by
// Write (the keys in nlohmann's order, sorted).
std::string SnapshotCapture::Header() const {
  Json h;
  for (const auto& [which, key] : kLong) h[std::string(key)] = nullptr;
  h["uidCounter"] = uid_counter_;
  h["eventCounter"] = event_counter_;
  h["decisionDigest"] = decision_digest_;
  h["decisionCount"] = decision_count_;
  h["workCount"] = works_.size();
  h["timerSeq"] = timers_.seq;
  h["timerGenerationCount"] = timers_.generations.size();
  // (since journal format 5; an older snapshot has none: an empty memory, as its release restored)
  Json& finishes = h["jobFinishes"] = Json::array();
  for (const auto& [job, pod, t, ok] : job_finishes_)
    finishes.push_back({job.first, job.second, pod, t, ok});
  h["jobEvents"] = job_events_;
  h["jobRefusals"] = job_refusals_;
  h["jobsMore"] = jobs_more_;  // (since format 9; none before: derived, Cluster::RestoreJobs)
  h["jobCollections"] = job_collections_;  // (since format 10; none before: none left)
  h["terminatingNamespaces"] = terminating_namespaces_;  // (since format 6; none before)
  return h.dump();
}

// The work model's state of the live workloads only (pods, and workloads a timer waits for): a
// finished workload's is never read again, and the whole history would make snapshots, and
// start-up, grow with every pod ever run. Ids index the works and generations (dense from 0), so
// their counts are saved too.
struct SnapshotCapture::Live {
  std::vector<driver::WorkTimers::Timer> timers;  // in firing order
  std::vector<uint64_t> ids;                      // the live workloads, in order
  explicit Live(const SnapshotCapture& c) : timers(c.timers_.Live()) {
    // The pods' ids (in order already) merged with the timers' (sorted apart).
    std::vector<uint64_t> timed;
    timed.reserve(timers.size());
    for (const auto& t : timers) timed.push_back(engine::Value(t.workload));
    std::sort(timed.begin(), timed.end());
    ids.reserve(c.pods_.size() + timed.size());
    auto t = timed.begin();
    for (const auto& [id, key] : c.pods_) {
      for (; t != timed.end() && *t <= id; ++t) ids.push_back(*t);
      ids.push_back(id);
    }
    ids.insert(ids.end(), t, timed.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
};

// Text given to a sink in pieces of about 64 KB, or only counted (no sink): the header's long
// arrays are written twice, once to learn their length (which goes first), never held whole.
// Writes the bytes nlohmann's dump() writes for the same values.
class SnapshotPieces {
 public:
  explicit SnapshotPieces(const ObjectStore::Saved::Sink* out) : out_(out) {}
  void Raw(std::string_view s) {
    size_ += s.size();
    if (!out_) return;
    buf_.append(s);
    if (buf_.size() >= (64u << 10)) Flush();
  }
  template <typename T>
  void Num(T v) {
    char b[24];
    const auto r = std::to_chars(b, b + sizeof b, v);
    Raw(std::string_view(b, r.ptr - b));
  }
  void Bool(bool v) { Raw(v ? "true" : "false"); }
  void Opt(const std::optional<Millis>& v) { v ? Num(*v) : Raw("null"); }
  void Str(const std::string& s) {
    const bool plain = std::all_of(
        s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (!plain) return Raw(Json(s).dump());
    Raw("\"");
    Raw(s);
    Raw("\"");
  }
  bool Flush() {
    if (out_ && ok_ && !buf_.empty()) ok_ = (*out_)(buf_);
    buf_.clear();
    return ok_;
  }
  // The store's text (ObjectStore::Saved::Write), given to the sink as it writes it.
  bool Store(const ObjectStore::Saved& store) {
    if (!Flush()) return false;
    if (!out_) {
      size_ += store.Size();
      return true;
    }
    return ok_ = store.Write(*out_);
  }
  size_t size() const { return size_; }

 private:
  const ObjectStore::Saved::Sink* out_;
  std::string buf_;
  size_t size_ = 0;
  bool ok_ = true;
};

namespace {

// [e, e, ...] with each element written by `each`.
template <typename C, typename F>
void Array(SnapshotPieces& p, const C& items, F each) {
  p.Raw("[");
  bool first = true;
  for (const auto& x : items) {
    if (!first) p.Raw(",");
    first = false;
    each(x);
  }
  p.Raw("]");
}

}  // namespace

namespace {
// [id, namespace, name]
void WriteKeyed(uint64_t id, const ObjectStore::Key& key, SnapshotPieces& p) {
  p.Raw("[");
  p.Num(id);
  p.Raw(",");
  p.Str(key.first);
  p.Raw(",");
  p.Str(key.second);
  p.Raw("]");
}

// [time, seq, workload, generation, kind]
void WriteTimer(const driver::WorkTimers::Timer& t, SnapshotPieces& p) {
  p.Raw("[");
  p.Num(t.time);
  p.Raw(",");
  p.Num(t.seq);
  p.Raw(",");
  p.Num(engine::Value(t.workload));
  p.Raw(",");
  p.Num(t.generation);
  p.Raw(",");
  p.Num(static_cast<int>(t.kind));
  p.Raw("]");
}
}  // namespace

// One long value of the header (the store's text given to the sink as it is written).
bool SnapshotCapture::WriteLong(Long which, const Live& live, SnapshotPieces& p) const {
  switch (which) {
    case Long::kStore:
      return p.Store(store_);
    case Long::kEvents:
      Array(p, events_, [&](const ObjectStore::Key& k) {
        p.Raw("[");
        p.Str(k.first);
        p.Raw(",");
        p.Str(k.second);
        p.Raw("]");
      });
      break;
    case Long::kPods:
      Array(p, pods_, [&](const auto& x) { WriteKeyed(x.first, x.second, p); });
      break;
    case Long::kFinishedPods:
      Array(p, finished_, [&](const auto& x) { WriteKeyed(x.second, x.first, p); });
      break;
    case Long::kLiveWorks:
      WriteWorks(live, p);
      break;
    case Long::kTimers:
      Array(p, live.timers, [&](const driver::WorkTimers::Timer& t) { WriteTimer(t, p); });
      break;
    case Long::kLiveTimerGenerations:
      WriteGenerations(live, p);
      break;
  }
  return true;
}

// The live workloads' works: [[id, fields...], ...].
void SnapshotCapture::WriteWorks(const Live& live, SnapshotPieces& p) const {
  p.Raw("[");
  bool first = true;
  for (uint64_t id : live.ids) {
    if (id >= works_.size()) continue;
    if (!first) p.Raw(",");
    first = false;
    WriteWork(id, works_[id], p);
  }
  p.Raw("]");
}

// The live workloads' timer generations but 0: [[id, generation], ...].
void SnapshotCapture::WriteGenerations(const Live& live, SnapshotPieces& p) const {
  const auto& gens = timers_.generations;
  p.Raw("[");
  bool first = true;
  for (uint64_t id : live.ids) {
    if (id >= gens.size() || gens[id] == 0) continue;
    if (!first) p.Raw(",");
    first = false;
    p.Raw("[");
    p.Num(id);
    p.Raw(",");
    p.Num(gens[id]);
    p.Raw("]");
  }
  p.Raw("]");
}

// [id, duration, checkpoint interval, shutdown, progress, run start, stopping, stop time, exit
// time, progress after exit, lost work, lost ms, lost ms (node removed), exit code]
void SnapshotCapture::WriteWork(uint64_t id, const driver::Work& w, SnapshotPieces& p) {
  p.Raw("[");
  p.Num(id);
  p.Raw(",");
  p.Opt(w.spec.duration);
  p.Raw(",");
  p.Opt(w.spec.checkpoint_interval);
  for (Millis v : {w.spec.shutdown, w.progress, w.run_start}) {
    p.Raw(",");
    p.Num(v);
  }
  p.Raw(",");
  p.Bool(w.stopping);
  for (Millis v : {w.stop_time, w.exit_time, w.progress_after_exit, w.lost_work, w.lost_ms,
                   w.lost_ms_node_removed}) {
    p.Raw(",");
    p.Num(v);
  }
  p.Raw(",");
  p.Num(w.spec.exit_code);
  p.Raw("]");
}

// The header streamed: its scalars' text, each long array (and the store) written in place of its
// null; first counted, then written. Neither a tree nor a string of the whole header is made.
bool SnapshotCapture::Write(const ObjectStore::Saved::Sink& out) const {
  const std::string head = Header();
  // Where each null goes, in the text's order (the keys are sorted; the other values are numbers).
  std::vector<std::pair<size_t, Long>> at;  // the null's offset, its value
  for (const auto& [which, key] : kLong) {
    const std::string marker = "\"" + std::string(key) + "\":null";
    at.emplace_back(head.find(marker) + marker.size() - 4, which);
  }
  std::sort(at.begin(), at.end());
  const Live live(*this);
  auto body = [&](SnapshotPieces& p) {  // the header, the store counted (not written) by `p`
    size_t from = 0;
    for (const auto& [pos, which] : at) {
      p.Raw(std::string_view(head).substr(from, pos - from));
      from = pos + 4;
      if (!WriteLong(which, live, p)) return false;
    }
    p.Raw(std::string_view(head).substr(from));
    return p.Flush();
  };
  SnapshotPieces count(nullptr);
  (void)body(count);
  if (!out(std::string(kMagic) + std::to_string(count.size()) + "\n")) return false;
  SnapshotPieces pieces(&out);
  return body(pieces) && out(engine::Engine::EncodeCapture(*engine_));
}

std::string SnapshotCapture::Bytes() const {
  std::string out;
  (void)Write([&](std::string_view piece) {
    out.append(piece);
    return true;
  });
  return out;
}

// Live pods' arbiter.dev/usage, read again from the stored pods (as applied): only those that
// declare one are loaded. A pod whose text does not hold the annotation's name is not parsed (the
// many: a tree costs about 50 times the search, issue 27's restart at 1M live pods).
void Cluster::RestoreUsage() {
  for (const auto& [id, u] : usage_of_) facts_.SetUsage(id, nullptr);
  usage_of_.clear();
  std::string text;
  for (const auto& [id, key] : pod_of_) {
    const std::shared_ptr<const StoredObject> stored = store_.Stored("Pod", key.first, key.second);
    if (!stored) continue;
    text.clear();
    stored->AppendWireText(text);
    if (text.find("arbiter.dev/usage") == std::string::npos) continue;
    const std::shared_ptr<const Json> pod = stored->tree();  // not kept
    if (!pod || !pod->contains("metadata")) continue;
    const Json& meta = (*pod)["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].is_object() ||
        !meta["annotations"].contains("arbiter.dev/usage"))
      continue;
    Json copy = *pod;
    copy.erase("status");
    if (copy.contains("spec") && copy["spec"].is_object()) copy["spec"].erase("nodeName");
    yaml::ManifestLoad load;
    yaml::LoadManifestJson(copy, "snapshot", &load);
    if (!load.set.pods.empty()) NoteUsage(id, load.set.pods[0]);
  }
}

void Cluster::RestoreCounters(const Json& h) {
  uid_counter_ = h.at("uidCounter").get<uint64_t>();
  event_counter_ = h.at("eventCounter").get<uint64_t>();
  std::vector<ObjectStore::Key> events;
  for (const auto& k : h.at("events"))
    events.push_back({k.at(0).get<std::string>(), k.at(1).get<std::string>()});
  // (their preemptions once the store is loaded: RestorePreemptions)
  events_.Assign(events, [](const ObjectStore::Key&) { return std::nullopt; });
  decision_digest_ = h.at("decisionDigest").get<uint64_t>();
  decision_count_ = h.at("decisionCount").get<uint64_t>();
  terminating_namespaces_.clear();  // (a snapshot before format 6 has none: none were)
  if (auto it = h.find("terminatingNamespaces"); it != h.end() && it->is_array())
    for (const auto& ns : *it) terminating_namespaces_.insert(ns.get<std::string>());
}

// The live pods' workload ids (and their usage, pending and reserved views), the finished pods'.
void Cluster::RestorePods(const Json& h) {
  pod_of_.clear();
  workload_of_.clear();
  for (const auto& p : h.at("pods")) {
    const uint64_t id = p.at(0).get<uint64_t>();
    ObjectStore::Key key{p.at(1).get<std::string>(), p.at(2).get<std::string>()};
    pod_of_.insert_or_assign(id, key);
    workload_of_[key] = id;
  }
  RestoreUsage();
  finished_of_.clear();  // (absent from snapshots written before finishedPods)
  for (const auto& p : h.value("finishedPods", Json::array()))
    finished_of_.insert_or_assign({p.at(1).get<std::string>(), p.at(2).get<std::string>()},
                                  p.at(0).get<uint64_t>());
  pending_.clear();
  reserved_.clear();
  if (pending_walk_)
    for (const auto& [id, key] : pod_of_)
      if (auto st = engine_->Get(engine::WorkloadId{id})) NotePending(id, *st);
  RestoreFacts();
}

// Works: of the live workloads (liveWorks: [id, fields...]), or of every workload (works:
// snapshots written before liveWorks).
void Cluster::RestoreWorks(const Json& h) {
  auto work_of = [](const Json& w, size_t at) {
    driver::Work x;
    x.spec.duration = OptOf<Millis>(w.at(at));
    x.spec.checkpoint_interval = OptOf<Millis>(w.at(at + 1));
    x.spec.shutdown = w.at(at + 2).get<Millis>();
    if (w.size() > at + 12) x.spec.exit_code = w.at(at + 12).get<int32_t>();  // newer snapshots
    x.progress = w.at(at + 3).get<Millis>();
    x.run_start = w.at(at + 4).get<Millis>();
    x.stopping = w.at(at + 5).get<bool>();
    x.stop_time = w.at(at + 6).get<Millis>();
    x.exit_time = w.at(at + 7).get<Millis>();
    x.progress_after_exit = w.at(at + 8).get<Millis>();
    x.lost_work = w.at(at + 9).get<Millis>();
    x.lost_ms = w.at(at + 10).get<Millis>();
    x.lost_ms_node_removed = w.at(at + 11).get<Millis>();
    return x;
  };
  auto& works = recorder_->works;
  works.clear();
  if (h.contains("liveWorks")) {
    for (size_t i = 0, n = h.at("workCount").get<size_t>(); i < n; ++i) works.emplace_back();
    for (const auto& w : h.at("liveWorks")) {
      const uint64_t id = w.at(0).get<uint64_t>();
      if (id >= works.size()) throw std::out_of_range("a live work past workCount");
      works[id] = work_of(w, 1);
    }
  } else {
    for (const auto& w : h.at("works")) works.push_back(work_of(w, 0));
  }
}

void Cluster::RestoreTimers(const Json& h) {
  std::vector<driver::WorkTimers::Timer> live;
  for (const auto& t : h.at("timers")) {
    driver::WorkTimers::Timer x;
    x.time = t.at(0).get<Millis>();
    x.seq = t.at(1).get<uint64_t>();
    x.workload = engine::WorkloadId{t.at(2).get<uint64_t>()};
    x.generation = t.at(3).get<uint64_t>();
    x.kind = static_cast<driver::WorkTimers::Kind>(t.at(4).get<int>());
    live.push_back(x);
  }
  std::vector<uint64_t> generations;
  if (h.contains("liveTimerGenerations")) {
    generations.assign(h.at("timerGenerationCount").get<size_t>(), 0);
    for (const auto& g : h.at("liveTimerGenerations"))
      generations.at(g.at(0).get<uint64_t>()) = g.at(1).get<uint64_t>();
  } else {
    generations = h.at("timerGenerations").get<std::vector<uint64_t>>();
  }
  timers_.Restore(live, h.at("timerSeq").get<uint64_t>(), std::move(generations));
}

// The validation context, loaded again from the stored policy objects.
void Cluster::RestorePolicy() {
  policy_.clear();
  for (const auto& k : ServedKinds()) {
    if (k.storage != Storage::kPolicy) continue;
    for (const auto& [key, obj] : store_.All(k.kind)) policy_[k.kind][key] = Load(k, *obj).set;
  }
}

// The header's tree but for the store's objects, which are stored as each is parsed (at 1M live
// pods a tree of them all was gigabytes, issue 27): {"store": {"kinds": {"Pod": [object, ...],
// ...}, "resourceVersion": N}, ...}, each object at depth 4 of the callback's count.
Json Cluster::ParseLoadingStore(std::string_view header) {
  std::string keys[4];  // the key being read at depth 1, 2, 3
  const auto in_kinds = [&] { return keys[1] == "store" && keys[2] == "kinds"; };
  store_.StartLoad();
  Json h = Json::parse(header, [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth >= 1 && depth <= 3) {
      keys[depth] = parsed.get<std::string>();
      for (int d = depth + 1; d <= 3; ++d) keys[d].clear();
      if (depth == 3 && in_kinds()) store_.LoadKind(keys[3]);
    } else if (event == Json::parse_event_t::object_end && depth == 4 && in_kinds()) {
      store_.LoadObject(keys[3], std::move(parsed));
      return false;  // not kept in the header's tree
    }
    return true;
  });
  store_.FinishLoad(h.at("store").at("resourceVersion").get<int64_t>());
  return h;
}

Status Cluster::Restore(const std::string& bytes) {
  if (bytes.compare(0, kMagic.size(), kMagic) != 0)
    return Status::InvalidArgument("not an arbiter serve snapshot");
  try {
    const size_t nl = bytes.find('\n', kMagic.size());
    if (nl == std::string::npos) return Status::InvalidArgument("truncated snapshot");
    const size_t len = std::stoull(bytes.substr(kMagic.size(), nl - kMagic.size()));
    if (nl + 1 + len > bytes.size()) return Status::InvalidArgument("truncated snapshot");
    auto e = engine::Engine::Restore(std::string_view(bytes).substr(nl + 1 + len));
    if (!e.ok()) return e.status();
    engine_ = std::move(e).value();
    AttachSinks();
    const Json h = ParseLoadingStore(std::string_view(bytes).substr(nl + 1, len));
    RestoreCounters(h);
    RestorePreemptions();
    RestorePods(h);
    RestoreWorks(h);
    RestoreTimers(h);
    RestorePolicy();
    RestorePdbs();
    RestoreJobs(h);  // after RestorePods: a crash-looping pod's next restart needs its workload
  } catch (const std::exception& ex) {
    return Status::InvalidArgument(std::string("corrupt snapshot: ") + ex.what());
  }
  store_.Trim();
  return Status::Ok();
}

}  // namespace arbiter::server
