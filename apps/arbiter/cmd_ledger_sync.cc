// `arbiter ledger sync --db L.db --to clickhouse://...|postgresql://...`: copies the sealed hours
// of the SQLite ledger to a warehouse, incrementally (adapters/warehouse/warehouse.h).
#include <filesystem>
#include <iostream>

#include "adapters/warehouse/warehouse.h"
#include "cli_errors.h"
#include "commands.h"

namespace arbiter::app {

namespace {
struct SyncArgs {
  std::string db, to;
  size_t batch = 200000;
  bool quiet = false;
};

void RunSync(const SyncArgs& a, int* exit_code) {
  const std::string who = "arbiter ledger sync";
  auto fail = [&](const std::string& m, int code = 1) {
    std::cerr << who << ": " << m << "\n";
    *exit_code = code;
  };
  if (!warehouse::IsWarehouseUrl(a.to))
    return fail(
        "--to must be clickhouse://HOST:PORT[/DB] or postgresql://USER@HOST:PORT/DB, got \"" +
            a.to + "\"",
        2);
  if (!std::filesystem::exists(a.db)) return fail("ledger " + a.db + " does not exist");
  auto ledger = sqlite::Ledger::Open(a.db);
  if (!ledger.ok()) return fail(ledger.message());
  auto wh = warehouse::OpenWarehouse(a.to);
  if (!wh.ok()) return fail(wh.message());
  warehouse::SyncOptions o;
  o.batch_rows = a.batch;
  if (!a.quiet) o.progress = [](const std::string& s) { std::cerr << "sync: " << s << "\n"; };
  auto st = warehouse::SyncLedger(**ledger, **wh, o);
  if (!st.ok()) return fail(st.message());
  std::cout << "synced " << a.db << " -> " << (*wh)->Describe() << ": " << st->rows
            << " rows of new sealed hours, " << st->late
            << " late rows (new keys and versions of hours copied before), " << st->price_books
            << " price books" << (st->resumed ? " (resumed an interrupted sync)" : "")
            << "; the warehouse holds every hour before "
            << (st->sealed_before == INT64_MIN ? std::string("(nothing sealed)")
                                               : FormatRfc3339(st->sealed_before))
            << "\n";
  *exit_code = 0;
}
}  // namespace

void RegisterLedgerSync(CLI::App& app, int* exit_code) {
  CLI::App* ledger = app.get_subcommand("ledger");
  auto a = std::make_shared<SyncArgs>();
  auto* sync = ledger->add_subcommand(
      "sync",
      "Copy the sealed hours of the SQLite ledger to a warehouse, incrementally (by the ledger's\n"
      "change sequence, marked in the warehouse): ClickHouse (HTTP interface, ReplacingMergeTree\n"
      "by the ledger key and version) or PostgreSQL (ON CONFLICT on the ledger key). Rows that\n"
      "reach the ledger late (new keys or new versions of hours copied before) are copied too.\n"
      "Safe to kill and re-run at any moment. Then: arbiter invoice --db URL.\n"
      "  arbiter ledger sync --db ledger.db --to clickhouse://127.0.0.1:8123/default\n"
      "  arbiter ledger sync --db ledger.db --to postgresql://arbiter@db.example:5432/billing");
  sync->add_option("--db", a->db, "Ledger database (SQLite)")->required();
  sync->add_option("--to", a->to, "Warehouse URL: clickhouse://... or postgresql://...")
      ->required();
  sync->add_option("--batch-rows", a->batch, "Rows per insert (1 to 10000000; default 200000)")
      ->check(InRange(1, 10000000));
  sync->add_flag("-q,--quiet", a->quiet, "No progress lines on stderr");
  sync->callback([a, exit_code] { RunSync(*a, exit_code); });
}

}  // namespace arbiter::app
