#include "adapters/kubeclient/watch_decoder.h"

#include "adapters/kube/limits.h"

namespace arbiter::kubeclient {

namespace {
std::string ResourceVersionOf(const Json& o) {
  if (!o.is_object()) return "";
  auto m = o.find("metadata");
  if (m == o.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  return rv != m->end() && rv->is_string() ? rv->get<std::string>() : "";
}
}  // namespace

Result<WatchEvent> ParseWatchLine(std::string_view line) {
  // Kubernetes objects nest a few levels; a deep nesting is refused before parsing (the parsed
  // value would be destroyed recursively).
  if (kube::JsonTextNestsDeeperThan(line, kMaxNesting))
    return Status::InvalidArgument("watch event nests deeper than " + std::to_string(kMaxNesting));
  Json j = Json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("watch event is not JSON");
  auto type = j.find("type");
  auto object = j.find("object");
  if (type == j.end() || !type->is_string() || object == j.end() || !object->is_object())
    return Status::InvalidArgument("watch event without a type and an object");
  WatchEvent e;
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ADDED")
    e.type = WatchEvent::Type::kAdded;
  else if (t == "MODIFIED")
    e.type = WatchEvent::Type::kModified;
  else if (t == "DELETED")
    e.type = WatchEvent::Type::kDeleted;
  else if (t == "BOOKMARK")
    e.type = WatchEvent::Type::kBookmark;
  else if (t == "ERROR")
    e.type = WatchEvent::Type::kError;
  else
    return Status::InvalidArgument("watch event of unknown type \"" + t.substr(0, 40) + "\"");
  e.object = std::move(*object);
  if (e.type == WatchEvent::Type::kError) {
    auto code = e.object.find("code");
    e.error_code = code != e.object.end() && code->is_number_integer() ? code->get<int>() : 0;
  } else {
    auto m = e.object.find("metadata");
    if (m == e.object.end() || !m->is_object())
      return Status::InvalidArgument("watch event object without metadata");
  }
  e.resource_version = ResourceVersionOf(e.object);
  return e;
}

void WatchDecoder::Feed(std::string_view bytes) {
  if (!status_.ok()) return;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view head = bytes.substr(0, nl);
    if (partial_.size() + head.size() > max_line_) {
      status_ = Status::ResourceExhausted("watch event larger than " + std::to_string(max_line_) +
                                          " bytes");
      partial_.clear();
      return;
    }
    if (nl == std::string_view::npos) {
      partial_.append(head);
      return;
    }
    if (partial_.empty()) {
      Line(head);
    } else {
      partial_.append(head);
      std::string line = std::move(partial_);
      partial_.clear();
      Line(line);
    }
    if (!status_.ok()) return;
    bytes.remove_prefix(nl + 1);
  }
}

void WatchDecoder::Line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return;
  auto e = ParseWatchLine(line);
  if (!e.ok()) {
    status_ = e.status();
    return;
  }
  ready_.push_back(std::move(e).value());
}

std::optional<WatchEvent> WatchDecoder::Next() {
  if (ready_.empty()) return std::nullopt;
  WatchEvent e = std::move(ready_.front());
  ready_.pop_front();
  return e;
}

Result<ListPage> ParseListBody(std::string_view body) {
  if (body.size() > kMaxListBytes)
    return Status::ResourceExhausted("list answer larger than " + std::to_string(kMaxListBytes) +
                                     " bytes");
  if (kube::JsonTextNestsDeeperThan(body, kMaxNesting))
    return Status::InvalidArgument("list answer nests deeper than " + std::to_string(kMaxNesting));
  Json j = Json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("list answer is not JSON");
  auto items = j.find("items");
  if (items == j.end() || !(items->is_array() || items->is_null()))
    return Status::InvalidArgument("list answer without items");
  ListPage page;
  page.resource_version = ResourceVersionOf(j);
  if (auto m = j.find("metadata"); m != j.end() && m->is_object())
    if (auto c = m->find("continue"); c != m->end() && c->is_string())
      page.continue_token = c->get<std::string>();
  std::string kind = j.value("kind", "");
  if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0)
    kind.resize(kind.size() - 4);
  else
    kind.clear();
  const std::string api_version = j.value("apiVersion", "");
  if (items->is_array()) {
    page.items.reserve(items->size());
    for (auto& item : *items) {
      if (!item.is_object()) return Status::InvalidArgument("list item is not an object");
      auto m = item.find("metadata");
      if (m == item.end() || !m->is_object())
        return Status::InvalidArgument("list item without metadata");
      if (!kind.empty() && !item.contains("kind")) item["kind"] = kind;
      if (!api_version.empty() && !item.contains("apiVersion")) item["apiVersion"] = api_version;
      page.items.push_back(std::move(item));
    }
  }
  return page;
}

std::string StatusMessage(std::string_view body) {
  if (body.size() > kMaxEventBytes || kube::JsonTextNestsDeeperThan(body, kMaxNesting))
    return std::string(body.substr(0, 500));
  Json j = Json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string())
    return j["message"].get<std::string>();
  return std::string(body.substr(0, 500));
}

std::string StatusReason(std::string_view body) {
  if (body.size() > kMaxEventBytes || kube::JsonTextNestsDeeperThan(body, kMaxNesting)) return "";
  Json j = Json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_object() && j.contains("reason") && j["reason"].is_string())
    return j["reason"].get<std::string>();
  return "";
}

}  // namespace arbiter::kubeclient
