// The SQLite ledger as a billing::LedgerStore (the embedded default behind the seam). Invoices
// of the `arbiter invoice --db FILE` command keep using sqlite::LedgerInvoices (daily rollups);
// this view reads the hourly rows, for code written against any store.
#pragma once

#include "adapters/sqlite/ledger.h"
#include "core/billing/ledger_store.h"

namespace arbiter::sqlite {

class SqliteStore : public billing::LedgerStore {
 public:
  SqliteStore(Ledger& ledger, std::string path) : ledger_(ledger), path_(std::move(path)) {}
  std::string Describe() const override { return path_; }
  Result<std::vector<PriceBook>> PriceBooks() override { return ledger_.PriceBooks(); }
  Result<std::vector<billing::RowSpan>> ReadSpans(const billing::SpanQuery& q) override {
    RowFilter f;
    f.namespace_ = q.namespace_;
    f.from = q.from;
    f.to = q.to;
    auto rows = ledger_.Read(f);
    if (!rows.ok()) return rows.status();
    return billing::SpansOfRows(std::move(rows).value(), q.cuts);
  }

 private:
  Ledger& ledger_;
  std::string path_;
};

}  // namespace arbiter::sqlite
