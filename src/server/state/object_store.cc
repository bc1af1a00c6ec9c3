#include "server/state/object_store.h"

#include <algorithm>
#include <unordered_set>

#include "adapters/kube/status.h"
#include "server/state/packed_text.h"

namespace arbiter::server {

class HotTrees {
 public:
  explicit HotTrees(size_t capacity) : capacity_(capacity) {}

  // Lists `o` first (most recently used).
  void Touch(const StoredObject* o) {
    std::lock_guard<std::mutex> l(mu_);
    if (head_ == o) return;
    if (o->listed_) Unlink(o);
    o->listed_ = true;
    o->prev_ = nullptr;
    o->next_ = head_;
    if (head_) head_->prev_ = o;
    head_ = o;
    if (!tail_) tail_ = o;
    ++size_;
  }
  void Forget(const StoredObject* o) {
    std::lock_guard<std::mutex> l(mu_);
    if (o->listed_) Unlink(o);
  }
  // Compacts the least recently used objects beyond the capacity.
  void Trim() {
    std::lock_guard<std::mutex> l(mu_);
    while (size_ > capacity_) {
      const StoredObject* o = tail_;
      Unlink(o);
      o->Seal();  // the text made before the tree goes
      o->tree_.store(nullptr);
    }
  }
  size_t size() const {
    std::lock_guard<std::mutex> l(mu_);
    return size_;
  }

 private:
  void Unlink(const StoredObject* o) {
    (o->prev_ ? o->prev_->next_ : head_) = o->next_;
    (o->next_ ? o->next_->prev_ : tail_) = o->prev_;
    o->prev_ = o->next_ = nullptr;
    o->listed_ = false;
    --size_;
  }
  mutable std::mutex mu_;
  const size_t capacity_;
  const StoredObject* head_ = nullptr;
  const StoredObject* tail_ = nullptr;
  size_t size_ = 0;
};

namespace {
// A string as kube::WireJson writes it: printable ASCII without quote or backslash as is,
// anything else by WireJson itself (escapes, invalid UTF-8).
void AppendWireString(std::string& out, const std::string& s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) return kube::AppendWireJson(out, Json(s));
  out += '"';
  out += s;
  out += '"';
}

// The object's wire text with metadata.resourceVersion `rv`: the bytes kube::WireJson writes of a
// copy with it set, without the copy.
std::string WireTextWithVersion(const Json& obj, const std::string& rv) {
  VersionedText text = WireTextAround(obj);
  AppendWireString(text.head, rv);
  return text.head + text.tail;
}

// A stable address for each distinct string (phases, container names: few), for the process's
// life (as LiveFacts' strings are). Thread-safe.
const std::string* Intern(const std::string& s) {
  static std::mutex mu;
  static std::unordered_set<std::string>* set = new std::unordered_set<std::string>{""};
  std::lock_guard<std::mutex> l(mu);
  return &*set->insert(s).first;
}
}  // namespace

// (The keys of a Json object are in order: the version goes where a copy with it set has it.)
VersionedText WireTextAround(const Json& obj) {
  auto meta = obj.is_object() ? obj.find("metadata") : obj.end();
  if (meta == obj.end() || !meta->is_object()) {
    Json copy = obj;
    copy["metadata"]["resourceVersion"] = "";
    return WireTextAround(copy);
  }
  static const std::string kKey = "resourceVersion";
  VersionedText text;
  std::string* out = &text.head;
  *out = "{";
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it != obj.begin()) *out += ',';
    AppendWireString(*out, it.key());
    *out += ':';
    if (it != meta) {
      kube::AppendWireJson(*out, it.value());
      continue;
    }
    *out += '{';
    bool first = true;
    auto field = [&](const std::string& key) {
      if (!first) *out += ',';
      first = false;
      AppendWireString(*out, key);
      *out += ':';
    };
    for (auto m = meta->begin(); m != meta->end(); ++m) {
      if (out == &text.head && m.key() >= kKey) {
        field(kKey);
        out = &text.tail;
        if (m.key() == kKey) continue;
      }
      field(m.key());
      kube::AppendWireJson(*out, m.value());
    }
    if (out == &text.head) {
      field(kKey);
      out = &text.tail;
    }
    *out += '}';
  }
  *out += '}';
  return text;
}

StoredObject::StoredObject(Json j, std::shared_ptr<HotTrees> hot) {
  SetPodFacts(j);
  tree_ = std::make_shared<const Json>(std::move(j));
  pack_ = hot != nullptr;
  hot_ = std::move(hot);
  if (hot_) hot_->Touch(this);
}

StoredObject::StoredObject(std::string wire_text, const Json& facts, bool pack) {
  SetPodFacts(facts);
  pack_ = pack;
  std::call_once(once_, [&] {
    if (pack_) {
      text_ = PackText(wire_text);
    } else {
      text_ = std::move(wire_text);
      text_.shrink_to_fit();
    }
  });
  made_.store(true, std::memory_order_release);
}

StoredObject::StoredObject(const VersionedText& text, const std::string& rv,
                           std::shared_ptr<HotTrees> hot)
    : hot_(std::move(hot)) {
  static const std::string* const kNone = Intern("");
  pod_phase_ = first_container_ = kNone;
  std::call_once(once_, [&] {
    text_.reserve(text.head.size() + rv.size() + 2 + text.tail.size());
    text_ = text.head;
    rv_at_ = text_.size();
    AppendWireString(text_, rv);
    rv_size_ = text_.size() - rv_at_;
    text_ += text.tail;
  });
  made_.store(true, std::memory_order_release);
}

std::shared_ptr<const StoredObject> StoredObject::WithVersion(const std::string& rv) const {
  if (rv_size_ == 0) return nullptr;
  VersionedText parts{text_.substr(0, rv_at_), text_.substr(rv_at_ + rv_size_)};
  return std::make_shared<const StoredObject>(parts, rv, nullptr);
}

void StoredObject::SetPodFacts(const Json& j) {
  static const std::string* const kNone = Intern("");
  pod_phase_ = first_container_ = kNone;
  if (j.is_object() && j.value("kind", "") == "Pod") {
    if (auto st = j.find("status"); st != j.end() && st->is_object())
      if (auto ph = st->find("phase"); ph != st->end() && ph->is_string())
        pod_phase_ = Intern(ph->get_ref<const std::string&>());
    if (auto sp = j.find("spec"); sp != j.end() && sp->is_object())
      if (auto cs = sp->find("containers"); cs != sp->end() && cs->is_array() && !cs->empty())
        if (auto n = cs->front().find("name");
            cs->front().is_object() && n != cs->front().end() && n->is_string())
          first_container_ = Intern(n->get_ref<const std::string&>());
  }
}

StoredObject::~StoredObject() {
  if (hot_) hot_->Forget(this);
}

const std::string& StoredObject::Kept(std::string* made) const {
  if (made_.load(std::memory_order_acquire)) return text_;  // made: no call_once (a list's many)
  // A compacted object made its text before its tree went: the tree is there when this runs.
  std::call_once(once_, [&] {
    std::string text = kube::WireJson(*tree_.load());
    if (pack_) {
      text_ = PackText(text);
    } else {
      text_ = text;
      text_.shrink_to_fit();
    }
    if (made) *made = std::move(text);
    made_.store(true, std::memory_order_release);
  });
  return text_;
}

std::string StoredObject::WireText() const {
  std::string made;
  const std::string& kept = Kept(&made);
  if (!made.empty()) return made;
  if (!pack_) return kept;
  UnpackText(kept, made);
  return made;
}

void StoredObject::AppendWireText(std::string& out) const {
  std::string made;
  const std::string& kept = Kept(&made);
  if (!made.empty())
    out += made;
  else if (pack_)
    UnpackText(kept, out);
  else
    out += kept;
}

size_t StoredObject::WireTextSize() const {
  std::string made;
  const std::string& kept = Kept(&made);
  if (!made.empty()) return made.size();
  return pack_ ? UnpackedSize(kept) : kept.size();
}

void StoredObject::Seal() const {
  (void)Kept(nullptr);
  tree_.store(nullptr);
}

size_t StoredObject::kept_text_bytes() const {
  return made_.load(std::memory_order_acquire) ? text_.size() : 0;
}

const Json& StoredObject::json() const {
  std::shared_ptr<const Json> t = tree_.load();
  if (!t) {
    auto parsed = std::make_shared<const Json>(Json::parse(WireText()));
    t = tree_.compare_exchange_strong(t, parsed) ? std::move(parsed) : t;
  }
  if (hot_) hot_->Touch(this);
  return *t;  // kept by tree_ until the next Trim
}

std::shared_ptr<const Json> StoredObject::tree() const {
  if (auto t = tree_.load()) return t;
  return std::make_shared<const Json>(Json::parse(WireText()));
}

EventObject::EventObject(std::shared_ptr<const Json> tree)
    : p_(tree ? std::make_shared<const StoredObject>(Json(*tree)) : nullptr) {}

std::shared_ptr<const Json> EventObject::tree() const { return p_ ? p_->tree() : nullptr; }

std::string EventObject::WireText() const { return p_ ? p_->WireText() : "null"; }

void EventObject::AppendWireText(std::string& out) const {
  if (p_)
    p_->AppendWireText(out);
  else
    out += "null";
}

void EventObject::Seal() const {
  if (p_) p_->Seal();
}

void ObjectStore::SetCompact(std::set<std::string> kinds, size_t hot) {
  compact_kinds_ = std::move(kinds);
  hot_ = std::make_shared<HotTrees>(hot);
}

void ObjectStore::Trim() const {
  if (hot_) hot_->Trim();
}

size_t ObjectStore::hot_trees() const { return hot_ ? hot_->size() : 0; }

std::shared_ptr<const StoredObject> ObjectStore::Make(const std::string& kind, Json object) const {
  if (text_kinds_.count(kind) > 0) {
    const Json& rv = object["metadata"]["resourceVersion"];
    return std::make_shared<const StoredObject>(
        WireTextAround(object), rv.is_string() ? rv.get<std::string>() : rv.dump(), hot_);
  }
  const bool compact = hot_ && compact_kinds_.count(kind) > 0;
  return std::make_shared<const StoredObject>(std::move(object), compact ? hot_ : nullptr);
}

const Json* ObjectStore::Get(const std::string& kind, const std::string& ns,
                             const std::string& name) const {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  return it == k->second.end() ? nullptr : it->second.get();
}

std::shared_ptr<const Json> ObjectStore::Share(const std::string& kind, const std::string& ns,
                                               const std::string& name) const {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  return it == k->second.end() ? nullptr : it->second.json_ptr();
}

std::shared_ptr<const StoredObject> ObjectStore::Stored(const std::string& kind,
                                                        const std::string& ns,
                                                        const std::string& name) const {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  return it == k->second.end() ? nullptr : it->second.shared();
}

namespace {
template <typename F>
void ForEach(const std::map<std::string, ObjectStore::Objects>& kinds, const std::string& kind,
             const std::string& ns, F&& f) {
  auto k = kinds.find(kind);
  if (k == kinds.end()) return;
  auto it = ns.empty() ? k->second.begin() : k->second.lower_bound({ns, ""});
  for (; it != k->second.end(); ++it) {
    if (!ns.empty() && it->first.first != ns) break;
    f(it->second);
  }
}
}  // namespace

std::vector<const Json*> ObjectStore::List(const std::string& kind, const std::string& ns) const {
  std::vector<const Json*> out;
  ForEach(kinds_, kind, ns, [&](const StoredRef& o) { out.push_back(o.get()); });
  return out;
}

std::vector<std::shared_ptr<const Json>> ObjectStore::ListShared(const std::string& kind,
                                                                 const std::string& ns) const {
  std::vector<std::shared_ptr<const Json>> out;
  ForEach(kinds_, kind, ns, [&](const StoredRef& o) { out.push_back(o.json_ptr()); });
  return out;
}

std::vector<StoredRef> ObjectStore::ListStored(const std::string& kind,
                                               const std::string& ns) const {
  std::vector<StoredRef> out;
  ForEach(kinds_, kind, ns, [&](const StoredRef& o) { out.push_back(o); });
  return out;
}

ObjectStore::Objects::Frozen ObjectStore::Freeze(const std::string& kind) const {
  auto k = kinds_.find(kind);  // not All(): its empty map is shared by every store
  return k == kinds_.end() ? Objects::Frozen() : k->second.Freeze();
}

namespace {
// The keys of namespace `ns`: [{ns, ""}, {ns + '\0', ""}), as ns + '\0' is the least string
// after ns (so "ns-10" is after the range of "ns-1").
std::pair<ObjectStore::Key, ObjectStore::Key> NamespaceKeys(const std::string& ns) {
  return {{ns, ""}, {ns + std::string(1, '\0'), ""}};
}
}  // namespace

ObjectStore::Objects::Frozen ObjectStore::FreezeNamespace(const std::string& kind,
                                                          const std::string& ns) const {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return Objects::Frozen();
  const auto [lo, hi] = NamespaceKeys(ns);
  return k->second.FreezeRange(lo, hi);
}

size_t ObjectStore::CountNamespace(const std::string& kind, const std::string& ns) const {
  const auto [lo, hi] = NamespaceKeys(ns);
  return All(kind).count(lo, hi);
}

const ObjectStore::Objects& ObjectStore::All(const std::string& kind) const {
  static const Objects kEmpty;
  auto k = kinds_.find(kind);
  return k == kinds_.end() ? kEmpty : k->second;
}

size_t ObjectStore::size() const {
  size_t n = 0;
  for (const auto& [kind, objects] : kinds_) n += objects.size();
  return n;
}

int64_t ObjectStore::Put(const std::string& kind, const std::string& ns, const std::string& name,
                         Json object) {
  const int64_t rv = ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  StoredRef stored(Make(kind, std::move(object)));
  const Json* tree = Indexed(kind) ? stored.get() : nullptr;
  Store(kind, {ns, name}, rv, std::move(stored), tree);
  return rv;
}

int64_t ObjectStore::PutText(const std::string& kind, const std::string& ns,
                             const std::string& name, const VersionedText& text) {
  const int64_t rv = ++rv_;
  StoredRef stored(std::make_shared<const StoredObject>(text, std::to_string(rv), hot_));
  const Json* tree = Indexed(kind) ? stored.get() : nullptr;
  Store(kind, {ns, name}, rv, std::move(stored), tree);
  return rv;
}

// `tree`: the object's, for the indexes of its kind (nullptr when it has none).
void ObjectStore::Store(const std::string& kind, const Key& key, int64_t rv, StoredRef stored,
                        const Json* tree) {
  Objects& objs = kinds_[kind];
  kind_versions_[kind] = rv;
  auto old = objs.find(key);
  if (tree) Reindex(kind, key, old == objs.end() ? nullptr : old->second.get(), tree);
  if (auto o = observers_.find(kind); o != observers_.end())
    o->second(key, old == objs.end() ? nullptr : old->second.get(), stored.get());
  if (old != objs.end()) CountPhase(kind, old->second, -1);
  CountPhase(kind, stored, 1);
  const bool added = objs.insert_or_assign(key, stored);
  events_.push_back(WatchEvent{rv, kind, key.first, added ? "ADDED" : "MODIFIED", stored.shared()});
}

int64_t ObjectStore::Skip(const std::string& kind) {
  const int64_t rv = ++rv_;
  kind_versions_[kind] = rv;
  return rv;
}

bool ObjectStore::Remove(const std::string& kind, const std::string& ns, const std::string& name) {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return false;
  Key key{ns, name};
  auto it = k->second.find(key);
  if (it == k->second.end()) return false;
  const int64_t rv = ++rv_;
  // Its last state with the new resourceVersion, as text: spliced into an object kept as text,
  // else made from the stored tree (not a copy of it, a tree that a DELETED event's readers would
  // seldom read).
  std::shared_ptr<const StoredObject> last = it->second.stored().WithVersion(std::to_string(rv));
  const auto observer = observers_.find(kind);
  if (!last || Indexed(kind) || observer != observers_.end()) {
    const std::shared_ptr<const Json> tree = it->second.json_ptr();  // (a compacted one's parsed)
    Reindex(kind, key, tree.get(), nullptr);
    if (observer != observers_.end()) observer->second(key, tree.get(), nullptr);
    const bool compact = hot_ && compact_kinds_.count(kind) > 0;
    if (!last)
      last = std::make_shared<const StoredObject>(WireTextWithVersion(*tree, std::to_string(rv)),
                                                  *tree, compact);
  }
  CountPhase(kind, it->second, -1);
  k->second.erase(key);
  kind_versions_[kind] = rv;
  events_.push_back(WatchEvent{rv, kind, ns, "DELETED", std::move(last)});
  return true;
}

void ObjectStore::CountPhase(const std::string& kind, const StoredRef& obj, int64_t delta) {
  if (kind != "Pod") return;
  auto [it, added] = pod_phases_.try_emplace(obj.stored().pod_phase(), 0);
  if ((it->second += delta) == 0) pod_phases_.erase(it);
}

int64_t ObjectStore::kind_version(const std::string& kind) const {
  auto it = kind_versions_.find(kind);
  return it == kind_versions_.end() ? loaded_rv_ : it->second;
}

Json ObjectStore::Save() const {
  Json out = Json::object();
  out["resourceVersion"] = rv_;
  Json kinds = Json::object();
  for (const auto& [kind, objs] : kinds_) {
    Json list = Json::array();
    for (const auto& [key, obj] : objs) list.push_back(*obj.json_ptr());  // not kept
    kinds[kind] = std::move(list);
  }
  out["kinds"] = std::move(kinds);
  return out;
}

ObjectStore::Saved ObjectStore::Capture() const {
  Saved out;
  out.resource_version = rv_;
  out.kinds.reserve(kinds_.size());
  for (const auto& [kind, objs] : kinds_) out.kinds.emplace_back(kind, objs.Freeze());
  return out;
}

bool ObjectStore::Saved::Write(const Sink& out, size_t* count) const {
  if (!out("{\"kinds\":{")) return false;
  bool first_kind = true;
  for (const auto& [kind, objs] : kinds) {
    std::string name = first_kind ? "" : ",";
    first_kind = false;
    kube::AppendWireJson(name, kind);
    name += ":[";
    if (!out(name)) return false;
    bool first = true;
    std::string text;
    for (const auto& [key, obj] : objs) {
      if (!first && !out(",")) return false;
      first = false;
      if (count) {
        *count += obj.stored().WireTextSize();
        continue;
      }
      text.clear();
      obj.stored().AppendWireText(text);
      if (!out(text)) return false;
    }
    if (!out("]")) return false;
  }
  return out("},\"resourceVersion\":" + std::to_string(resource_version) + "}");
}

// Write()'s length from the objects' text lengths (a packed text's from its tokens): no text is
// made (a snapshot counts its header before writing it, issue 27).
size_t ObjectStore::Saved::Size() const {
  size_t n = 0;
  (void)Write(
      [&](std::string_view piece) {
        n += piece.size();
        return true;
      },
      &n);
  return n;
}

void ObjectStore::Saved::Append(std::string& out) const {
  (void)Write([&](std::string_view piece) {
    out.append(piece);
    return true;
  });
}

void ObjectStore::Load(Json&& saved) {
  StartLoad();
  for (auto& [kind, list] : saved.at("kinds").items()) {
    LoadKind(kind);
    for (auto& obj : list) LoadObject(kind, std::move(obj));
  }
  FinishLoad(saved.at("resourceVersion").get<int64_t>());
}

void ObjectStore::StartLoad() {
  kinds_.clear();
  pod_phases_.clear();
  for (auto& [kind, indexes] : indexes_)
    for (Index& index : indexes) index.keys.clear();
  events_.clear();
  kind_versions_.clear();
}

void ObjectStore::LoadObject(const std::string& kind, Json&& obj) {
  Objects& objs = kinds_[kind];
  const Json& m = obj.at("metadata");
  Key key{m.value("namespace", ""), m.at("name").get<std::string>()};
  StoredRef stored(Make(kind, std::move(obj)));
  if (Indexed(kind)) Reindex(kind, key, nullptr, stored.get());
  CountPhase(kind, stored, 1);
  objs.insert_or_assign(key, std::move(stored));
  Trim();  // one object at a time: the loaded trees do not pile up
}

void ObjectStore::FinishLoad(int64_t resource_version) {
  rv_ = resource_version;
  loaded_rv_ = rv_;
}

void ObjectStore::AddIndex(const std::string& kind, IndexKey key_of, bool touched) {
  Index index;
  index.key_of = key_of;
  index.track = touched;
  indexes_[kind].push_back(std::move(index));
}

void ObjectStore::Reindex(const std::string& kind, const Key& key, const Json* was,
                          const Json* now) {
  auto ix = indexes_.find(kind);
  if (ix == indexes_.end()) return;
  for (Index& index : ix->second) {
    const std::string a = was ? index.key_of(*was) : "";
    const std::string b = now ? index.key_of(*now) : "";
    if (!a.empty()) {
      if (index.track) index.touched.insert(a);
      if (a != b) {
        auto it = index.keys.find(a);
        if (it != index.keys.end() && it->second.erase(key) && it->second.empty())
          index.keys.erase(it);
      }
    }
    if (!b.empty()) {
      if (index.track) index.touched.insert(b);
      if (a != b) index.keys[b].insert(key);
    }
  }
}

const std::set<ObjectStore::Key>* ObjectStore::IndexedKeys(const std::string& kind, IndexKey key_of,
                                                           const std::string& value) const {
  auto ix = indexes_.find(kind);
  if (ix == indexes_.end() || ix->second.empty()) return nullptr;
  for (const Index& index : ix->second) {
    if (key_of && index.key_of != key_of) continue;
    auto it = index.keys.find(value);
    return it == index.keys.end() ? nullptr : &it->second;
  }
  return nullptr;
}

std::vector<const Json*> ObjectStore::ByIndex(const std::string& kind,
                                              const std::string& value) const {
  std::vector<const Json*> out;
  if (const std::set<Key>* keys = IndexedKeys(kind, nullptr, value))
    for (const Key& key : *keys)
      if (const Json* o = Get(kind, key.first, key.second)) out.push_back(o);
  return out;
}

std::vector<ObjectStore::Key> ObjectStore::IndexedKeysAfter(const std::string& kind,
                                                            const std::string& value,
                                                            const Key& after, size_t max) const {
  std::vector<Key> out;
  const std::set<Key>* keys = IndexedKeys(kind, nullptr, value);
  if (!keys) return out;
  for (auto key = keys->upper_bound(after);
       key != keys->end() && key->first == after.first && out.size() < max; ++key)
    out.push_back(*key);
  return out;
}

std::vector<StoredRef> ObjectStore::StoredByIndex(const std::string& kind, IndexKey key_of,
                                                  const std::string& value,
                                                  const std::string& ns) const {
  std::vector<StoredRef> out;
  const std::set<Key>* keys = IndexedKeys(kind, key_of, value);
  if (!keys) return out;
  const Objects& objs = All(kind);
  out.reserve(ns.empty() ? keys->size() : 0);
  for (auto key = ns.empty() ? keys->begin() : keys->lower_bound({ns, ""});
       key != keys->end() && (ns.empty() || key->first == ns); ++key)
    if (auto it = objs.find(*key); it != objs.end()) out.push_back(it->second);
  return out;
}

std::set<std::string> ObjectStore::TakeTouched(const std::string& kind) {
  std::set<std::string> out;
  auto ix = indexes_.find(kind);
  if (ix == indexes_.end()) return out;
  for (Index& index : ix->second)
    if (index.track) out.merge(std::exchange(index.touched, {}));
  return out;
}

std::string PodNodeName(const Json& pod) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return "";
  auto node = spec->find("nodeName");
  return node != spec->end() && node->is_string() ? node->get<std::string>() : "";
}

}  // namespace arbiter::server
