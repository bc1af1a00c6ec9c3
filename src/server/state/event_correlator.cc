#include "server/state/event_correlator.h"

#include <algorithm>

namespace arbiter::server {

EventCorrelator::Result EventCorrelator::Correlate(const Event& e) {
  Object& o = objects_[e.object];
  Result r;
  // Aggregate: the 10th distinct message within the window, and every later one, is combined.
  Aggregate& a = o.aggregates[{e.type, e.reason}];
  if (e.now - a.last > kAggregateWindow) a.messages.clear();
  a.messages.insert(e.message);
  a.last = e.now;
  const bool combined = a.messages.size() >= kAggregateAfter;
  if (combined) a.messages.erase(a.messages.begin());
  r.message = combined ? "(combined from similar events): " + e.message : e.message;
  // Observe: an event seen before updates it.
  auto key = std::make_tuple(e.type, e.reason, combined ? std::string() : e.message, combined);
  auto [it, fresh] = o.observed.try_emplace(key);
  Observed& seen = it->second;
  if (fresh) {
    seen = {1, e.now, e.name, ++o.seq};
    if (o.observed.size() > kMaxObserved) {
      auto oldest = std::min_element(o.observed.begin(), o.observed.end(),
                                     [](auto& x, auto& y) { return x.second.seq < y.second.seq; });
      o.observed.erase(oldest);
    }
  } else {
    ++seen.count;
    seen.seq = ++o.seq;  // (the least recently used goes first, as client-go's LRU)
  }
  r.count = seen.count;
  r.name = seen.name;
  r.first = seen.first;
  // Spam filter: a token per event, by object and type.
  auto [c, first_seen] = o.credit.try_emplace(e.type, kSpamBurst * kSpamRefill, e.now);
  auto& [credit, at] = c->second;
  credit = std::min(kSpamBurst * kSpamRefill, credit + std::max<Millis>(0, e.now - at));
  at = std::max(at, e.now);
  if (credit >= kSpamRefill)
    credit -= kSpamRefill;
  else
    r.skip = true;
  return r;
}

nlohmann::json EventCorrelator::Save() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [object, o] : objects_) {
    nlohmann::json credit = nlohmann::json::array(), aggregates = nlohmann::json::array(),
                   observed = nlohmann::json::array();
    for (const auto& [type, c] : o.credit) credit.push_back({type, c.first, c.second});
    for (const auto& [k, a] : o.aggregates)
      aggregates.push_back({k.first, k.second, a.messages, a.last});
    for (const auto& [k, v] : o.observed)
      observed.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), v.count,
                          v.first, v.name, v.seq});
    out.push_back({object, o.seq, credit, aggregates, observed});
  }
  return out;
}

void EventCorrelator::Load(const nlohmann::json& saved) {
  objects_.clear();
  for (const auto& row : saved) {
    Object& o = objects_[row.at(0).get<std::string>()];
    o.seq = row.at(1).get<uint64_t>();
    for (const auto& c : row.at(2))
      o.credit[c.at(0).get<std::string>()] = {c.at(1).get<int64_t>(), c.at(2).get<Millis>()};
    for (const auto& a : row.at(3))
      o.aggregates[{a.at(0).get<std::string>(), a.at(1).get<std::string>()}] = {
          a.at(2).get<std::set<std::string>>(), a.at(3).get<Millis>()};
    for (const auto& v : row.at(4))
      o.observed[{v.at(0).get<std::string>(), v.at(1).get<std::string>(),
                  v.at(2).get<std::string>(), v.at(3).get<bool>()}] = {
          v.at(4).get<int64_t>(), v.at(5).get<Millis>(), v.at(6).get<std::string>(),
          v.at(7).get<uint64_t>()};
  }
}

}  // namespace arbiter::server
