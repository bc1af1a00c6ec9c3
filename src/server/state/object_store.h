// The API objects of `arbiter serve`, as Kubernetes JSON, keyed by kind / namespace / name.
//
// Every write takes the next value of one global resourceVersion counter (as etcd's revision)
// and is written into the object's metadata.resourceVersion; the change is also recorded as a
// watch event (ADDED / MODIFIED / DELETED with the object as of that version) for the watch log.
// A stored object is immutable (a write replaces it), so the store, its watch events and readers
// share one copy: Share() and ListShared() hand it out to be serialized after the lock is let go.
// Compact form (SetCompact): the objects of the many-object kinds (Pods) are kept as their wire
// text, packed (packed_text.h), which lists, gets and watches unpack and write out, and only the
// most recently used ones keep their tree too; a read of another parses its text again (about
// 100 bytes of packed text for a running Pod instead of 827 of text or about 6 KB of tree).
// Trim() lets the trees read since go, between mutations.
// Pure: no I/O, no threads, no clock. Not thread-safe (the Cluster's lock guards it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/state/chunk_map.h"

namespace arbiter::server {

using Json = nlohmann::json;

class StoredObject;

// The object of a watch event: a stored object (shared with the store), or a tree given as is.
class EventObject {
 public:
  EventObject() = default;
  EventObject(std::shared_ptr<const StoredObject> p) : p_(std::move(p)) {}  // NOLINT: implicit
  EventObject(std::shared_ptr<const Json> tree);                            // NOLINT: implicit
  explicit operator bool() const { return p_ != nullptr; }
  // The object's tree, shared (parsed again if the store keeps it as text only). Thread-safe.
  std::shared_ptr<const Json> tree() const;
  std::string WireText() const;                 // thread-safe; "null" for none
  void AppendWireText(std::string& out) const;  // the same, appended; thread-safe
  // A removed object's last state (a DELETED event's, which no store reader holds): its text made
  // and its tree let go (WatchLog::Publish, off the daemon's lock). Thread-safe.
  void Seal() const;

 private:
  std::shared_ptr<const StoredObject> p_;
};

// One change, as a watch stream delivers it.
struct WatchEvent {
  int64_t resource_version = 0;
  std::string kind;        // "Pod", "Node", ...
  std::string namespace_;  // "" for cluster-scoped kinds
  std::string type;        // ADDED, MODIFIED, DELETED
  EventObject object;      // shared with the store (never changed)
};

// The stored objects of the compact kinds whose trees are kept, most recently used first: the
// rest are kept as their wire text alone, and parsed again when read (ObjectStore::Trim).
// Thread-safe (its own mutex: a stored object may be let go of by any thread).
class HotTrees;

// An object's wire text around the value of its metadata.resourceVersion: the text is head, the
// version as a JSON string, then tail. What an object kept as text alone
// (ObjectStore::SetTextKinds) is made from, so that a write with another version (a DELETED
// event's) is spliced, not parsed.
struct VersionedText {
  std::string head, tail;
};
// The wire text (kube::WireJson's bytes) of `obj` split so, whatever resourceVersion it holds.
VersionedText WireTextAround(const Json& obj);

// A stored object, and its wire text (kube::WireJson's bytes), made once. Objects of the compact
// kinds (Pods: the many) keep their text packed (packed_text.h) and are kept as that text alone
// once the store trims them, their trees parsed again on a read; the others keep their tree and
// their plain text, made once by the first list that writes it.
class StoredObject {
 public:
  // hot: the hot trees of a compact kind (its text packed), nullptr for a kind never compacted.
  StoredObject(Json j, std::shared_ptr<HotTrees> hot);
  explicit StoredObject(Json j) : StoredObject(std::move(j), nullptr) {}
  // An object given as its wire text, kept packed if `pack` (a compact kind's), its tree parsed
  // when read; `facts` is its tree, read for the Pod facts below and not kept.
  StoredObject(std::string wire_text, const Json& facts, bool pack);
  // An object kept as its plain wire text alone, `text` with resourceVersion `rv`: its tree is
  // parsed when read (and kept among the hot trees until the next Trim, if `hot`).
  StoredObject(const VersionedText& text, const std::string& rv, std::shared_ptr<HotTrees> hot);
  ~StoredObject();
  StoredObject(const StoredObject&) = delete;
  StoredObject& operator=(const StoredObject&) = delete;

  // The tree, for readers under the store owner's lock: parsed and kept (among the hot trees) if
  // the object was compacted; valid until the next ObjectStore::Trim.
  const Json& json() const;
  // The tree, shared: for readers outside the lock (a compacted object's is parsed, not kept).
  std::shared_ptr<const Json> tree() const;
  // The wire text: unpacked if it is kept packed, made (and kept) by the first call. Thread-safe.
  std::string WireText() const;
  void AppendWireText(std::string& out) const;  // the same, appended to `out`; thread-safe
  // The wire text's length (a packed text's from its tokens, none made). Thread-safe.
  size_t WireTextSize() const;
  // Makes the text and lets the tree go: for an object no store reader holds (a removed object's
  // last state, in a DELETED watch event). Thread-safe.
  void Seal() const;
  // The same object with resourceVersion `rv`, as text alone: for an object made from a
  // VersionedText, spliced; nullptr for others (their text is written from their tree).
  std::shared_ptr<const StoredObject> WithVersion(const std::string& rv) const;
  bool compacted() const { return tree_.load() == nullptr; }
  bool packed() const { return pack_; }
  // The bytes its text keeps in memory (packed or not), 0 before it is made.
  size_t kept_text_bytes() const;
  // A Pod's facts that /metrics reads of every pod, kept beside the text so that a scrape
  // parses no compacted pod: status.phase ("" when unset) and the first container's name.
  const std::string& pod_phase() const { return *pod_phase_; }
  const std::string& first_container() const { return *first_container_; }

 private:
  friend class HotTrees;
  void SetPodFacts(const Json& j);
  // The kept text, made once; `made` (if not null) gets the plain text when this call made it.
  const std::string& Kept(std::string* made) const;
  // Interned (the few distinct values are kept for the process's life): 16 bytes a Pod, not 64.
  const std::string* pod_phase_;
  const std::string* first_container_;
  mutable std::atomic<std::shared_ptr<const Json>> tree_;
  mutable std::once_flag once_;
  mutable std::atomic<bool> made_{false};
  bool pack_ = false;
  mutable std::string text_;  // the wire text, packed (PackText) if pack_
  // Made from a VersionedText: where its resourceVersion's JSON string is in text_ (0, 0: not).
  size_t rv_at_ = 0, rv_size_ = 0;
  std::shared_ptr<HotTrees> hot_;
  // HotTrees' list (guarded by its mutex).
  mutable const StoredObject* prev_ = nullptr;
  mutable const StoredObject* next_ = nullptr;
  mutable bool listed_ = false;
};

// Points at a stored object and reads as a `const Json*` does (*p, p->at(...), p.get()): under
// the store owner's lock only (outside it, use stored().tree() or stored().WireText()).
class StoredRef {
 public:
  StoredRef() = default;
  explicit StoredRef(std::shared_ptr<const StoredObject> p) : p_(std::move(p)) {}
  const Json& operator*() const { return p_->json(); }
  const Json* operator->() const { return &p_->json(); }
  const Json* get() const { return p_ ? &p_->json() : nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  const StoredObject& stored() const { return *p_; }
  const std::shared_ptr<const StoredObject>& shared() const { return p_; }
  // The object as a shared Json (thread-safe; a compacted object's is parsed again).
  std::shared_ptr<const Json> json_ptr() const { return p_ ? p_->tree() : nullptr; }

 private:
  std::shared_ptr<const StoredObject> p_;
};

// A Pod's spec.nodeName ("" when unbound): the index that lists of one node's pods read (a
// field selector spec.nodeName=NODE, as kubelets and node agents list).
std::string PodNodeName(const Json& pod);

class ObjectStore {
 public:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  // In (namespace, name) order, in chunks that a capture shares (chunk_map.h).
  using Objects = ChunkMap<Key, StoredRef>;

  const Json* Get(const std::string& kind, const std::string& ns, const std::string& name) const;
  std::shared_ptr<const Json> Share(const std::string& kind, const std::string& ns,
                                    const std::string& name) const;
  // The stored object itself (its tree and its wire text), shared; nullptr when absent.
  std::shared_ptr<const StoredObject> Stored(const std::string& kind, const std::string& ns,
                                             const std::string& name) const;
  // Objects of a kind, of one namespace ("" for all), in (namespace, name) order.
  std::vector<const Json*> List(const std::string& kind, const std::string& ns) const;
  std::vector<std::shared_ptr<const Json>> ListShared(const std::string& kind,
                                                      const std::string& ns) const;
  std::vector<StoredRef> ListStored(const std::string& kind, const std::string& ns) const;
  // Every object of a kind as it is now, in O(chunks): its chunks shared, no object touched
  // (Objects::Freeze; none for a kind never stored). Starts a new epoch of the kind's map: each
  // chunk is copied by the first write to it after this call (list_pages.h: PickObjects).
  Objects::Frozen Freeze(const std::string& kind) const;
  // The objects of a kind in namespace `ns` (not "") as they are now, in O(log objects + the
  // chunks that hold them): only those chunks shared (Objects::FreezeRange), each copied by the
  // first write to it after this call, the kind's other chunks left writable. The Frozen's first
  // and last chunks may hold other namespaces' objects: its rows from first_row(), size() of
  // them, are the namespace's.
  Objects::Frozen FreezeNamespace(const std::string& kind, const std::string& ns) const;
  // The number of objects of a kind in namespace `ns` (not ""): O(log objects + their chunks).
  size_t CountNamespace(const std::string& kind, const std::string& ns) const;
  const Objects& All(const std::string& kind) const;
  size_t size() const;  // the stored objects of every kind

  // Stores the object (ADDED if new, else MODIFIED) with the next resourceVersion; returns it.
  int64_t Put(const std::string& kind, const std::string& ns, const std::string& name, Json object);
  // The same for an object given as its text (no tree made): for a kind of SetTextKinds.
  int64_t PutText(const std::string& kind, const std::string& ns, const std::string& name,
                  const VersionedText& text);
  // Uses up the next resourceVersion with no change (no object, no watch event) and returns it:
  // the version of a write that an object of `kind` skips (Cluster::StoreNewPod).
  int64_t Skip(const std::string& kind);
  // Removes it (DELETED, the last state with a new resourceVersion); false if absent.
  bool Remove(const std::string& kind, const std::string& ns, const std::string& name);

  // A secondary index of `kind` by the string `key_of` gives an object ("" : not indexed), e.g.
  // Pods by their Job's uid: set once, before the first Put or Load. A kind may have several.
  // ByIndex gives the objects with that value of its first index in (namespace, name) order, in
  // O(their number); StoredByIndex the same of the index `key_of` (and of namespace `ns`, ""
  // for all), as shared objects;
  // TakeTouched the values of the `touched` indexes whose objects were written or removed since
  // its last call (after a Load: every value).
  using IndexKey = std::string (*)(const Json&);
  void AddIndex(const std::string& kind, IndexKey key_of, bool touched = true);
  std::vector<const Json*> ByIndex(const std::string& kind, const std::string& value) const;
  std::vector<StoredRef> StoredByIndex(const std::string& kind, IndexKey key_of,
                                       const std::string& value, const std::string& ns = "") const;
  std::set<std::string> TakeTouched(const std::string& kind);
  // The keys of namespace `after.first` with that value of the first index whose names come
  // after `after.second`, in order, at most `max`: no object read (a walk resumed where it was).
  std::vector<Key> IndexedKeysAfter(const std::string& kind, const std::string& value,
                                    const Key& after, size_t max) const;

  // Called at each write of an object of `kind` (Put, PutText, Remove; not a Load), before the
  // store changes, with its key and its trees before (nullptr: it is new) and after (nullptr:
  // removed): what keeps counts over the objects as they are written (Cluster's disruption
  // budgets). One per kind; set before the first Put.
  using Observer = std::function<void(const Key& key, const Json* was, const Json* now)>;
  void Observe(const std::string& kind, Observer f) { observers_[kind] = std::move(f); }

  // Compaction: the objects of `kinds` ("Pod", "Event") are kept as wire text, but for the
  // `hot` most recently written or read (their trees kept too). Set before the first Put or Load.
  void SetCompact(std::set<std::string> kinds, size_t hot);
  // The objects of `kinds` ("Event": many, written once, seldom read) are kept as their plain
  // wire text alone, whether given as text (PutText) or as a tree (Put, Load); a read parses it
  // (kept among the hot trees until the next Trim). Set after SetCompact, before the first Put.
  void SetTextKinds(std::set<std::string> kinds) { text_kinds_ = std::move(kinds); }
  // Drops the trees of the compact objects beyond the hot ones (their text made first). Call
  // between mutations only: it ends the `const Json*` that Get, List, ByIndex and StoredRef gave.
  void Trim() const;
  size_t hot_trees() const;

  // Stored Pods by StoredObject::pod_phase() ("" when unset), counted as they are written: what
  // /metrics' arbiter_pods serves without walking the pods.
  const std::map<std::string, int64_t>& pod_phases() const { return pod_phases_; }

  int64_t resource_version() const { return rv_; }
  // The resourceVersion of the newest change to an object of `kind` (after a Load: at least the
  // loaded counter, as the changes before it are not known). The objects of a kind are as they
  // were at any resourceVersion from this one on: what a list's `continue` relies on.
  int64_t kind_version(const std::string& kind) const;
  // The watch events recorded since the last call, in resourceVersion order.
  std::vector<WatchEvent> TakeEvents() { return std::exchange(events_, {}); }

  // Whole state (for snapshots): every object plus the counter.
  Json Save() const;
  // The whole state as of now, for a snapshot written on another thread: each kind's chunks of
  // objects shared (Objects::Freeze: O(chunks), no object touched; an object is immutable and
  // makes its wire text thread-safely), and the counter.
  struct Saved {
    int64_t resource_version = 0;
    std::vector<std::pair<std::string, Objects::Frozen>> kinds;
    // Save()'s JSON text (the same bytes as Save().dump()), written from the objects' wire texts:
    // no tree of the whole state is made. Thread-safe. Write() gives it to `out` in pieces
    // (stopping at, and answering, a false from `out`); Size() is its length.
    using Sink = std::function<bool(std::string_view)>;
    // count: the objects' texts are not made nor given to `out`, their lengths added to *count.
    bool Write(const Sink& out, size_t* count = nullptr) const;
    size_t Size() const;
    void Append(std::string& out) const;
  };
  Saved Capture() const;
  void AppendSaved(std::string& out) const { Capture().Append(out); }
  void Load(Json&& saved);  // moves the objects out of `saved`
  // Load() one object at a time (a snapshot's objects as they are parsed, never a tree of them
  // all): StartLoad, LoadKind for each kind saved (its objects may be none), LoadObject for each
  // of its objects, FinishLoad with the saved resourceVersion.
  void StartLoad();
  void LoadKind(const std::string& kind) { (void)kinds_[kind]; }
  void LoadObject(const std::string& kind, Json&& obj);
  void FinishLoad(int64_t resource_version);

 private:
  std::map<std::string, Objects> kinds_;
  int64_t rv_ = 0;
  int64_t loaded_rv_ = 0;
  std::map<std::string, int64_t> kind_versions_;
  std::map<std::string, int64_t> pod_phases_;
  void CountPhase(const std::string& kind, const StoredRef& obj, int64_t delta);
  std::vector<WatchEvent> events_;
  struct Index {
    IndexKey key_of = nullptr;
    bool track = true;                          // keeps `touched`
    std::map<std::string, std::set<Key>> keys;  // value -> objects
    std::set<std::string> touched;
  };
  std::map<std::string, std::vector<Index>> indexes_;  // by kind
  std::map<std::string, Observer> observers_;          // by kind
  const std::set<Key>* IndexedKeys(const std::string& kind, IndexKey key_of,
                                   const std::string& value) const;
  void Reindex(const std::string& kind, const Key& key, const Json* was, const Json* now);
  std::set<std::string> compact_kinds_;
  std::set<std::string> text_kinds_;
  bool Indexed(const std::string& kind) const { return indexes_.count(kind) > 0; }
  // Stores `stored` (ADDED or MODIFIED) with version rv: Put's and PutText's common part.
  void Store(const std::string& kind, const Key& key, int64_t rv, StoredRef stored,
             const Json* tree);
  std::shared_ptr<HotTrees> hot_;
  std::shared_ptr<const StoredObject> Make(const std::string& kind, Json object) const;
};

}  // namespace arbiter::server
