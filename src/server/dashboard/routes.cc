#include "server/dashboard/routes.h"

#include <httplib.h>

#include <charconv>
#include <memory>

#include "adapters/kube/status.h"
#include "server/billing/ledger_bills.h"
#include "server/dashboard/sampler.h"
#include "server/dashboard/views.h"
#include "server/dashboard/web_assets.h"

namespace arbiter::server::dashboard {

namespace {

void SendJson(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_header("Cache-Control", "no-store");
  res.set_content(kube::WireJson(body), "application/json");  // a client's bytes echoed: U+FFFD
}

// The HTTP status of a ledger read's failure: a malformed month 400, no ledger 404, else 500.
int LedgerErrorCode(const Status& st) {
  if (st.code() == StatusCode::kInvalidArgument) return 400;
  if (st.code() == StatusCode::kFailedPrecondition) return 404;
  return 500;
}

// The web assets: /ui/ and its files.
void AssetRoutes(HttpServer& s) {
  s.Get("/ui", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/ui/"); });
  s.Get(R"(/ui/(?!api/)(.*))", [](const httplib::Request& req, httplib::Response& res) {
    std::string path = req.matches[1];
    if (path.empty()) path = "index.html";
    for (const WebAsset& a : WebAssets())
      if (a.path == path) {
        res.set_content(std::string(a.bytes), std::string(a.content_type).c_str());
        return;
      }
    res.status = 404;
    res.set_content("not found", "text/plain");
  });
}

// The request's viewer, or nullopt after answering 401.
struct ViewerAuth {
  std::shared_ptr<DashboardOptions> opts;
  std::optional<Viewer> operator()(const httplib::Request& req, httplib::Response& res) const {
    if (!opts->tokens) return Viewer{};
    auto found = ViewerFor(*opts->tokens->Current(), req.get_header_value("Authorization"));
    if (!found) SendJson(res, 401, {{"error", "Unauthorized: a known bearer token is required"}});
    return found;
  }
};

// /ui/api/history: the samples after `since` the viewer sees, priced, and the store's state.
void HistoryRoute(HttpServer& s, Daemon& d, const ViewerAuth& viewer,
                  const std::shared_ptr<HistorySampler>& sampler) {
  s.Get("/ui/api/history", [&d, viewer, sampler](const httplib::Request& req,
                                                 httplib::Response& res) {
    const std::optional<Viewer> v = viewer(req, res);
    if (!v) return;
    int64_t since = 0;
    const std::string text = req.get_param_value("since");
    if (!text.empty()) {
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), since);
      if (ec != std::errc() || end != text.data() + text.size() || since < 0)
        return SendJson(
            res, 400,
            {{"error", "since \"" + text + "\" is not a sample's seq (a whole number >= 0)"}});
    }
    const std::vector<PriceBook> books =
        d.Read([](const Cluster& c) { return c.engine().price_books(); });
    const Millis now = sampler->Now();
    Json body =
        sampler->Read([&](const History& h) { return HistoryView(h, books, *v, now, since); });
    body["store"] = sampler->StoreState();
    if (!v->all && body["store"].is_object()) body["store"].erase("path");  // the server's files
    SendJson(res, 200, body);
  });
}

// The views of the cluster (views.h) for an authenticated viewer.
void ClusterViewRoutes(HttpServer& s, Daemon& d, const ViewerAuth& viewer,
                       const std::shared_ptr<HistorySampler>& sampler) {
  // Answers `view(cluster, viewer, request)` for an authenticated request.
  auto api = [&s, &d, viewer](const char* path, auto view) {
    s.Get(path, [&d, viewer, view](const httplib::Request& req, httplib::Response& res) {
      const std::optional<Viewer> v = viewer(req, res);
      if (!v) return;
      Json body = d.Read([&](const Cluster& c) { return view(c, *v, req); });
      if (body.is_null()) return SendJson(res, 404, {{"error", "not found"}});
      SendJson(res, 200, body);
    });
  };
  api("/ui/api/whoami", [](const Cluster&, const Viewer& v, const httplib::Request&) {
    return Json{{"user", v.user}, {"all", v.all}, {"namespaces", v.namespaces}};
  });
  // Answers `build(facts, viewer)`, the facts collected under the lock (O(live / 256 + nodes +
  // namespaces + quotas)), the view built after it is released.
  auto facts_api = [&s, &d, viewer](const char* path, ClusterView kind, auto build) {
    s.Get(path, [&d, viewer, kind, build](const httplib::Request& req, httplib::Response& res) {
      const std::optional<Viewer> v = viewer(req, res);
      if (!v) return;
      const ClusterFacts facts = d.Read([&](const Cluster& c) { return CollectFacts(c, kind); });
      SendJson(res, 200, build(facts, *v));
    });
  };
  facts_api("/ui/api/pool", ClusterView::kPool,
            [](const ClusterFacts& f, const Viewer& v) { return PoolView(f, v); });
  facts_api("/ui/api/tenants", ClusterView::kTenants,
            [](const ClusterFacts& f, const Viewer& v) { return TenantsView(f, v); });
  // The first ?limit= rows the viewer sees (default kQueueRows, at most kMaxQueueRows).
  s.Get(
      "/ui/api/queue", [&d, viewer, sampler](const httplib::Request& req, httplib::Response& res) {
        const std::optional<Viewer> v = viewer(req, res);
        if (!v) return;
        size_t limit = kQueueRows;
        const std::string text = req.get_param_value("limit");
        if (!text.empty()) {
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
          if (ec != std::errc() || end != text.data() + text.size() || limit < 1 ||
              limit > kMaxQueueRows)
            return SendJson(res, 400,
                            {{"error", "limit \"" + text + "\" is not a number of rows from 1 to " +
                                           std::to_string(kMaxQueueRows)}});
        }
        const ClusterFacts facts =
            d.Read([](const Cluster& c) { return CollectFacts(c, ClusterView::kQueue); });
        SendJson(res, 200, QueueView(facts, *v, sampler->Now(), limit));
      });
  api("/ui/api/workload", [](const Cluster& c, const Viewer& v, const httplib::Request& r) {
    return WorkloadView(c, v, r.get_param_value("namespace"), r.get_param_value("name"));
  });
}

// Bills from the daemon's ledger (server/billing/ledger_bills.h), read outside the daemon's lock:
// as JSON, and as CSV downloads.
void BillRoutes(HttpServer& s, const std::shared_ptr<DashboardOptions>& opts,
                const ViewerAuth& viewer) {
  auto bills_viewer = [](const Viewer& v) {
    return BillsViewer{v.all, [v](const std::string& ns) { return v.Sees(ns); }};
  };
  s.Get("/ui/api/bills",
        [opts, viewer, bills_viewer](const httplib::Request& req, httplib::Response& res) {
          const std::optional<Viewer> v = viewer(req, res);
          if (!v) return;
          auto bills = LedgerBills(opts->ledger, req.get_param_value("month"), bills_viewer(*v));
          if (!bills.ok())
            return SendJson(res, LedgerErrorCode(bills.status()), {{"error", bills.message()}});
          SendJson(res, 200, bills.value());
        });
  // A download of the month's bills the viewer sees: `read(ledger, month, viewer)` as an
  // attachment named `stem-MONTH.csv`.
  auto download = [&s, opts, viewer, bills_viewer](const char* path, const std::string& stem,
                                                   auto read) {
    s.Get(path, [opts, viewer, bills_viewer, stem, read](const httplib::Request& req,
                                                         httplib::Response& res) {
      const std::optional<Viewer> v = viewer(req, res);
      if (!v) return;
      const std::string month = req.get_param_value("month");
      auto csv = read(opts->ledger, month, bills_viewer(*v));
      if (!csv.ok())
        return SendJson(res, LedgerErrorCode(csv.status()), {{"error", csv.message()}});
      res.set_header("Cache-Control", "no-store");
      res.set_header("Content-Disposition", "attachment; filename=\"" + stem + "-" +
                                                (month.empty() ? std::string("latest") : month) +
                                                ".csv\"");
      res.set_content(csv.value(), "text/csv; charset=utf-8");
    });
  };
  download("/ui/api/bills.csv", "invoices", LedgerBillsCsv);
  download("/ui/api/bills.focus.csv", "focus", LedgerBillsFocusCsv);
}

}  // namespace

void RegisterRoutes(HttpServer& s, Daemon& d, DashboardOptions o) {
  auto opts = std::make_shared<DashboardOptions>(std::move(o));
  AssetRoutes(s);
  const ViewerAuth viewer{opts};
  // The history the daemon keeps for the dashboard (history.h), sampled by its own thread, which
  // lives as long as the routes (joined when the server is destroyed).
  auto sampler =
      std::make_shared<HistorySampler>(d, History(), nullptr, opts->data_dir, opts->warn);
  HistoryRoute(s, d, viewer, sampler);
  ClusterViewRoutes(s, d, viewer, sampler);
  BillRoutes(s, opts, viewer);
}

}  // namespace arbiter::server::dashboard
