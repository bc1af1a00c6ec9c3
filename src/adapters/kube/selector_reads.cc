#include "adapters/kube/selector_reads.h"

#include <string>
#include <string_view>
#include <vector>

namespace arbiter::kube {

namespace {

// Adds the dotted `path` to `keep`, kept whole at its end; a member already kept whole covers
// everything under it.
void AddPath(json_sparse::Keep& keep, std::string_view path) {
  json_sparse::Keep* at = &keep;
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view step = path.substr(0, dot);
    json_sparse::Keep* next = nullptr;
    for (auto& m : at->members)
      if (m.name == step) next = &m.keep;
    if (!next) {
      at->members.push_back({std::string(step), json_sparse::Members({})});
      next = &at->members.back().keep;
    }
    if (dot == std::string_view::npos) {
      *next = json_sparse::Whole();
      return;
    }
    if (next->mode == json_sparse::Keep::Mode::kWhole) return;
    at = next;
    path = path.substr(dot + 1);
  }
}

}  // namespace

json_sparse::Keep SelectorReads(const LabelSelector& labels, const FieldSelector& fields) {
  json_sparse::Keep keep = json_sparse::Members({});
  if (!labels.Empty()) AddPath(keep, "metadata.labels");
  for (const FieldRequirement& r : fields.requirements) {
    if (r.field == "status.podIPs") continue;  // FieldValue: always "" (nothing read)
    AddPath(keep, r.field == "source" ? "source.component" : r.field);
  }
  return keep;
}

}  // namespace arbiter::kube
