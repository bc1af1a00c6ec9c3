// The dashboard's HTTP routes on the daemon's server: the embedded web/ files at /ui/ (no data
// in them: the page asks for a token) and the JSON views (views.h) at /ui/api/*, each for the
// Viewer of the request's bearer token (401 without a known one when tokens are configured;
// without tokens everyone sees everything, as the API itself).
//   GET /ui/api/whoami   {user, all, namespaces}
//   GET /ui/api/pool     PoolView       GET /ui/api/tenants  TenantsView
//   GET /ui/api/queue    QueueView      GET /ui/api/workload?namespace=NS&name=N  WorkloadView
//   GET /ui/api/bills?month=YYYY-MM      LedgerBills (server/billing/ledger_bills.h): invoices with
//   lines GET /ui/api/bills.csv?month=YYYY-MM  the bytes of `arbiter invoice -o csv` (an
//   attachment)
//                        both of the daemon's --ledger, the viewer's namespaces only; 400 for a
//                        malformed month
//   GET /ui/api/history[?since=SEQ]  HistoryView (history.h): utilisation and quota state over
//                        time (since: only newer samples), kept by a sampler thread (sampler.h)
//                        that lives as long as the routes, in DIR/history.db (history_store.h)
//                        with a data_dir; "store": its path (admins), restored samples, last error
#pragma once

#include <functional>
#include <optional>

#include "server/daemon.h"
#include "server/dashboard/viewer_tokens.h"
#include "server/http/http_server.h"
#include "server/http/token_source.h"

namespace arbiter::server::dashboard {

struct DashboardOptions {
  // The daemon's token table, reloaded with the API's (token_source.h); nullptr: no
  // authentication.
  std::shared_ptr<const TokenSource> tokens;
  std::string
      ledger;  // arbiter serve --ledger: the bills page's ledger (server/billing/ledger_bills.h)
  std::string data_dir;  // arbiter serve --data: the history kept in DIR/history.db ("": memory)
  // Told what could not be made the daemon user's alone there (HistoryStore::warnings), or a
  // link there refused (HistoryStore::Open): the log.
  std::function<void(const std::string&)> warn;
};

void RegisterRoutes(HttpServer& s, Daemon& d, DashboardOptions o);

}  // namespace arbiter::server::dashboard
