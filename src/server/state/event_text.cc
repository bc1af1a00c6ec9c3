#include "server/state/event_text.h"

#include "adapters/kube/status.h"
#include "server/state/pod_status.h"

namespace arbiter::server {

namespace {

// An object's members written in the order of the calls (the callers' keys are in the order a
// Json object keeps them: sorted), strings as kube::WireJson writes them.
class Members {
 public:
  explicit Members(std::string& out) : out_(out) { out_ += '{'; }
  std::string& Key(const char* key) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += key;
    out_ += "\":";
    return out_;
  }
  void Str(const char* key, const std::string& value) { kube::AppendWireString(Key(key), value); }
  void End() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

// involvedObject: {apiVersion, kind, name, namespace (if the object has one), uid}.
void WriteInvolved(std::string& out, const Json& involved, const std::string& ns) {
  const Json& meta = involved.at("metadata");
  Members io(out);
  io.Str("apiVersion", involved.value("apiVersion", "v1"));
  io.Str("kind", involved.value("kind", ""));
  io.Str("name", meta.value("name", ""));
  if (!ns.empty() && meta.contains("namespace")) io.Str("namespace", ns);
  io.Str("uid", meta.value("uid", ""));
  io.End();
}

// metadata: {annotations, creationTimestamp, name, namespace, resourceVersion, uid}; returns where
// the resourceVersion's value goes.
size_t WriteMetadata(std::string& out, const driver::PodEvent& d, const std::string& name,
                     const std::string& ns, const std::string& uid, Millis now) {
  Members m(out);
  if (!d.engine_reason.empty()) {
    Members a(m.Key("annotations"));
    a.Str("arbiter.dev/reason", d.engine_reason);
    a.End();
  }
  m.Str("creationTimestamp", KubeTime(now));
  m.Str("name", name);
  m.Str("namespace", ns);
  const size_t rv_at = m.Key("resourceVersion").size();
  m.Str("uid", uid);
  m.End();
  return rv_at;
}

// related: the preemptor Pod {apiVersion, kind, name, namespace}.
void WriteRelated(std::string& out, const std::string& ns, const std::string& name) {
  Members r(out);
  r.Str("apiVersion", "v1");
  r.Str("kind", "Pod");
  r.Str("name", name);
  r.Str("namespace", ns);
  r.End();
}

}  // namespace

// (KubeEvent's members, in their order.)
EventText KubeEventText(Millis at, const driver::PodEvent& d, const Json& involved,
                        const std::string& name, const std::string& uid, Millis now) {
  const Json& meta = involved.at("metadata");
  const std::string ns = meta.value("namespace", "default");
  EventText ev;
  ev.ns = ns.empty() ? "default" : ns;
  const std::string time = KubeTime(at);
  const size_t slash = d.related.find('/');
  std::string out;
  out.reserve(640);
  Members e(out);
  e.Str("apiVersion", "v1");
  e.Key("count") += '1';
  e.Str("firstTimestamp", time);
  WriteInvolved(e.Key("involvedObject"), involved, ns);
  e.Str("kind", "Event");
  e.Str("lastTimestamp", time);
  e.Str("message", d.note);
  const size_t rv_at = WriteMetadata(e.Key("metadata"), d, name, ev.ns, uid, now);
  e.Str("reason", d.reason);
  if (slash != std::string::npos)
    WriteRelated(e.Key("related"), d.related.substr(0, slash), d.related.substr(slash + 1));
  e.Str("reportingComponent", "arbiter-scheduler");
  e.Str("reportingInstance", "arbiter");
  Members source(e.Key("source"));
  source.Str("component", "arbiter-scheduler");
  source.End();
  e.Str("type", d.warning ? "Warning" : "Normal");
  e.End();
  ev.text.head = out.substr(0, rv_at);
  ev.text.tail = out.substr(rv_at);
  if ((d.reason == "Preempted" || d.reason == "Reclaimed") && involved.value("kind", "") == "Pod") {
    Preemption p{time, d.reason, ev.ns, meta.value("name", ""), "", ""};
    if (slash != std::string::npos) {
      p.by_namespace = d.related.substr(0, slash);
      p.by = d.related.substr(slash + 1);
    }
    ev.preemption = std::move(p);
  }
  return ev;
}

std::optional<Preemption> PreemptionOf(const Json& event) {
  const std::string reason = event.value("reason", "");
  if (reason != "Preempted" && reason != "Reclaimed") return std::nullopt;
  const Json io = event.value("involvedObject", Json::object());
  if (io.value("kind", "") != "Pod") return std::nullopt;
  Preemption p;
  p.time = event.value("firstTimestamp", "");
  p.type = reason;
  p.victim_namespace = event.value("metadata", Json::object()).value("namespace", "");
  p.victim = io.value("name", "");
  const Json related = event.value("related", Json::object());
  if (related.value("kind", "") == "Pod") {
    p.by_namespace = related.value("namespace", "");
    p.by = related.value("name", "");
  }
  return p;
}

}  // namespace arbiter::server
