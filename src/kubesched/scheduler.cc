#include "kubesched/scheduler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>

#include "adapters/kubeclient/api_client.h"
#include "adapters/kubeclient/informer.h"
#include "core/api_kinds.h"
#include "kubesched/action_pool.h"
#include "kubesched/event_writer.h"
#include "kubesched/lease_runner.h"
#include "kubesched/pod_runs.h"

namespace arbiter::kubesched {

using kubeclient::ApiClient;
using kubeclient::Json;

namespace {

Millis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A kind the API server does not serve (PodGroup without scheduler-plugins' CRD or
// deploy/podgroup-crd.yaml) lists as empty and is looked for again (kubeclient::Informer).
std::vector<kubeclient::ResourceSpec> Resources() {
  static const std::set<std::string> kSkip = {"Event"};
  std::vector<kubeclient::ResourceSpec> out;
  for (const ApiKind& k : ApiKinds()) {
    if (kSkip.count(k.kind)) continue;
    const std::string group = k.group;
    const std::string path =
        (group.empty() ? std::string("/api/") + k.version : "/apis/" + group + "/" + k.version) +
        "/" + k.plural;
    out.push_back({k.kind, path, k.ApiVersion()});
  }
  return out;
}

std::string PodPath(const Action& a) {
  return "/api/v1/namespaces/" + a.namespace_ + "/pods/" + a.name;
}

ActionResult Outcome(const Result<kubeclient::ApiResponse>& r) {
  ActionResult out;
  if (!r.ok()) {
    out.message = r.message();
    return out;
  }
  out.http_status = r->status;
  if (r->status >= 300) out.message = kubeclient::StatusMessage(r->body);
  return out;
}

ActionResult Execute(ApiClient& c, const Action& a) {
  switch (a.type) {
    case Action::Type::kBind: {
      Json b = {{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", a.name}, {"namespace", a.namespace_}}},
                {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", a.node}}}};
      if (!a.uid.empty()) b["metadata"]["uid"] = a.uid;
      ActionResult r = Outcome(c.Post(PodPath(a) + "/binding", b.dump()));
      if (r.http_status == 409) {  // bound already: by us (an earlier attempt) or someone else
        auto pod = c.Get(PodPath(a));
        if (pod.ok() && pod->status == 200) {
          Json p = Json::parse(pod->body, nullptr, false);
          if (p.is_object() && p.contains("spec") && p["spec"].is_object())
            r.bound_node = p["spec"].value("nodeName", "");
        }
      }
      return r;
    }
    case Action::Type::kEvict: {
      const Json e = {{"apiVersion", "policy/v1"},
                      {"kind", "Eviction"},
                      {"metadata", {{"name", a.name}, {"namespace", a.namespace_}}}};
      return Outcome(c.Post(PodPath(a) + "/eviction", e.dump()));
    }
    case Action::Type::kStatus: {
      // PodScheduled False, the reason and message driver::PodSchedulingOf gives (the controller
      // put them in the action), as kube-scheduler's updatePod writes it.
      Json cond = {{"type", "PodScheduled"},
                   {"status", "False"},
                   {"reason", a.reason.empty() ? std::string("Unschedulable") : a.reason},
                   {"message", a.message},
                   {"lastProbeTime", nullptr}};
      Json status = {{"conditions", Json::array({cond})}};
      status["nominatedNodeName"] = a.node.empty() ? Json() : Json(a.node);
      const Json patch = {{"status", status}};
      return Outcome(
          c.Patch(PodPath(a) + "/status", patch.dump(), "application/strategic-merge-patch+json"));
    }
    case Action::Type::kJob: {
      const Json patch = {{"metadata", {{"annotations", {{kAdmissionAnnotation, a.message}}}}},
                          {"spec", {{"suspend", a.suspend}}}};
      return Outcome(c.Patch("/apis/batch/v1/namespaces/" + a.namespace_ + "/jobs/" + a.name,
                             patch.dump(), "application/merge-patch+json"));
    }
    case Action::Type::kQuotaStatus:
      return Outcome(c.Patch("/apis/arbiter.dev/v1alpha1/namespaces/" + a.namespace_ +
                                 "/elasticquotas/" + a.name + "/status",
                             "{\"status\":" + a.message + "}", "application/merge-patch+json"));
    case Action::Type::kCondition: {
      const ApiKind* k = FindApiKind(a.kind);
      if (!k) return {};
      const std::string path = "/apis/" + k->ApiVersion() + "/" +
                               (k->namespaced ? "namespaces/" + a.namespace_ + "/" : "") +
                               k->plural + "/" + a.name + "/status";
      return Outcome(
          c.Patch(path, "{\"status\":" + a.message + "}", "application/merge-patch+json"));
    }
  }
  return {};
}

// reportingController: the scheduler's name (kube-scheduler's is its profile's, default-scheduler);
// reportingInstance: NAME-HOST, at most 128 characters.
EventRecorderOptions EventOptions(const std::string& scheduler_name) {
  EventRecorderOptions o;
  o.reporting_controller = scheduler_name;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  o.reporting_instance = (scheduler_name + "-" + host).substr(0, 128);
  return o;
}

// The PriceBooks in force, set by the loop, read by the usage meter's thread.
class BookBox {
 public:
  void Set(std::vector<PriceBook> b) {
    std::lock_guard<std::mutex> l(mu_);
    books_ = std::move(b);
  }
  std::vector<PriceBook> Get() const {
    std::lock_guard<std::mutex> l(mu_);
    return books_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PriceBook> books_;
};

// --ledger and --meter-prometheus (SchedulerOptions): the pods' runs kept from the deliveries,
// handed to the request meter, and the usage meter started, while this replica acts.
class Metering {
 public:
  explicit Metering(const SchedulerOptions& o)
      : o_(o), runs_(o.controller.scheduler_name), books_(std::make_shared<BookBox>()) {}
  bool enabled() const { return o_.request_meter || o_.start_usage_meter; }
  bool tracking() const { return request_ || track_; }
  Status Open() {  // the ledger opened at start: a bad path fails before anything runs
    if (o_.start_usage_meter) track_ = std::make_shared<RequestTrackSource>();
    if (!o_.request_meter) return Status::Ok();
    auto m = RequestMeter::Start(*o_.request_meter);
    if (!m.ok()) return m.status();
    request_ = std::move(m).value();
    return Status::Ok();
  }
  // A delivery, before the Controller takes it.
  void See(const std::string& kind, const kubeclient::Delta& d, Millis now) {
    if (!tracking()) return;
    const bool pod = kind == "Pod";
    if (!pod && kind != "Node") return;
    switch (d.op) {
      case kubeclient::Delta::Op::kSynced:
        pod ? runs_.SyncedPods(d.items, now) : runs_.SyncedNodes(d.items);
        break;
      case kubeclient::Delta::Op::kUpsert:
        pod ? runs_.UpsertPod(d.object, now) : runs_.UpsertNode(d.object);
        break;
      case kubeclient::Delta::Op::kDelete:
        pod ? runs_.RemovePod(d.object, now) : runs_.RemoveNode(d.object);
        break;
    }
  }
  // After a cycle of an acting replica.
  Status Acting(const Controller& c, Millis now) {
    if (!enabled() || now < due_) return Status::Ok();
    due_ = now + o_.meter_every;
    std::vector<PriceBook> books = o_.price_books.empty() ? c.PriceBooks() : o_.price_books;
    if (o_.start_usage_meter) {
      books_->Set(books);
      runs_.Retire(track_->sealed_before());
      track_->Submit({now, runs_.Segments(now), {}});
      if (!usage_) {
        auto u = o_.start_usage_meter([box = books_] { return box->Get(); },
                                      [track = track_](Millis from, Millis to, bool closed) {
                                        return track->Track(from, to, closed);
                                      });
        if (!u.ok()) return u.status();
        usage_ = std::move(u).value();
      }
    }
    if (request_) {
      runs_.Retire(request_->sealed_before());
      request_->Submit({now, runs_.Segments(now), std::move(books)});
    }
    return Status::Ok();
  }

 private:
  const SchedulerOptions& o_;
  PodRuns runs_;
  std::shared_ptr<BookBox> books_;
  std::unique_ptr<RequestMeter> request_;
  std::shared_ptr<RequestTrackSource> track_;  // --meter-prometheus: for the meter job
  std::shared_ptr<void> usage_;
  Millis due_ = 0;
};

}  // namespace

Status CheckApiServer(const kubeclient::KubeConfig& kube) {
  kubeclient::ClientOptions o;
  o.read_timeout = 10000;
  auto c = ApiClient::Connect(kube, o);
  if (!c.ok()) return c.status();
  auto v = (*c)->Get("/version");
  if (!v.ok()) return Status::Unavailable(v.message());
  if (v->status != 200)
    return Status::Unavailable("kube-apiserver at " + kube.server +
                               " answered GET /version with HTTP " + std::to_string(v->status) +
                               ": " + kubeclient::StatusMessage(v->body));
  auto n = (*c)->Get("/api/v1/nodes", {{"limit", "1"}});
  if (!n.ok()) return Status::Unavailable(n.message());
  if (n->status == 401 || n->status == 403)
    return Status::InvalidArgument("kube-apiserver at " + kube.server +
                                   " refuses these credentials (HTTP " + std::to_string(n->status) +
                                   "): " + kubeclient::StatusMessage(n->body) +
                                   " (deploy/rbac.yaml grants what arbiter scheduler needs)");
  return Status::Ok();
}

namespace {

// The clients that write (bindings, evictions, events): replicas told apart in the API server's
// audit log.
kubeclient::ClientOptions WriterOptions(const SchedulerOptions& o) {
  kubeclient::ClientOptions wo;
  if (o.leader_election) wo.user_agent += "/" + o.leader_election->identity;
  return wo;
}

// RunScheduler's state, and its steps: Start (the connections, informers, Lease and ledger), then
// each turn of Run: the informers' deliveries to the Controller, and once every kind has listed
// and while this replica acts, a cycle and its API calls; Stop.
class SchedulerLoop {
 public:
  SchedulerLoop(const SchedulerOptions& o, const std::atomic<bool>& stop)
      : o_(o),
        stop_(stop),
        resources_(InformerResources()),
        metering_(o),
        controller_(o.controller),
        recorder_(EventOptions(o.controller.scheduler_name)),
        events_(
            o.kube, [this](const std::string& m) { Log(m); }, o.api_connections, 10000,
            WriterOptions(o)) {}

  Status Start();
  // Until `stop`, the Lease lost or the usage meter failed to start.
  Status Run();

 private:
  void Log(const std::string& m) const {
    if (o_.log) o_.log(m);
  }
  void Deliver(std::vector<kubeclient::Delta> deltas);
  bool Listed();  // every informer has listed (which have not is said once, after 15 s)
  bool MayAct() const { return !lease_ || lease_->Acting(WallNow()); }
  void Cycle();         // a Controller step and its calls, events and log
  Status AfterCycle();  // metering
  Status Stop(Status metering_error);

  const SchedulerOptions& o_;
  const std::atomic<bool>& stop_;
  const std::vector<kubeclient::ResourceSpec> resources_;
  std::unique_ptr<ActionPool> writer_;
  kubeclient::DeltaQueue queue_;
  std::vector<std::unique_ptr<kubeclient::Informer>> informers_;
  std::unique_ptr<LeaseRunner> lease_;
  Metering metering_;
  Controller controller_;
  EventRecorder recorder_;
  EventWriter events_;
  std::set<size_t> synced_;
  Millis started_ = WallNow();
  bool announced_ = false, waited_said_ = false;
  bool lost_ = false;  // led, then could not renew: stop acting at once, exit
};

Status SchedulerLoop::Start() {
  auto writer = ActionPool::Connect(o_.kube, WriterOptions(o_), o_.api_connections);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(writer).value();
  kubeclient::InformerOptions io;
  io.watch_timeout_seconds = o_.watch_timeout_seconds;
  io.log = o_.log;
  for (size_t i = 0; i < resources_.size(); ++i) {
    informers_.push_back(
        std::make_unique<kubeclient::Informer>(resources_[i], i, o_.kube, &queue_, io));
    informers_.back()->Start();
  }
  if (o_.leader_election) {
    lease_ = std::make_unique<LeaseRunner>(
        o_.kube, *o_.leader_election, [this](const std::string& m) { Log(m); },
        [this] { queue_.Wake(); });
    if (Status s = lease_->Start(); !s.ok()) return s;
  }
  started_ = WallNow();
  return metering_.Open();
}

void SchedulerLoop::Deliver(std::vector<kubeclient::Delta> deltas) {
  for (auto& d : deltas) {
    const std::string& kind = resources_[d.resource].kind;
    metering_.See(kind, d, WallNow());
    switch (d.op) {
      case kubeclient::Delta::Op::kSynced:
        synced_.insert(d.resource);
        controller_.Synced(kind, std::move(d.items));
        break;
      case kubeclient::Delta::Op::kUpsert:
        controller_.Upsert(kind, std::move(d.object));
        break;
      case kubeclient::Delta::Op::kDelete:
        controller_.Remove(kind, d.object);
        break;
    }
  }
}

bool SchedulerLoop::Listed() {
  if (synced_.size() == resources_.size()) return true;
  if (!waited_said_ && WallNow() - started_ > 15000) {
    std::string missing;
    for (size_t i = 0; i < resources_.size(); ++i)
      if (!synced_.count(i)) missing += (missing.empty() ? "" : ", ") + resources_[i].kind;
    Log("still waiting for the first list of: " + missing);
    waited_said_ = true;
  }
  return false;
}

// No call once the Lease lapsed mid-cycle (the next turn of the loop then stops). The bindings go
// out as the engine places the pods, the rest once the cycle is over.
void SchedulerLoop::Cycle() {
  writer_->Begin(Execute, [this] { return MayAct(); });
  for (Action& a : controller_.Step(WallNow(), [&](Action a) { writer_->Add(std::move(a)); }))
    writer_->Add(std::move(a));
  // Each call's outcome, and its event, as it is answered: a first cycle's thousands of
  // bindings take many seconds, and each Scheduled event goes out with its binding (as
  // kube-scheduler's do), not once the last pod is bound.
  std::vector<EventWrite> writes = recorder_.Flush(WallNow());
  writer_->Finish([&](const Action& action, const std::optional<ActionResult>& result) {
    if (result) controller_.Done(action, *result, WallNow());
    for (const EventRequest& e : controller_.TakeEvents())
      for (EventWrite& w : recorder_.Record(e, WallNow())) writes.push_back(std::move(w));
    if (MayAct()) events_.Submit(std::move(writes));
    writes.clear();
  });
  for (const EventRequest& e : controller_.TakeEvents())
    for (EventWrite& w : recorder_.Record(e, WallNow())) writes.push_back(std::move(w));
  if (MayAct()) events_.Submit(std::move(writes));
  for (const std::string& line : controller_.TakeLog()) Log(line);
}

Status SchedulerLoop::AfterCycle() {
  if (!MayAct()) return Status::Ok();
  return metering_.Acting(controller_, WallNow());
}

Status SchedulerLoop::Run() {
  Status metering_error = Status::Ok();  // the usage meter could not start: exit
  while (!stop_.load()) {
    Millis wait = 1000;
    if (auto due = controller_.NextDue()) wait = std::clamp<Millis>(*due - WallNow(), 0, 1000);
    Deliver(queue_.TakeAll(wait));
    if (!Listed()) continue;
    // Standing by (informers warm, nothing done), or a renewal overdue (paused until it is
    // renewed, or lost).
    if (lease_ && !lease_->Acting(WallNow())) {
      lost_ = lease_->Lost();
      if (lost_) break;
      continue;
    }
    if (!announced_) {
      Log("every informer has listed; scheduling");
      announced_ = true;
    }
    Cycle();
    metering_error = AfterCycle();
    if (!metering_error.ok()) break;
  }
  return Stop(metering_error);
}

Status SchedulerLoop::Stop(Status metering_error) {
  for (auto& i : informers_) i->Stop();
  if (!metering_error.ok()) {
    if (lease_) lease_->Stop(/*release=*/true);
    return metering_error;
  }
  if (!lease_) return Status::Ok();
  lease_->Stop(/*release=*/!lost_);
  if (!lost_) return Status::Ok();
  return Status::Unavailable("lost the Lease " + lease_->Describe() +
                             " (not renewed within the renew deadline, or taken over): "
                             "exiting so that another replica acts alone");
}

}  // namespace

Status RunScheduler(const SchedulerOptions& options, const std::atomic<bool>& stop) {
  SchedulerLoop loop(options, stop);
  if (Status s = loop.Start(); !s.ok()) return s;
  return loop.Run();
}

std::vector<kubeclient::ResourceSpec> InformerResources() { return Resources(); }

}  // namespace arbiter::kubesched
