#include "server/http/list_pages.h"

#include <algorithm>
#include <utility>

#include "adapters/json/sparse_parse.h"

namespace arbiter::server {

namespace {

// A token's key of the object whose store key is `key`: "ns/name" when `all_namespaces` and the
// object has a namespace, else "name".
std::string TokenKeyOf(const ObjectStore::Key& key, bool all_namespaces) {
  if (!all_namespaces || key.first.empty()) return key.second;
  return key.first + "/" + key.second;
}

}  // namespace

ListRange::ListRange(Frozen frozen) : frozen_(std::move(frozen)), first_(frozen_->first_row()) {
  starts_.reserve(frozen_->chunks() + 1);
  size_t n = 0;
  for (size_t c = 0; c < frozen_->chunks(); ++c) {
    starts_.push_back(n);
    n += frozen_->chunk(c).size();
  }
  starts_.push_back(n);
}

std::pair<size_t, size_t> ListRange::Locate(size_t i) const {
  // The last chunk whose first row is not after the i-th of the range (chunks are never empty).
  const size_t row = first_ + i;
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), row);
  const size_t c = static_cast<size_t>(it - starts_.begin()) - 1;
  return {c, row - starts_[c]};
}

const StoredRef& ListRange::operator[](size_t i) const {
  if (!frozen_) return refs_[i];
  const auto [c, r] = Locate(i);
  return frozen_->chunk(c)[r].second;
}

ObjectStore::Key ListRange::key(size_t i) const {
  if (frozen_) {
    const auto [c, r] = Locate(i);
    return frozen_->chunk(c)[r].first;
  }
  // The tree held while it is read: a compacted object's is parsed for this call alone.
  const std::shared_ptr<const Json> tree = refs_[i].json_ptr();
  const Json& m = tree->at("metadata");
  return {m.value("namespace", ""), m.value("name", "")};
}

ListRange::const_iterator ListRange::begin() const { return {this, 0}; }
ListRange::const_iterator ListRange::end() const { return {this, size()}; }

void ListRange::ToRefs() {
  if (!frozen_) return;
  std::vector<StoredRef> refs(begin(), end());
  frozen_.reset();
  starts_.clear();
  first_ = 0;
  refs_ = std::move(refs);
}

void ListRange::push_back(StoredRef ref) {
  ToRefs();
  refs_.push_back(std::move(ref));
}

void ListRange::pop_back() {
  ToRefs();
  refs_.pop_back();
}

ListRange PickObjects(const ObjectStore& store, const std::string& kind, const std::string& ns,
                      const std::string* node) {
  if (node && kind == "Pod" && !node->empty())
    return ListRange(store.StoredByIndex(kind, PodNodeName, *node, ns));
  if (ns.empty()) return ListRange(store.Freeze(kind));
  if (store.CountNamespace(kind, ns) < kNamespaceRefsBelow)
    return ListRange(store.ListStored(kind, ns));
  return ListRange(store.FreezeNamespace(kind, ns));
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
  // The first index whose key is not below `from` (keys ascend).
  size_t lo = 0, hi = range.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    ObjectStore::Key key = range.key(mid);
    if (!all_namespaces) key.first.clear();
    if (key < from)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool MatchesStored(const StoredObject& o, const json_sparse::Keep& reads,
                   const std::function<bool(const Json&)>& matches, std::string& scratch) {
  if (o.compacted()) {
    scratch.clear();
    o.AppendWireText(scratch);
    Json part;
    if (json_sparse::Parse(scratch, reads, part)) return matches(part);
  }
  return matches(*o.tree());
}

ListPage PageOf(const ListRange& range, size_t begin, size_t limit,
                const std::function<bool(const StoredObject&)>& match, bool all_namespaces) {
  ListPage page;
  size_t i = begin;
  for (auto it = range.begin() + static_cast<std::ptrdiff_t>(begin); i < range.size(); ++i, ++it) {
    if (limit > 0 && page.items.size() >= limit) break;
    const StoredObject& o = it->stored();
    if (!match || match(o)) page.items.push_back(&o);
  }
  if (i < range.size()) {
    page.continue_key = TokenKeyOf(range.key(i - 1), all_namespaces) + std::string(1, '\0');
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
