// What an HTTP request asks, in the terms the authorizer takes (auth.h RequestAttributes), parsed
// from its method and path the way kube-apiserver's RequestInfoFactory does:
//   /api/v1/namespaces/NS/pods/NAME/status  -> resource pods, namespace NS, name NAME, sub status
//   /apis/GROUP/VERSION/RESOURCE[/NAME]     -> cluster scope (or all namespaces)
//   /api/v1/namespaces/NS                   -> resource namespaces, name NS, namespace NS
//   /api/v1/watch/...  or ?watch=true       -> verb watch
//   anything else (/api, /apis, /api/v1, /version, /openapi/v3, /metrics): a non-resource request
//   with the lower-cased HTTP method as its verb.
// Verbs: GET/HEAD get (list without a name, watch with watch), POST create, PUT update, PATCH
// patch, DELETE delete (deletecollection without a name). Pure.
#pragma once

#include <string_view>

#include "adapters/kube/auth.h"

namespace arbiter::kube {

// `watch_param`: the request's ?watch= value ("true" or "1" asks for a watch).
RequestAttributes RequestAttributesOf(std::string_view method, std::string_view path,
                                      std::string_view watch_param);

}  // namespace arbiter::kube
