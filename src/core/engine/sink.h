// Where the engine's outputs go. The engine keeps no history: an event or a run record is given to
// the sinks when it happens, a finished workload's final status when it leaves, and then the
// engine forgets them, so its memory is bounded by what is live (queued, running, terminating
// workloads; nodes; policy objects), not by how long it has run. The simulator collects
// everything for its reports; a daemon journals and streams them.
//
// Calls happen synchronously inside Engine::Apply, in the order things happen; a sink must not
// call back into the engine. Sinks are optional (nullptr: outputs are dropped).
#pragma once

#include "core/engine/types.h"

namespace arbiter::engine {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnEvent(const Event& event) = 0;
  // A workload reached a final phase (Succeeded, Failed, Rejected, Preempted, Deleted): its final
  // status, after its last event and before Apply returns. Its id is not used again.
  virtual void OnFinished(const WorkloadStatus& /*status*/) {}
  // A sink that never looks at final statuses says so, and the engine does not build them.
  virtual bool WantsFinalStatus() const { return true; }
  // A live workload's status may have changed without an Event of its own: its message's text
  // (the engine emits one event per kind of reason per pending spell), a backfill reservation, a
  // nomination, or its borrowed flag (a namespace's borrowers fall back within its min together).
  // What keeps a copy of WorkloadStatus reads it again (Engine::Get) once Apply returns. Also
  // called for changes an Event reports.
  virtual void OnRestated(WorkloadId /*id*/) {}
};

class RunSink {
 public:
  virtual ~RunSink() = default;
  // A run ended (the workload left its node).
  virtual void OnRun(const RunRecord& run) = 0;
};

}  // namespace arbiter::engine
