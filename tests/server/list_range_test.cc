// A list's range (list_pages.h: ListRange) backed by a kind's chunks shared from the store, as a
// whole list or a large namespace's picks it (issue 27: O(chunks) under the daemon's lock, not
// O(objects)): it stays as it was at the pick whatever the store does after (puts, removes, the
// chunks split and merged), and StartIndex / PageOf read it as they read the same objects picked
// as refs one by one; a namespace's pick costs the writes after it copies of its chunks alone.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/http/list_pages.h"

namespace arbiter::server {
namespace list_range_test {

constexpr int kPods = 1200;  // several chunks of 256 rows at most

std::string Name(int i) {
  std::string n = std::to_string(i);
  return "pod-" + std::string(4 - n.size(), '0') + n;
}
std::string NsOf(int i) { return "ns-" + std::to_string(i % 4); }

Json PodJson(const std::string& ns, const std::string& name, const std::string& gen) {
  return Json{{"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"gen", gen}}}}}};
}

// kPods pods in 4 namespaces, kept as text but for 2 (as the daemon keeps its pods: a read of
// a range of refs parses each again), and two Nodes (a cluster-scoped kind).
void Fill(ObjectStore& s) {
  s.SetCompact({"Pod"}, 2);
  for (int i = 0; i < kPods; ++i) s.Put("Pod", NsOf(i), Name(i), PodJson(NsOf(i), Name(i), "0"));
  for (const std::string n : {"node-b", "node-a"})
    s.Put("Node", "", n, Json{{"metadata", {{"name", n}}}});
  (void)s.TakeEvents();
  s.Trim();
}

// What a range holds, object by object: its key and the stored object itself.
using Held = std::vector<std::pair<ObjectStore::Key, const StoredObject*>>;
Held HeldBy(const ListRange& r) {
  Held out;
  for (size_t i = 0; i < r.size(); ++i) out.emplace_back(r.key(i), &r[i].stored());
  return out;
}

// Writes every third pod again, adds pods between the others (chunks split), then removes most
// (chunks merge), checking that the chunks did split and merge.
void Churn(ObjectStore& s) {
  const size_t chunks = s.All("Pod").chunks();
  for (int i = 0; i < kPods; i += 3) s.Put("Pod", NsOf(i), Name(i), PodJson(NsOf(i), Name(i), "1"));
  for (int i = 0; i < kPods; ++i) {
    const std::string name = Name(i) + "b";
    s.Put("Pod", NsOf(i), name, PodJson(NsOf(i), name, "2"));
  }
  ASSERT_GT(s.All("Pod").chunks(), chunks);
  const size_t split = s.All("Pod").chunks();
  for (int i = 0; i < kPods; ++i) {
    if (i % 10 != 0) {
      ASSERT_TRUE(s.Remove("Pod", NsOf(i), Name(i)));
    }
    ASSERT_TRUE(s.Remove("Pod", NsOf(i), Name(i) + "b"));
  }
  ASSERT_LT(s.All("Pod").chunks(), split);
  (void)s.Remove("Node", "", "node-a");
  s.Put("Node", "", "node-c", Json{{"metadata", {{"name", "node-c"}}}});
  (void)s.TakeEvents();
  s.Trim();
}

TEST(ListRangeTest, AWholeKindsRangeSharesTheStoresChunksAndStaysAsItWas) {
  ObjectStore s;
  Fill(s);
  const ListRange pods = PickObjects(s, "Pod", "", nullptr);
  const ListRange nodes = PickObjects(s, "Node", "", nullptr);
  ASSERT_TRUE(pods.shared());
  ASSERT_TRUE(nodes.shared());
  ASSERT_GT(s.All("Pod").chunks(), 2u);
  const ListRange refs(s.ListStored("Pod", ""));  // the same objects, as refs
  const Held want = HeldBy(refs);
  ASSERT_EQ(want.size(), static_cast<size_t>(kPods));
  EXPECT_EQ(HeldBy(pods), want);
  Churn(s);
  EXPECT_EQ(HeldBy(pods), want);
  EXPECT_EQ(HeldBy(refs), want);
  for (const StoredRef& o : pods)  // the objects as they were: every one of generation "0"
    EXPECT_EQ(o.json_ptr()->at("metadata").at("labels").at("gen"), "0");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes.key(0), (ObjectStore::Key{"", "node-a"}));
  EXPECT_EQ(nodes.key(1), (ObjectStore::Key{"", "node-b"}));
  // A small namespace's objects (refs) and a kind never stored.
  static_assert(kPods / 4 < kNamespaceRefsBelow);
  EXPECT_FALSE(PickObjects(s, "Pod", "ns-2", nullptr).shared());
  EXPECT_EQ(PickObjects(s, "Pod", "ns-2", nullptr).size(), static_cast<size_t>(kPods / 20));
  EXPECT_TRUE(PickObjects(s, "Service", "", nullptr).empty());
}

// Regression (issue 27): a whole list's pick takes no reference to any object (it shares the
// chunks that hold them); the pick of refs it replaced took one to each object under the lock.
TEST(ListRangeTest, AWholeKindsPickTakesNoReferenceToItsObjects) {
  ObjectStore s;
  Fill(s);
  const auto first = s.Stored("Pod", NsOf(0), Name(0));
  const auto last = s.Stored("Pod", NsOf(kPods - 1), Name(kPods - 1));
  const auto next = s.Stored("Pod", NsOf(4), Name(4));  // the next key: the same chunk
  const long first_held = first.use_count(), last_held = last.use_count();
  const long next_held = next.use_count();
  const ListRange all = PickObjects(s, "Pod", "", nullptr);
  EXPECT_EQ(first.use_count(), first_held);
  EXPECT_EQ(next.use_count(), next_held);
  EXPECT_EQ(last.use_count(), last_held);
  // Once written, a chunk the range shares is copied: its rows are held twice, the others not.
  s.Put("Pod", NsOf(0), Name(0), PodJson(NsOf(0), Name(0), "1"));
  (void)s.TakeEvents();
  EXPECT_EQ(first.use_count(), first_held);  // its row in the copy is the new object
  EXPECT_EQ(next.use_count(), next_held + 1);
  EXPECT_EQ(last.use_count(), last_held);  // another chunk
  EXPECT_EQ(&all[0].stored(), first.get());
  // A small namespace's pick takes a reference to each of its objects.
  const ListRange ns0 = PickObjects(s, "Pod", NsOf(kPods - 1), nullptr);
  EXPECT_EQ(last.use_count(), last_held + 1);
}

TEST(ListRangeTest, StartIndexAndPagesAreTheSameOnBothBackings) {
  ObjectStore s;
  Fill(s);
  const ListRange shared = PickObjects(s, "Pod", "", nullptr);
  const ListRange refs(s.ListStored("Pod", ""));
  Churn(s);  // no matter to either
  ASSERT_TRUE(shared.shared());
  ASSERT_FALSE(refs.shared());
  std::vector<std::string> starts = {std::string("\0", 1), std::string("ns-2\0", 5),
                                     std::string("ns-9\0", 5), std::string("zz/x\0", 5)};
  for (int i = 0; i < kPods; i += 37) {
    starts.push_back(NsOf(i) + "/" + Name(i) + std::string(1, '\0'));
    starts.push_back(NsOf(i) + "/" + Name(i) + "a" + std::string(1, '\0'));  // gone or never
  }
  for (const std::string& start : starts)
    for (const bool all_ns : {true, false})
      EXPECT_EQ(StartIndex(shared, start, all_ns), StartIndex(refs, start, all_ns)) << start;
  const auto sel = [](const StoredObject& o) {
    return o.tree()->at("metadata").at("name").get<std::string>() > "pod-06";
  };
  for (size_t begin : {0u, 1u, 255u, 256u, 257u, 700u, 1199u, 1200u})
    for (size_t limit : {0u, 1u, 7u, 500u})
      for (const bool select : {false, true}) {
        std::function<bool(const StoredObject&)> match;
        if (select) match = sel;
        const ListPage a = PageOf(shared, begin, limit, match, true);
        const ListPage b = PageOf(refs, begin, limit, match, true);
        EXPECT_EQ(a.items, b.items) << begin << " " << limit;
        EXPECT_EQ(a.continue_key, b.continue_key) << begin << " " << limit;
        EXPECT_EQ(a.remaining, b.remaining) << begin << " " << limit;
      }
}

// Kept for continues, a shared range counts every row of the chunks it holds (all of the kind's)
// against the caps on objects, as a range of refs counts its refs.
TEST(ListRangeTest, KeptSharedRangesCountTheirRowsAgainstTheCaps) {
  ObjectStore s;
  Fill(s);
  auto all = std::make_shared<const ListRange>(PickObjects(s, "Pod", "", nullptr));
  ListSnapshots small({/*max_ranges=*/8, /*ttl_ms=*/100000, /*max_objects=*/kPods - 1});
  small.Put("Pod", "", 1, all, 0);
  EXPECT_EQ(small.Find("Pod", "", 1, 0), nullptr);
  ListSnapshots two({/*max_ranges=*/8, /*ttl_ms=*/100000, /*max_objects=*/2 * kPods});
  two.Put("Pod", "", 1, all, 0);
  two.Put("Pod", "", 2, all, 1);
  two.Put("Pod", "", 3, all, 2);  // over 2 * kPods: 1 goes
  EXPECT_EQ(two.Find("Pod", "", 1, 3), nullptr);
  EXPECT_EQ(two.Find("Pod", "", 3, 3), all);
  EXPECT_EQ(two.size(), 2u);
}

TEST(ListRangeTest, IteratorsAreRandomAccessOverTheChunks) {
  ObjectStore s;
  Fill(s);
  const ListRange r = PickObjects(s, "Pod", "", nullptr);
  ASSERT_EQ(r.end() - r.begin(), static_cast<std::ptrdiff_t>(r.size()));
  size_t i = 0;
  for (auto it = r.begin(); it != r.end(); ++it, ++i) {
    ASSERT_EQ(&it->stored(), &r[i].stored());
    ASSERT_EQ(&(r.begin() + static_cast<std::ptrdiff_t>(i))->stored(), &r[i].stored());
  }
  EXPECT_EQ(i, r.size());
  auto it = r.end();
  --it;
  EXPECT_EQ(&it->stored(), &r[r.size() - 1].stored());
  EXPECT_EQ(&r.begin()[300].stored(), &r[300].stored());
  EXPECT_LT(r.begin() + 3, r.begin() + 4);
  // A copy as refs, and pop_back / push_back (which make a shared range refs) keep the order.
  ListRange copy(r.begin() + 10, r.begin() + 20);
  EXPECT_FALSE(copy.shared());
  ASSERT_EQ(copy.size(), 10u);
  EXPECT_EQ(&copy[0].stored(), &r[10].stored());
  ListRange popped = r;
  popped.pop_back();
  EXPECT_FALSE(popped.shared());
  EXPECT_EQ(popped.size(), r.size() - 1);
  Held want = HeldBy(r);
  want.pop_back();
  EXPECT_EQ(HeldBy(popped), want);
}

// Namespaces at the start, middle and end of the key space, a small one, and one ("ns-1") whose
// name is a prefix of another's ("ns-10"): keys are (namespace, name) pairs, so "ns-1"'s end
// before "ns-10"'s start.
const std::vector<std::pair<std::string, int>> kSpread = {
    {"a", 600}, {"m", 800}, {"ns-1", 700}, {"ns-10", 600}, {"ns-2", 5}, {"zz", 600}};
// Namespaces with no object: before, between and after those, and a prefix of some ("ns-").
const std::vector<std::string> kEmpty = {"0", "b", "ns-", "ns-11", "ns-1a", "zzz"};

// kSpread's pods, created in turn (a pod of each namespace, then the next of each), kept as text.
void FillSpread(ObjectStore& s) {
  s.SetCompact({"Pod"}, 2);
  for (int i = 0; i < 800; ++i)
    for (const auto& [ns, n] : kSpread)
      if (i < n) s.Put("Pod", ns, Name(i), PodJson(ns, Name(i), "0"));
  (void)s.TakeEvents();
  s.Trim();
}

// `shared` reads as `refs` does: the same objects and keys, iterators, start indexes and pages
// (a namespace's list: keys without the namespace).
void ExpectSameRange(const ListRange& shared, const ListRange& refs) {
  ASSERT_TRUE(shared.shared());
  ASSERT_EQ(HeldBy(shared), HeldBy(refs));
  ASSERT_EQ(shared.end() - shared.begin(), static_cast<std::ptrdiff_t>(refs.size()));
  size_t i = 0;
  for (auto it = shared.begin(); it != shared.end(); ++it, ++i)
    ASSERT_EQ(&it->stored(), &refs[i].stored());
  ASSERT_EQ(i, refs.size());
  for (i = 0; i < refs.size(); i += 7)
    ASSERT_EQ(&shared.begin()[static_cast<std::ptrdiff_t>(i)].stored(), &refs[i].stored());
  std::vector<std::string> starts = {std::string("\0", 1), std::string("zzz\0", 4)};
  for (i = 0; i < refs.size(); i += 13) {
    starts.push_back(refs.key(i).second + std::string(1, '\0'));
    starts.push_back(refs.key(i).second + "a" + std::string(1, '\0'));
  }
  for (const std::string& start : starts)
    ASSERT_EQ(StartIndex(shared, start, false), StartIndex(refs, start, false)) << start;
  const auto sel = [](const StoredObject& o) {
    return o.tree()->at("metadata").at("name").get<std::string>() > "pod-03";
  };
  const size_t n = refs.size();
  for (size_t begin : {size_t{0}, size_t{1}, n / 2, n > 0 ? n - 1 : 0, n})
    for (size_t limit : {0u, 1u, 7u, 500u})
      for (const bool select : {false, true}) {
        if (begin > n) continue;
        std::function<bool(const StoredObject&)> match;
        if (select) match = sel;
        const ListPage a = PageOf(shared, begin, limit, match, false);
        const ListPage b = PageOf(refs, begin, limit, match, false);
        ASSERT_EQ(a.items, b.items) << begin << " " << limit;
        ASSERT_EQ(a.continue_key, b.continue_key) << begin << " " << limit;
        ASSERT_EQ(a.remaining, b.remaining) << begin << " " << limit;
      }
}

// Writes every third pod of each namespace again, adds pods between the others and to the empty
// namespaces (chunks split), then removes most (chunks merge), checking that they did.
void ChurnSpread(ObjectStore& s) {
  const size_t chunks = s.All("Pod").chunks();
  for (const auto& [ns, n] : kSpread)
    for (int i = 0; i < n; ++i) {
      if (i % 3 == 0) s.Put("Pod", ns, Name(i), PodJson(ns, Name(i), "1"));
      s.Put("Pod", ns, Name(i) + "b", PodJson(ns, Name(i) + "b", "2"));
    }
  for (const std::string& ns : kEmpty)
    for (int i = 0; i < 300; ++i) s.Put("Pod", ns, Name(i), PodJson(ns, Name(i), "2"));
  ASSERT_GT(s.All("Pod").chunks(), chunks);
  const size_t split = s.All("Pod").chunks();
  for (const auto& [ns, n] : kSpread)
    for (int i = 0; i < n; ++i) {
      if (i % 10 != 0) {
        ASSERT_TRUE(s.Remove("Pod", ns, Name(i)));
      }
      ASSERT_TRUE(s.Remove("Pod", ns, Name(i) + "b"));
    }
  ASSERT_LT(s.All("Pod").chunks(), split);
  (void)s.TakeEvents();
  s.Trim();
}

// A namespace's shared range holds its objects alone, as its refs' pick does (wherever it is in
// the key space, empty or not), and stays as picked through the store's puts, removes, splits
// and merges; a namespace of kNamespaceRefsBelow objects or more is picked so.
TEST(ListRangeTest, ANamespacesSharedRangeIsItsRefsPickAndStaysAsPicked) {
  ObjectStore s;
  FillSpread(s);
  ASSERT_GT(s.All("Pod").chunks(), 10u);
  std::vector<std::string> all = kEmpty;
  for (const auto& [ns, n] : kSpread) all.push_back(ns);
  std::vector<std::pair<ListRange, Held>> picked;
  for (const std::string& ns : all) {
    const ListRange refs(s.ListStored("Pod", ns));
    const ListRange shared(s.FreezeNamespace("Pod", ns));
    ExpectSameRange(shared, refs);
    EXPECT_EQ(s.CountNamespace("Pod", ns), refs.size()) << ns;
    const ListRange pick = PickObjects(s, "Pod", ns, nullptr);
    EXPECT_EQ(pick.shared(), refs.size() >= kNamespaceRefsBelow) << ns;
    EXPECT_EQ(HeldBy(pick), HeldBy(refs)) << ns;
    picked.emplace_back(shared, HeldBy(refs));
  }
  EXPECT_EQ(HeldBy(picked[kEmpty.size() + 2].first).front().first.first, "ns-1");
  EXPECT_EQ(picked[kEmpty.size() + 2].first.size(), 700u);
  ChurnSpread(s);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(HeldBy(picked[i].first), picked[i].second) << all[i];
    ExpectSameRange(picked[i].first, ListRange(picked[i].first.begin(), picked[i].first.end()));
    for (const StoredRef& o : picked[i].first)  // the objects as they were: generation "0"
      EXPECT_EQ(o.json_ptr()->at("metadata").at("labels").at("gen"), "0");
  }
}

// The chunks of a kind's whole freeze that hold an object of `ns`: their number.
size_t ChunksOf(const ListRange::Frozen& whole, const std::string& ns) {
  size_t n = 0;
  for (size_t c = 0; c < whole.chunks(); ++c) {
    const auto& rows = whole.chunk(c);
    n += rows.front().first.first <= ns && ns <= rows.back().first.first ? 1 : 0;
  }
  return n;
}

// The writes after a namespace's pick copy only the chunks that hold its objects (once each; a
// whole freeze would have them copy every chunk), and a whole range picked before stays as it
// was. The pick takes no reference to the namespace's objects.
TEST(ListRangeTest, ANamespacesPickCopiesOnlyItsChunksOnTheWritesAfter) {
  ObjectStore s;
  FillSpread(s);
  const auto write_all = [&](const std::string& gen) {  // overwrites: the chunks stay as they are
    for (const auto& [ns, n] : kSpread)
      for (int i = 0; i < n; ++i) s.Put("Pod", ns, Name(i), PodJson(ns, Name(i), gen));
    (void)s.TakeEvents();
    s.Trim();
  };
  const auto in_m = s.Stored("Pod", "m", Name(400));
  const long held = in_m.use_count();
  uint64_t copied = s.All("Pod").copies();
  const ListRange m = PickObjects(s, "Pod", "m", nullptr);
  ASSERT_TRUE(m.shared());
  EXPECT_EQ(in_m.use_count(), held);
  const Held m_want = HeldBy(m);
  write_all("1");
  const uint64_t m_copies = s.All("Pod").copies() - copied;
  const ListRange whole = PickObjects(s, "Pod", "", nullptr);  // after: the same chunks
  const ListRange::Frozen chunks = s.Freeze("Pod");
  EXPECT_EQ(m_copies, ChunksOf(chunks, "m"));
  EXPECT_GE(m_copies, 800u / 256);
  EXPECT_LT(m_copies * 2, chunks.chunks());  // "m" holds a quarter of the pods
  // A whole range picked before a namespace's: every chunk copied once by the writes after it.
  const Held whole_want = HeldBy(whole);
  copied = s.All("Pod").copies();
  const ListRange ns1 = PickObjects(s, "Pod", "ns-1", nullptr);
  ASSERT_TRUE(ns1.shared());
  const Held ns1_want = HeldBy(ns1);
  write_all("2");
  EXPECT_EQ(s.All("Pod").copies() - copied, chunks.chunks());
  copied = s.All("Pod").copies();
  const ListRange ns10 = PickObjects(s, "Pod", "ns-10", nullptr);
  const ListRange ns10_refs(s.ListStored("Pod", "ns-10"));
  write_all("3");
  EXPECT_EQ(s.All("Pod").copies() - copied, ChunksOf(chunks, "ns-10"));
  EXPECT_EQ(HeldBy(whole), whole_want);
  EXPECT_EQ(HeldBy(m), m_want);
  EXPECT_EQ(HeldBy(ns1), ns1_want);
  ExpectSameRange(ns10, ns10_refs);
  for (const StoredRef& o : m) EXPECT_EQ(o.json_ptr()->at("metadata").at("labels").at("gen"), "0");
  for (const StoredRef& o : ns1)
    EXPECT_EQ(o.json_ptr()->at("metadata").at("labels").at("gen"), "1");
}

}  // namespace list_range_test
}  // namespace arbiter::server
