#include "adapters/kube/request_info.h"

#include <cctype>
#include <vector>

namespace arbiter::kube {

namespace {

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > i) out.emplace_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return out;
}

RequestAttributes NonResource(std::string_view method, std::string_view path) {
  RequestAttributes a;
  a.resource_request = false;
  a.path = std::string(path);
  for (char c : method) a.verb += char(std::tolower(static_cast<unsigned char>(c)));
  if (a.verb == "head") a.verb = "get";
  return a;
}

}  // namespace

RequestAttributes RequestAttributesOf(std::string_view method, std::string_view path,
                                      std::string_view watch_param) {
  const std::vector<std::string> s = Segments(path);
  size_t i = 0;
  RequestAttributes a;
  if (s.size() >= 3 && s[0] == "api") {
    i = 2;  // api/VERSION
  } else if (s.size() >= 4 && s[0] == "apis") {
    a.api_group = s[1];
    i = 3;  // apis/GROUP/VERSION
  } else {
    return NonResource(method, path);
  }
  bool watch = watch_param == "true" || watch_param == "1";
  if (s[i] == "watch") {
    watch = true;
    ++i;
  }
  std::vector<std::string> parts(s.begin() + static_cast<long>(i), s.end());
  if (parts.empty()) return NonResource(method, path);
  if (parts[0] == "namespaces" && parts.size() > 1) {
    a.namespace_ = parts[1];
    // namespaces/NS/status and namespaces/NS/finalize are the namespace's own subresources.
    if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize")
      parts.erase(parts.begin(), parts.begin() + 2);
  }
  a.resource = parts[0];
  if (parts.size() >= 2) a.name = parts[1];
  if (parts.size() >= 3) a.subresource = parts[2];
  a.verb = VerbOf(method, !a.name.empty(), watch);
  return a;
}

}  // namespace arbiter::kube
