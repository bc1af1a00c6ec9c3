// A manifest load as bytes, for tests that compare two ways of loading the same objects:
// diagnostics (with their source lines, or without when the two ways cannot share them), Pods,
// Nodes and PriceBooks serialized, and the number of objects of every other kind.
#pragma once

#include <string>

#include "adapters/yaml/manifest_loader.h"
#include "core/object_serial.h"

namespace arbiter::yaml::testing {

inline std::string Fingerprint(const ManifestLoad& l, bool lines = true) {
  std::string s;
  for (const auto& d : l.diagnostics.items)
    s += lines ? d.ToString() + "\n"
               : std::to_string(static_cast<int>(d.severity)) + "|" + d.kind + "|" + d.name + "|" +
                     d.field_path + "|" + d.message + "\n";
  serial::Writer w;
  serial::Write(w, l.set.pods);
  serial::Write(w, l.set.nodes);
  serial::Write(w, l.set.price_books);
  s += w.bytes();
  for (size_t n : {l.set.namespaces.size(), l.set.resource_quotas.size(), l.set.limit_ranges.size(),
                   l.set.priority_classes.size(), l.set.pdbs.size(), l.set.elastic_quotas.size(),
                   l.set.qos.size(), l.set.pod_groups.size(), l.set.resource_flavors.size(),
                   static_cast<size_t>(l.set.pool_policy.has_value())})
    s += "|" + std::to_string(n);
  return s;
}

}  // namespace arbiter::yaml::testing
