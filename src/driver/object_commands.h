// The engine commands that load API objects: one place for every driver (`arbiter sim`'s pool at
// time 0, `arbiter serve`'s create/update/delete, `arbiter scheduler`'s informers) to turn the
// policy objects of a ManifestSet into Upsert commands and a deleted object into its Delete
// command. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/engine/command.h"
#include "core/objects.h"

namespace arbiter::driver {

// The Upsert commands of the set's policy objects (not its Nodes, Pods, PodGroups or
// ResourceFlavors: flavors reach the engine inside the ElasticQuotas that name them), in the
// order a pool is built: PoolPolicy, PriorityClasses, QoS, Namespaces, LimitRanges,
// ResourceQuotas, ElasticQuotas, PodDisruptionBudgets, PriceBooks; each kind in the set's order.
std::vector<engine::CommandOp> PolicyUpsertCommands(const ManifestSet& set);

// The command that removes an object of `kind` ("Node", "PriorityClass", ...; "Pod" is not one:
// a pod's deletion needs its workload id) named namespace_/name; nullopt for kinds the engine does
// not keep (ResourceFlavor, PodGroup, unknown kinds).
std::optional<engine::CommandOp> DeleteCommand(const std::string& kind,
                                               const std::string& namespace_,
                                               const std::string& name);

}  // namespace arbiter::driver
