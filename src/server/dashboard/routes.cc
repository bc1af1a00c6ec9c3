#include "server/dashboard/routes.h"

#include <httplib.h>

#include <memory>

#include "server/dashboard/sampler.h"
#include "server/dashboard/views.h"
#include "server/dashboard/web_assets.h"

namespace arbiter::server::dashboard {

namespace {

void SendJson(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(), "application/json");
}

}  // namespace

void RegisterRoutes(httplib::Server& s, Daemon& d, DashboardOptions o) {
  auto opts = std::make_shared<DashboardOptions>(std::move(o));
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
  // The request's viewer, or nullopt after answering 401.
  auto viewer = [opts](const httplib::Request& req,
                       httplib::Response& res) -> std::optional<Viewer> {
    if (!opts->tokens) return Viewer{};
    auto found = ViewerFor(*opts->tokens, req.get_header_value("Authorization"));
    if (!found) SendJson(res, 401, {{"error", "Unauthorized: a known bearer token is required"}});
    return found;
  };
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
  // The history the daemon keeps for the dashboard (history.h), sampled by its own thread, which
  // lives as long as the routes (joined when the server is destroyed).
  auto sampler = std::make_shared<HistorySampler>(d);
  s.Get("/ui/api/history",
        [&d, viewer, sampler](const httplib::Request& req, httplib::Response& res) {
          const std::optional<Viewer> v = viewer(req, res);
          if (!v) return;
          const std::vector<PriceBook> books =
              d.Read([](const Cluster& c) { return c.engine().price_books(); });
          const Millis now = sampler->Now();
          SendJson(res, 200,
                   sampler->Read([&](const History& h) { return HistoryView(h, books, *v, now); }));
        });
  api("/ui/api/whoami", [](const Cluster&, const Viewer& v, const httplib::Request&) {
    return Json{{"user", v.user}, {"all", v.all}, {"namespaces", v.namespaces}};
  });
  api("/ui/api/pool",
      [](const Cluster& c, const Viewer& v, const httplib::Request&) { return PoolView(c, v); });
  api("/ui/api/tenants",
      [](const Cluster& c, const Viewer& v, const httplib::Request&) { return TenantsView(c, v); });
  api("/ui/api/queue",
      [](const Cluster& c, const Viewer& v, const httplib::Request&) { return QueueView(c, v); });
  api("/ui/api/workload", [](const Cluster& c, const Viewer& v, const httplib::Request& r) {
    return WorkloadView(c, v, r.get_param_value("namespace"), r.get_param_value("name"));
  });
  api("/ui/api/bills", [](const Cluster&, const Viewer&, const httplib::Request&) {
    return Json{{"available", false},
                {"why",
                 "arbiter serve keeps no ledger yet: bills come from `arbiter sim --ledger` and "
                 "`arbiter invoice` (docs/billing.md)"}};
  });
}

}  // namespace arbiter::server::dashboard
