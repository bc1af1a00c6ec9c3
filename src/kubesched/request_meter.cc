#include "kubesched/request_meter.h"

#include <algorithm>

#include "adapters/sqlite/ledger.h"
#include "core/billing/invoice.h"
#include "core/billing/metering.h"

namespace arbiter::kubesched {

RequestMeter::RequestMeter(RequestMeterOptions o) : o_(std::move(o)) {}

Result<std::unique_ptr<RequestMeter>> RequestMeter::Start(RequestMeterOptions o) {
  std::unique_ptr<RequestMeter> m(new RequestMeter(std::move(o)));
  auto ledger = sqlite::Ledger::Open(m->o_.ledger);
  if (!ledger.ok()) return Status::InvalidArgument("--ledger: " + ledger.message());
  m->ledger_ = std::move(ledger).value();
  m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

RequestMeter::~RequestMeter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RequestMeter::Submit(RequestSnapshot s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_ = std::move(s);
  }
  cv_.notify_all();
}

void RequestMeter::Log(const std::string& m) {
  if (o_.log) o_.log(m);
}

void RequestMeter::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stopping_ || pending_.has_value(); });
    if (stopping_) return;
    RequestSnapshot s = std::move(*pending_);
    pending_.reset();
    l.unlock();
    Write(s);
    l.lock();
  }
}

Result<RequestMeter::Plan> RequestMeter::PlanWrite(const RequestSnapshot& s, Millis delay,
                                                   bool open_hours) {
  Plan p;
  const Millis t = s.now - delay;
  p.closed_before = t - ((t % billing::kHourMs) + billing::kHourMs) % billing::kHourMs;
  billing::MeterConfig cfg;  // the scrape interval is not used: nothing is sampled
  auto rows = billing::MeterSegments(s.runs, cfg);
  if (!rows.ok()) return rows.status();
  p.rows = std::move(rows).value();
  if (!open_hours)
    std::erase_if(p.rows, [&](const billing::HourlyRow& r) { return r.hour >= p.closed_before; });
  return p;
}

void RequestMeter::Write(const RequestSnapshot& s) {
  auto problem = [&](const std::string& why) {
    if (why == last_problem_) return;  // once while it repeats
    last_problem_ = why;
    Log("request track: " + why);
  };
  if (s.books.empty()) {
    problem("no PriceBook to rate with: apply one (kubectl), or give --price-book FILE");
    return;
  }
  auto catalog = billing::PriceCatalog::Create(s.books);
  if (!catalog.ok()) return problem(catalog.message());
  auto plan = PlanWrite(s, o_.delay, o_.open_hours);
  if (!plan.ok()) return problem(plan.message());
  if (auto check = billing::BuildInvoices(plan->rows, *catalog); !check.ok())
    return problem(check.message() + "; nothing was written");
  auto st = ledger_->Write(plan->rows, *catalog, plan->closed_before);
  if (!st.ok()) return problem(st.message());
  last_problem_.clear();
  const Millis before = sealed_before_.exchange(plan->closed_before);
  ++writes_;
  if (st->inserted + st->corrected > 0 || before != plan->closed_before)  // not each refill
    Log("request track: " + std::to_string(s.runs.size()) + " runs, " +
        std::to_string(plan->rows.size()) + " hourly rows: " + std::to_string(st->inserted) +
        " inserted, " + std::to_string(st->unchanged) + " unchanged, " +
        std::to_string(st->replaced) + " replaced, " + std::to_string(st->corrected) +
        " corrected; sealed before " + FormatRfc3339(plan->closed_before));
}

void RequestTrackSource::Submit(RequestSnapshot s) {
  std::lock_guard<std::mutex> l(mu_);
  latest_ = std::move(s);
}

Result<billing::RequestTrack> RequestTrackSource::TrackOf(
    const std::vector<billing::RunSegment>& runs, Millis from, Millis to) {
  billing::RequestTrack t;
  billing::MeterConfig cfg;  // the scrape interval is not used: nothing is sampled
  auto rows = billing::MeterSegments(runs, cfg);
  if (!rows.ok()) return rows.status();
  t.rows = std::move(rows).value();
  std::erase_if(t.rows, [&](const billing::HourlyRow& r) { return r.hour < from || r.hour >= to; });
  for (const billing::RunSegment& r : runs) t.workloads.push_back(r.workload);
  std::sort(t.workloads.begin(), t.workloads.end());
  t.workloads.erase(std::unique(t.workloads.begin(), t.workloads.end()), t.workloads.end());
  return t;
}

std::optional<billing::RequestTrack> RequestTrackSource::Track(Millis from, Millis to,
                                                               bool closed) {
  std::vector<billing::RunSegment> runs;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!latest_ || (closed && latest_->now < to)) return std::nullopt;
    runs = latest_->runs;
  }
  if (closed && from > sealed_before_.load()) sealed_before_ = from;
  auto t = TrackOf(runs, from, to);
  if (!t.ok()) return std::nullopt;
  return std::move(t).value();
}

}  // namespace arbiter::kubesched
