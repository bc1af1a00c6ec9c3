#include "server/http/list_pages.h"

#include <algorithm>
#include <utility>

namespace arbiter::server {

namespace {

std::string KeyOf(const Json& o, bool all_namespaces) {
  const Json& m = o.at("metadata");
  std::string name = m.value("name", "");
  if (!all_namespaces) return name;
  std::string ns = m.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

ObjectStore::Key StoreKeyOf(const Json& o) {
  const Json& m = o.at("metadata");
  return {m.value("namespace", ""), m.value("name", "")};
}

}  // namespace

ListRange PickObjects(const ObjectStore& store, const std::string& kind, const std::string& ns,
                      const std::string* node) {
  if (!node || kind != "Pod" || node->empty()) return store.ListStored(kind, ns);
  return store.StoredByIndex(kind, PodNodeName, *node, ns);
}

size_t StartIndex(const ListRange& range, const std::string& start, bool all_namespaces) {
  // The start key as a store key: "ns/name\0" splits at its first '/' (names have none).
  ObjectStore::Key from;
  const size_t slash = start.find('/');
  if (all_namespaces && slash != std::string::npos) {
    from = {start.substr(0, slash), start.substr(slash + 1)};
  } else if (all_namespaces) {
    from = {start, ""};  // a namespace alone ("ns\0"): after every key of "ns"
  } else {
    from = {"", start};
  }
  auto it = std::lower_bound(range.begin(), range.end(), from,
                             [&](const StoredRef& o, const ObjectStore::Key& k) {
                               ObjectStore::Key key = StoreKeyOf(*o.json_ptr());
                               if (!all_namespaces) key.first.clear();
                               return key < k;
                             });
  return static_cast<size_t>(it - range.begin());
}

ListPage PageOf(const ListRange& range, size_t begin, size_t limit,
                const std::function<bool(const Json&)>& match, bool all_namespaces) {
  ListPage page;
  size_t i = begin;
  for (; i < range.size(); ++i) {
    if (limit > 0 && page.items.size() >= limit) break;
    const StoredObject& o = range[i].stored();
    if (!match || match(*o.tree())) page.items.push_back(&o);
  }
  if (i < range.size()) {
    page.continue_key = KeyOf(*range[i - 1].json_ptr(), all_namespaces) + std::string(1, '\0');
    if (!match) page.remaining = static_cast<int64_t>(range.size() - i);
  }
  return page;
}

void ListSnapshots::Expire(int64_t now_ms) {
  for (Pool* pool : {&whole_, &nodes_})
    for (auto it = pool->kept.begin(); it != pool->kept.end();) {
      if (now_ms - it->second.at_ms > ttl_ms_) {
        pool->objects -= it->second.range->size();
        it = pool->kept.erase(it);
      } else {
        ++it;
      }
    }
}

void ListSnapshots::Put(const std::string& kind, const std::string& ns, int64_t rv,
                        std::shared_ptr<const ListRange> range, int64_t now_ms,
                        const std::string* node) {
  std::lock_guard<std::mutex> l(mu_);
  Expire(now_ms);  // both pools: a range is let go after its TTL whichever lists come
  Pool& pool = PoolOf(node);
  Key key{kind, ns, node ? *node : std::string(), rv};
  if (pool.kept.count(key) || range->size() > pool.max_objects || pool.max_ranges == 0) return;
  // The oldest of the same pool (by when kept, then key) go first.
  while (!pool.kept.empty() &&
         (pool.kept.size() >= pool.max_ranges || pool.objects + range->size() > pool.max_objects)) {
    auto oldest =
        std::min_element(pool.kept.begin(), pool.kept.end(), [](const auto& a, const auto& b) {
          return std::tie(a.second.at_ms, a.first) < std::tie(b.second.at_ms, b.first);
        });
    pool.objects -= oldest->second.range->size();
    pool.kept.erase(oldest);
  }
  pool.objects += range->size();
  pool.kept.emplace(std::move(key), Kept{std::move(range), now_ms});
}

std::shared_ptr<const ListRange> ListSnapshots::Find(const std::string& kind, const std::string& ns,
                                                     int64_t rv, int64_t now_ms,
                                                     const std::string* node) {
  std::lock_guard<std::mutex> l(mu_);
  Expire(now_ms);  // both pools: a range is let go after its TTL whichever lists come
  Pool& pool = PoolOf(node);
  auto it = pool.kept.find(Key{kind, ns, node ? *node : std::string(), rv});
  return it == pool.kept.end() ? nullptr : it->second.range;
}

size_t ListSnapshots::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return whole_.kept.size() + nodes_.kept.size();
}

}  // namespace arbiter::server
