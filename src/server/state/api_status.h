// A Cluster's refusal (ApiError) as kube-apiserver's Status for a request on resource `r`
// (ns/name): the HTTP API's answer, and the text of a Job's FailedCreate event.
#pragma once

#include <string>

#include "adapters/kube/status.h"
#include "server/state/cluster.h"

namespace arbiter::server {

kube::KubeStatus ToKube(const ApiError& e, const kube::ResourceInfo& r, const std::string& ns,
                        const std::string& name);
// The Status message of the refused create or update `m` (`pods "x" is forbidden: exceeded quota:
// ...`): what the command tape keeps of a Job controller's refused create, and what its
// FailedCreate event says. A kInternal error's message as it is (a refusal replayed from the tape).
std::string RefusalText(const Mutation& m, const ApiError& e);

}  // namespace arbiter::server
