// Cluster snapshots: "ARBITER-SERVE-SNAPSHOT 1\n", the length of a JSON header in decimal and a
// newline, the JSON header (objects, counters, the work model's state of the live workloads),
// then the engine's own snapshot bytes (docs/snapshot.md). The validation context of policy objects
// is not saved: it is loaded again from the stored objects.
#include "server/durability/cluster_snapshot.h"

#include <algorithm>
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

std::shared_ptr<const SnapshotCapture> Cluster::CaptureSnapshot() const {
  auto c = std::make_shared<SnapshotCapture>();
  c->store_ = store_.Capture();
  c->uid_counter_ = uid_counter_;
  c->event_counter_ = event_counter_;
  c->events_.assign(events_.begin(), events_.end());
  c->pods_.reserve(pod_of_.size());
  for (const auto& [id, key] : pod_of_) c->pods_.emplace_back(id, key);
  c->finished_.reserve(finished_of_.size());
  for (const auto& [key, id] : finished_of_) c->finished_.emplace_back(id, key);
  c->decision_digest_ = decision_digest_;
  c->decision_count_ = decision_count_;
  // The work model's state of the live workloads only (pods, and workloads a timer waits for):
  // a finished workload's is never read again, and the whole history would make snapshots, and
  // start-up, grow with every pod ever run. Ids index the vectors (dense from 0), so their
  // lengths are saved too.
  c->timers_ = timers_.Live();
  std::vector<uint64_t> live;
  live.reserve(pod_of_.size() + c->timers_.size());
  for (const auto& [id, key] : pod_of_) live.push_back(id);
  for (const auto& t : c->timers_) live.push_back(engine::Value(t.workload));
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  const auto& gens = timers_.generations();
  c->works_.reserve(live.size());
  for (uint64_t id : live) {
    if (id < recorder_->works.size()) c->works_.emplace_back(id, recorder_->works[id]);
    if (id < gens.size() && gens[id] != 0) c->generations_.emplace_back(id, gens[id]);
  }
  c->work_count_ = recorder_->works.size();
  c->timer_seq_ = timers_.seq();
  c->generation_count_ = gens.size();
  c->engine_ = engine_->Capture();  // copied; encoded by Write, off the lock
  return c;
}

std::string Cluster::Snapshot() const { return CaptureSnapshot()->Bytes(); }

std::string SnapshotCapture::Header() const {
  Json h;
  h["store"] = nullptr;  // written in place from the objects' texts (Saved::Write)
  h["uidCounter"] = uid_counter_;
  h["eventCounter"] = event_counter_;
  Json evs = Json::array();
  for (const auto& [ns, name] : events_) evs.push_back({ns, name});
  h["events"] = std::move(evs);
  Json pods = Json::array();
  for (const auto& [id, key] : pods_) pods.push_back({id, key.first, key.second});
  h["pods"] = std::move(pods);
  Json finished = Json::array();  // finished pods still stored: [id, namespace, name]
  for (const auto& [id, key] : finished_) finished.push_back({id, key.first, key.second});
  h["finishedPods"] = std::move(finished);
  h["decisionDigest"] = decision_digest_;
  h["decisionCount"] = decision_count_;
  Json works = Json::array();
  for (const auto& [id, w] : works_)
    works.push_back({id, Opt(w.spec.duration), Opt(w.spec.checkpoint_interval), w.spec.shutdown,
                     w.progress, w.run_start, w.stopping, w.stop_time, w.exit_time,
                     w.progress_after_exit, w.lost_work, w.lost_ms, w.lost_ms_node_removed,
                     w.spec.exit_code});
  h["workCount"] = work_count_;
  h["liveWorks"] = std::move(works);
  Json timer_list = Json::array();
  for (const auto& t : timers_)
    timer_list.push_back(
        {t.time, t.seq, engine::Value(t.workload), t.generation, static_cast<int>(t.kind)});
  h["timers"] = std::move(timer_list);
  h["timerSeq"] = timer_seq_;
  h["timerGenerationCount"] = generation_count_;
  Json generations = Json::array();
  for (const auto& [id, g] : generations_) generations.push_back({id, g});
  h["liveTimerGenerations"] = std::move(generations);
  return h.dump();
}

bool SnapshotCapture::Write(const ObjectStore::Saved::Sink& out) const {
  const std::string rest = Header();
  // The only "store":null of the text: a string holding it would have its quotes escaped.
  const size_t at = rest.find("\"store\":null");
  const std::string_view before(rest.data(), at + 8);  // the header, then what goes before it
  const std::string_view after = std::string_view(rest).substr(at + 12);
  const size_t length = before.size() + store_.Size() + after.size();
  return out(std::string(kMagic) + std::to_string(length) + "\n") && out(before) &&
         store_.Write(out) && out(after) && out(engine::Engine::EncodeCapture(*engine_));
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
// declare one are loaded.
void Cluster::RestoreUsage() {
  for (const auto& [id, u] : usage_of_) facts_.SetUsage(id, nullptr);
  usage_of_.clear();
  for (const auto& [id, key] : pod_of_) {
    const std::shared_ptr<const Json> pod = store_.Share("Pod", key.first, key.second);  // not kept
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
  events_.clear();
  for (const auto& k : h.at("events"))
    events_.push_back({k.at(0).get<std::string>(), k.at(1).get<std::string>()});
  decision_digest_ = h.at("decisionDigest").get<uint64_t>();
  decision_count_ = h.at("decisionCount").get<uint64_t>();
}

// The live pods' workload ids (and their usage, pending and reserved views), the finished pods'.
void Cluster::RestorePods(const Json& h) {
  pod_of_.clear();
  workload_of_.clear();
  for (const auto& p : h.at("pods")) {
    const uint64_t id = p.at(0).get<uint64_t>();
    ObjectStore::Key key{p.at(1).get<std::string>(), p.at(2).get<std::string>()};
    pod_of_[id] = key;
    workload_of_[key] = id;
  }
  RestoreUsage();
  finished_of_.clear();  // (absent from snapshots written before finishedPods)
  for (const auto& p : h.value("finishedPods", Json::array()))
    finished_of_[{p.at(1).get<std::string>(), p.at(2).get<std::string>()}] =
        p.at(0).get<uint64_t>();
  pending_.clear();
  reserved_.clear();
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
  recorder_->works.clear();
  if (h.contains("liveWorks")) {
    recorder_->works.resize(h.at("workCount").get<size_t>());
    for (const auto& w : h.at("liveWorks"))
      recorder_->works.at(w.at(0).get<uint64_t>()) = work_of(w, 1);
  } else {
    for (const auto& w : h.at("works")) recorder_->works.push_back(work_of(w, 0));
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

Status Cluster::Restore(const std::string& bytes) {
  if (bytes.compare(0, kMagic.size(), kMagic) != 0)
    return Status::InvalidArgument("not an arbiter serve snapshot");
  try {
    const size_t nl = bytes.find('\n', kMagic.size());
    if (nl == std::string::npos) return Status::InvalidArgument("truncated snapshot");
    const size_t len = std::stoull(bytes.substr(kMagic.size(), nl - kMagic.size()));
    if (nl + 1 + len > bytes.size()) return Status::InvalidArgument("truncated snapshot");
    Json h = Json::parse(std::string_view(bytes).substr(nl + 1, len));
    auto e = engine::Engine::Restore(std::string_view(bytes).substr(nl + 1 + len));
    if (!e.ok()) return e.status();
    engine_ = std::move(e).value();
    AttachSinks();
    store_.Load(std::move(h.at("store")));
    RestoreCounters(h);
    RestorePods(h);
    RestoreWorks(h);
    RestoreTimers(h);
    RestorePolicy();
    RestoreJobs();  // after RestorePods: a crash-looping pod's next restart needs its workload
  } catch (const std::exception& ex) {
    return Status::InvalidArgument(std::string("corrupt snapshot: ") + ex.what());
  }
  store_.Trim();
  return Status::Ok();
}

}  // namespace arbiter::server
