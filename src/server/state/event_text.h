// core/v1 Events as the daemon keeps them: their wire text, written without a JSON tree, and the
// facts the dashboard reads of them (the preemptions), kept apart so that no one parses the text
// back. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/duration.h"
#include "driver/pod_scheduling.h"
#include "server/state/object_store.h"

namespace arbiter::server {

using Json = nlohmann::json;

// A Preempted / Reclaimed Event of a Pod: its victim and its preemptor (the Event's `related`
// Pod); by_namespace is "" when no workload stopped it (a node removal).
struct Preemption {
  std::string time, type;  // firstTimestamp; "Preempted" or "Reclaimed"
  std::string victim_namespace, victim;
  std::string by_namespace, by;
  bool operator==(const Preemption&) const = default;
};

// A core/v1 Event made from an engine event: where it is stored, its text, its preemption.
struct EventText {
  std::string ns;  // metadata.namespace
  VersionedText text;
  std::optional<Preemption> preemption;
};

// The Event `d` (driver::PodEventOf of an engine event at `at`) about `involved` (a Pod or a
// Node), named `name` with uid `uid`, made at `now`: the bytes kube::WireJson writes of
// KubeEvent's tree (pod_status.h) with metadata.uid set, but for the resourceVersion (the store's).
EventText KubeEventText(Millis at, const driver::PodEvent& d, const Json& involved,
                        const std::string& name, const std::string& uid, Millis now);

// The preemption an Event's tree records, nullopt for other Events (the same as
// KubeEventText's for the Events it makes; for Events read back from a snapshot).
std::optional<Preemption> PreemptionOf(const Json& event);

}  // namespace arbiter::server
