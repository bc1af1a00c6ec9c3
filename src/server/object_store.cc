#include "server/object_store.h"

namespace arbiter::server {

const Json* ObjectStore::Get(const std::string& kind, const std::string& ns,
                             const std::string& name) const {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  return it == k->second.end() ? nullptr : &it->second;
}

std::vector<const Json*> ObjectStore::List(const std::string& kind, const std::string& ns) const {
  std::vector<const Json*> out;
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return out;
  auto it = ns.empty() ? k->second.begin() : k->second.lower_bound({ns, ""});
  for (; it != k->second.end(); ++it) {
    if (!ns.empty() && it->first.first != ns) break;
    out.push_back(&it->second);
  }
  return out;
}

const ObjectStore::Objects& ObjectStore::All(const std::string& kind) const {
  static const Objects kEmpty;
  auto k = kinds_.find(kind);
  return k == kinds_.end() ? kEmpty : k->second;
}

int64_t ObjectStore::Put(const std::string& kind, const std::string& ns, const std::string& name,
                         Json object) {
  const int64_t rv = ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  Objects& objs = kinds_[kind];
  auto [it, added] = objs.insert_or_assign({ns, name}, std::move(object));
  events_.push_back(WatchEvent{rv, kind, ns, added ? "ADDED" : "MODIFIED", it->second});
  return rv;
}

bool ObjectStore::Remove(const std::string& kind, const std::string& ns, const std::string& name) {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return false;
  auto it = k->second.find({ns, name});
  if (it == k->second.end()) return false;
  const int64_t rv = ++rv_;
  Json last = std::move(it->second);
  k->second.erase(it);
  last["metadata"]["resourceVersion"] = std::to_string(rv);
  events_.push_back(WatchEvent{rv, kind, ns, "DELETED", std::move(last)});
  return true;
}

Json ObjectStore::Save() const {
  Json out = Json::object();
  out["resourceVersion"] = rv_;
  Json kinds = Json::object();
  for (const auto& [kind, objs] : kinds_) {
    Json list = Json::array();
    for (const auto& [key, obj] : objs) list.push_back(obj);
    kinds[kind] = std::move(list);
  }
  out["kinds"] = std::move(kinds);
  return out;
}

void ObjectStore::Load(const Json& saved) {
  kinds_.clear();
  events_.clear();
  rv_ = saved.at("resourceVersion").get<int64_t>();
  for (const auto& [kind, list] : saved.at("kinds").items()) {
    Objects& objs = kinds_[kind];
    for (const auto& obj : list) {
      const Json& m = obj.at("metadata");
      objs.emplace(Key{m.value("namespace", ""), m.at("name").get<std::string>()}, obj);
    }
  }
}

}  // namespace arbiter::server
