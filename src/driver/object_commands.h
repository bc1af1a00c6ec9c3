// The engine commands that load API objects: the one place where every driver (`arbiter sim`'s
// pool at time 0 and trace replay's policy file, `arbiter serve`'s create/update/delete,
// `arbiter scheduler`'s informers) turns objects into engine commands. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/api_kinds.h"
#include "core/engine/command.h"
#include "core/objects.h"

namespace arbiter::driver {

// The Upsert commands of the set's policy objects (not its Nodes, Pods, PodGroups or
// ResourceFlavors: flavors reach the engine inside the ElasticQuotas that name them), in the
// order a pool is built: PoolPolicy, PriorityClasses, QoS, Namespaces, LimitRanges,
// ResourceQuotas, ElasticQuotas, PodDisruptionBudgets, PriceBooks; each kind in the set's order.
std::vector<engine::CommandOp> PolicyUpsertCommands(const ManifestSet& set);

// The command that creates or updates the first object of `kind` in `set` (a set the loader read
// from one object): its Upsert (a Node's with order key 0), a Pod's SubmitPod (queued, any GPU
// model); nullopt for kinds the engine does not keep (Event, ResourceFlavor, PodGroup) and when
// the set holds no object of `kind`.
std::optional<engine::CommandOp> UpsertCommand(KindId kind, const ManifestSet& set);

// The command that removes an object of `kind` named namespace_/name; nullopt for a Pod (its
// deletion needs its workload id) and for kinds the engine does not keep (Event, ResourceFlavor,
// PodGroup, and names not in core/api_kinds.h).
std::optional<engine::CommandOp> DeleteCommand(KindId kind, const std::string& namespace_,
                                               const std::string& name);
std::optional<engine::CommandOp> DeleteCommand(const std::string& kind,
                                               const std::string& namespace_,
                                               const std::string& name);

}  // namespace arbiter::driver
