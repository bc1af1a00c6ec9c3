#include "kubesched/event_recorder.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "kubesched/micro_time.h"

namespace arbiter::kubesched {

using Json = nlohmann::json;

namespace event_recorder {

constexpr size_t kMaxNote = 1024;  // the API server's limit on events.k8s.io/v1 note

std::string Cut(const std::string& note) {
  if (note.size() <= kMaxNote) return note;
  size_t n = kMaxNote - 3;
  while (n > 0 && (static_cast<unsigned char>(note[n]) & 0xC0) == 0x80) --n;  // whole UTF-8
  return note.substr(0, n) + "...";
}

Json Ref(const EventObject& o) {
  Json r = {{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name}};
  if (!o.namespace_.empty()) r["namespace"] = o.namespace_;
  if (!o.uid.empty()) r["uid"] = o.uid;
  return r;
}

std::string Path(const std::string& ns, const std::string& name) {
  return "/apis/events.k8s.io/v1/namespaces/" + (ns.empty() ? std::string("default") : ns) +
         "/events" + (name.empty() ? "" : "/" + name);
}

}  // namespace event_recorder

EventRecorder::EventRecorder(EventRecorderOptions options) : options_(std::move(options)) {}

EventWrite EventRecorder::Create(const EventRequest& r, const Series& s, Millis now) const {
  Json e = {{"apiVersion", "events.k8s.io/v1"},
            {"kind", "Event"},
            {"metadata", {{"name", s.name}, {"namespace", s.namespace_}}},
            {"eventTime", FormatMicroTime(now)},
            {"reportingController", options_.reporting_controller},
            {"reportingInstance", options_.reporting_instance},
            {"action", r.action},
            {"reason", r.reason},
            {"regarding", event_recorder::Ref(r.regarding)},
            {"note", event_recorder::Cut(r.note)},
            {"type", r.warning ? "Warning" : "Normal"}};
  if (r.related) e["related"] = event_recorder::Ref(*r.related);
  return EventWrite{true, event_recorder::Path(s.namespace_, ""), e.dump(), s.name};
}

EventWrite EventRecorder::Patch(Series& s, Millis now) {
  if (s.count != s.written_count) --behind_;
  s.written_count = s.count;
  s.written_at = now;
  ++patched_;
  const Json p = {
      {"series", {{"count", s.count}, {"lastObservedTime", FormatMicroTime(s.last_observed)}}}};
  return EventWrite{false, event_recorder::Path(s.namespace_, s.name), p.dump(), s.name};
}

void EventRecorder::Expire(Millis now, std::vector<EventWrite>* out) {
  while (!lru_.empty()) {  // least recently observed first: stops at the first one still going
    auto s = series_.find(lru_.front());
    if (now - s->second.last_observed < options_.finish) return;
    if (s->second.count != s->second.written_count) out->push_back(Patch(s->second, now));
    series_.erase(s);
    lru_.pop_front();
  }
}

std::vector<EventWrite> EventRecorder::Record(const EventRequest& r, Millis now) {
  std::vector<EventWrite> out;
  Expire(now, &out);  // ended series leave first
  const Key key{r.regarding, r.related, r.reason, r.action};
  auto it = series_.find(key);
  if (it != series_.end()) {
    Series& s = it->second;
    if (s.count++ == s.written_count) ++behind_;
    s.last_observed = now;
    lru_.splice(lru_.end(), lru_, s.lru);
    if (s.count == 2) out.push_back(Patch(s, now));  // the series starts
    return out;
  }
  if (series_.size() >= options_.max_series && !lru_.empty()) {  // the oldest series ends
    auto old = series_.find(lru_.front());
    if (old->second.count != old->second.written_count) out.push_back(Patch(old->second, now));
    series_.erase(old);
    lru_.pop_front();
  }
  // NAME.<hex nanoseconds> (client-go's name), unique: the nanoseconds never repeat.
  Millis ns = now * 1000000;
  if (ns <= last_name_) ns = last_name_ + 1;
  last_name_ = ns;
  char hex[24];
  std::snprintf(hex, sizeof hex, ".%llx", static_cast<unsigned long long>(ns));
  Series s;
  s.name = r.regarding.name.substr(0, 253 - std::string(hex).size()) + hex;
  s.namespace_ = r.regarding.namespace_.empty() ? "default" : r.regarding.namespace_;
  s.last_observed = now;
  s.written_at = now;
  s.lru = lru_.insert(lru_.end(), key);
  out.push_back(Create(r, s, now));
  ++created_;
  series_.emplace(key, std::move(s));
  return out;
}

std::vector<EventWrite> EventRecorder::Flush(Millis now) {
  std::vector<EventWrite> out;
  Expire(now, &out);
  if (behind_ == 0) return out;
  for (const Key& key : lru_) {
    Series& x = series_.find(key)->second;
    if (x.count != x.written_count && now - x.written_at >= options_.refresh)
      out.push_back(Patch(x, now));
  }
  return out;
}

}  // namespace arbiter::kubesched
