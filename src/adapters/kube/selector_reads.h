// What a list's selectors read of an object, as a json_sparse::Keep: the labels for a label
// selector, each selected field's path for a field selector. An object kept as text is then
// matched on that part of it alone (json_sparse::Parse), not on its whole tree: the selectors'
// Matches of json_sparse::Prune(object, SelectorReads(...)) are those of the object (a test
// checks it on many objects and selectors). Internal: include it from .cc files.
#pragma once

#include "adapters/json/sparse_parse.h"
#include "adapters/kube/selectors.h"

namespace arbiter::kube {

json_sparse::Keep SelectorReads(const LabelSelector& labels, const FieldSelector& fields);

}  // namespace arbiter::kube
