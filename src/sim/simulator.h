// Drives the engine under a virtual clock with the Pods' simulation annotations, and collects what
// the reports need.
//
// For each instant t, in order: the work model's timers due at t (PodFinished, VictimExited),
// then RemoveNode / UpsertNode for Nodes whose arbiter.dev/remove-time / add-time is t (removals
// first, each group by name), then SubmitPod for arrivals at t (manifest order among equal
// times), then a Tick. The clock jumps to the next arrival, timer, node change or engine wake-up.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/objects.h"
#include "driver/recorder.h"
#include "driver/work_model.h"
#include "sim/pending_pods.h"

namespace arbiter::sim {

// Simulations cover at most about ten years of virtual time (hourly billing rows stay bounded).
inline constexpr Millis kMaxHorizon = Millis{87600} * 3600 * 1000;

struct SimOptions {
  std::optional<Millis> until;  // stop the clock here; default: when nothing is left to happen
  uint64_t seed = 0;
  bool check_invariants = false;
  std::optional<PlacementPolicyName> placement;
  // Called with the virtual time now and then (progress output); may be empty.
  std::function<void(Millis now, size_t submitted, size_t total)> progress;
  // Called with every command the simulation gives the engine, before it is applied (a journal;
  // tests replay it).
  std::function<void(const engine::Command&)> on_command;
};

// When a node is in the pool of a run that ends at `end`: from its arbiter.dev/add-time to its
// remove-time (or the end). Empty (from >= to) when it never joined before the end.
struct NodeWindow {
  Millis from = 0;
  Millis to = 0;
};
NodeWindow NodeWindowOf(const Node& node, Millis end);
// Whether the node is in the pool at instant t (joined at or before t, not yet removed).
bool NodePresentAt(const Node& node, Millis t);

// FGD's view of a manifest's pods (their typical shapes).
placement::WorkloadProfile ProfileOfPods(const std::vector<Pod>& pods);

class Simulation {
 public:
  // Builds the pool from the manifests (policy objects and the nodes present at time 0). The
  // manifests must outlive the simulation.
  static Result<std::unique_ptr<Simulation>> Create(const ManifestSet& manifests,
                                                    const SimOptions& options);
  // The same, owning the manifests: the Pods wait encoded (PendingPods, about half their memory)
  // and each batch of them is given back once submitted (a million-pod run does not hold the
  // manifest's pods and the run's records at once), so manifests().pods is empty afterwards; the
  // pods still to come are saved by Save().
  static Result<std::unique_ptr<Simulation>> Create(ManifestSet&& manifests,
                                                    const SimOptions& options);
  ~Simulation();

  // Runs until nothing is left to happen, or until the next instant would pass `until`.
  Status Run(std::optional<Millis> until);
  // Closes the books at `end` (>= the clock): runs still holding resources end there, pending
  // time counts up to there. The simulation is done after this.
  driver::SimResult Finish(Millis end);

  Millis now() const { return now_; }  // the last instant processed
  // Where the clock stands: the `until` of the last Run (the clock stopped there), else now().
  Millis clock() const { return paused_at_; }
  size_t submitted() const { return submitted_before_ + next_arrival_; }
  size_t total_pods() const { return submitted_before_ + arrivals_total_; }
  const ManifestSet& manifests() const { return *m_; }
  engine::Engine& engine() { return *engine_; }

  // Pause and resume (docs/snapshot.md): the whole simulation as bytes (the engine's snapshot,
  // the work model's timers, the arrivals and node changes still to come, what the reports have
  // collected so far, and the manifests' nodes and price books), and a simulation restored from
  // them. Restored with another `placement`, the rest of the run uses that policy.
  std::string Save() const;
  static Result<std::unique_ptr<Simulation>> Resume(std::string_view bytes,
                                                    const SimOptions& options);
  // 3: workloads' flavors; 4: node taints, pod tolerations and node affinity; 5: pod affinity,
  // anti-affinity and topology spread constraints, PoolPolicy spec.latency.schedInterval; 6: the
  // engine snapshot 9 inside, PoolPolicy preemption.victimOrder LeastLostWork; 7: the engine
  // snapshot 10 inside, PoolPolicy preemption.requeuingStrategy; 8: the engine snapshot 11
  // inside, requeuingStrategy.immediateRequeues, the workloads' time held out of the queue (2 to 7
  // still read); 9: the exit codes (arbiter.dev/exit-code) of the pods to come and the workloads
  static constexpr uint32_t kStateVersion = 9;

 private:
  Simulation();
  Status Apply(engine::Command&& c);
  Status Setup();
  // The next arrival's submit time; none when every pod is submitted.
  std::optional<Millis> NextArrival() const;
  // Submits the next arrival.
  Status SubmitNext();
  // Save's last section: the exit codes of the pods to come and of the workloads (sim_state.cc).
  void WriteExitCodes(serial::Writer& w) const;

  const ManifestSet* m_ = nullptr;
  std::unique_ptr<ManifestSet>
      owned_;  // a resumed simulation's nodes, price books and pods to come
  SimOptions options_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<driver::Recorder> recorder_;
  driver::WorkTimers timers_;
  // Borrowing its manifests (or resumed): the pods in submission order.
  std::vector<const Pod*> arrivals_;
  // Created owning its manifests: the pods to come instead, in submission order, each popped
  // once submitted (the manifests' pods are gone once set up).
  PendingPods pods_to_come_;
  bool release_submitted_ = false;
  size_t arrivals_total_ = 0;  // pods to submit (after submitted_before_)
  size_t next_arrival_ = 0;
  size_t submitted_before_ = 0;  // a resumed simulation: pods submitted before it was saved
  struct NodeChange {
    Millis time;
    bool add;
    const Node* node;
  };
  std::vector<NodeChange> changes_;
  size_t next_change_ = 0;
  Millis now_ = 0;
  Millis paused_at_ = 0;
  Millis same_instant_ = -1;
  int64_t steps_at_instant_ = 0;
  Millis last_progress_ = -1;
};

// Runs the pods of `manifests` on its pool to the end (or options.until): Create, Run, Finish.
Result<driver::SimResult> RunSimulation(const ManifestSet& manifests, const SimOptions& options);

}  // namespace arbiter::sim
