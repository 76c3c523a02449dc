// Pipeline micro-benchmarks with the default profile (NodeHealth +
// TaintToleration): the filter and score loops alone, the directory lookup of
// node-cache mode, and whole requests through ExtenderService::Handle (decode
// + resolve + policies + encode, no HTTP). Names: <what>/<mode>/<nodes>.
//
// Node-cache (names) requests resolve against BenchDirectory, a benchmark-only
// stand-in for the cluster cache of issue 3.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "gen/payload_gen.h"
#include "schedext/explain/pending_events.h"
#include "schedext/server/service.h"
#include "support/bench_support.h"

namespace schedext::bench {
namespace {

const char* ModeName(Mode m) { return m == Mode::kFull ? "full" : "names"; }

void Filter(benchmark::State& state, size_t n, Mode mode) {
  const Prepared& p = Prepare(n, mode);
  policy::RequestState rs;
  pipeline::FilterOutcome out;
  for (auto _ : state) {
    rs.Clear();
    Status s = p.profile->RunFilters(p.args.pod, p.nodes, rs, out);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.passed.data());
  }
  state.counters["passed"] = static_cast<double>(out.passed.size());
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                  benchmark::Counter::kInvert);
}

void Score(benchmark::State& state, size_t n, Mode mode) {
  const Prepared& p = Prepare(n, mode);
  pipeline::ScoreScratch scratch;
  std::vector<int64_t> out;
  for (auto _ : state) {
    Status s = p.profile->RunScorers(p.args.pod, p.nodes, scratch, out);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                  benchmark::Counter::kInvert);
}

// Node-cache mode: names -> NodeInfo* through the benchmark directory.
void Resolve(benchmark::State& state, size_t n) {
  const Prepared& p = Prepare(n, Mode::kNames);
  const BenchDirectory& dir = Payloads::Get().Directory(n);
  std::vector<const model::NodeInfo*> out;
  std::shared_ptr<const cluster::Snapshot> keep_alive;
  for (auto _ : state) {
    Status s = dir.Resolve(p.args.node_names, out, keep_alive);
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(s);
  }
}

// Filter split across two threads (item 7 of issue 4): the caller takes the
// first half, a persistent helper thread the second; then the outcomes are
// merged in order. Measured against `filter` to decide whether splitting pays.
class SplitFilter {
 public:
  explicit SplitFilter(const Prepared& p) : p_(p), helper_([this] { Run(); }) {}
  ~SplitFilter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    helper_.join();
  }
  // Filters every node; `out` gets the merged outcome.
  void Filter(pipeline::FilterOutcome& out) {
    const size_t half = p_.nodes.size() / 2;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++generation_;
    }
    cv_.notify_one();
    rs_[0].Clear();
    (void)p_.profile->RunFilters(p_.args.pod, std::span(p_.nodes).first(half), rs_[0], part_[0]);
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return done_ == generation_; });
    }
    out.Clear();
    out.passed = part_[0].passed;
    out.failed = part_[0].failed;
    out.unresolvable = part_[0].unresolvable;
    const auto offset = static_cast<uint32_t>(half);
    for (uint32_t k : part_[1].passed) {
      out.passed.push_back(k + offset);
    }
    for (auto r : part_[1].failed) {
      out.failed.push_back({r.node + offset, r.reason});
    }
    for (auto r : part_[1].unresolvable) {
      out.unresolvable.push_back({r.node + offset, r.reason});
    }
  }

 private:
  void Run() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) {
          return;
        }
        seen = generation_;
      }
      const size_t half = p_.nodes.size() / 2;
      rs_[1].Clear();
      (void)p_.profile->RunFilters(p_.args.pod, std::span(p_.nodes).subspan(half), rs_[1],
                                   part_[1]);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = seen;
      }
      cv_.notify_all();
    }
  }

  const Prepared& p_;
  policy::RequestState rs_[2];
  pipeline::FilterOutcome part_[2];
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  uint64_t done_ = 0;
  bool stop_ = false;
  std::thread helper_;
};

void FilterSplit2(benchmark::State& state, size_t n, Mode mode) {
  const Prepared& p = Prepare(n, mode);
  SplitFilter split(p);
  pipeline::FilterOutcome out;
  for (auto _ : state) {
    split.Filter(out);
    benchmark::DoNotOptimize(out.passed.data());
  }
  state.counters["passed"] = static_cast<double>(out.passed.size());
}

// A whole request through the transport-free service, with one reused Scratch
// and reply string as a server worker has.
void Service(benchmark::State& state, size_t n, Mode mode, server::Verb verb) {
  const wire::RequestBuffer& body = Payloads::Get().Body(n, mode, Verb::kFilter);
  const BenchDirectory& dir = Payloads::Get().Directory(n);
  server::ExtenderService service(DefaultProfiles(), 0, dir.cache(), nullptr, nullptr);
  server::Scratch scratch;
  std::string out;
  server::RequestSummary summary;
  for (auto _ : state) {
    const int status = service.Handle(verb, 0, body, scratch, out, summary);
    if (status != 200 || !summary.error.empty()) {
      state.SkipWithError(("status " + std::to_string(status) + ": " + summary.error).c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["reply_bytes"] = static_cast<double>(out.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

// What a filter that rejected the pod on every node adds to its own thread
// for the SchedextUnschedulable event (explain/pending_events.h): the
// observer's decision and the copy of the job onto the writer's queue. The
// writer's work (explain, note, API write) is off the clock, as it is off
// the request path.
class NullClient final : public cluster::KubeClient {
 public:
  StatusOr<cluster::HttpResult> Get(std::string_view) override {
    return cluster::HttpResult{404, ""};
  }
  StatusOr<cluster::HttpResult> Post(std::string_view, std::string_view) override {
    return cluster::HttpResult{201, ""};
  }
  StatusOr<cluster::HttpResult> Patch(std::string_view, std::string_view,
                                      std::string_view) override {
    return cluster::HttpResult{200, ""};
  }
  Status Watch(std::string_view, const std::function<bool(std::string_view)>&) override {
    return OkStatus();
  }
  void CancelWatches() override {}
};

void EventEnqueue(benchmark::State& state, size_t n) {
  const Prepared& p = Prepare(n, Mode::kNames);
  const BenchDirectory& dir = Payloads::Get().Directory(n);
  NullClient client;
  cluster::EventRecorder recorder(client, {});
  explain::PendingEventOptions options;
  options.queue_size = 64;
  options.profiles = {p.profile.get()};
  auto writer = std::make_unique<explain::PendingEventWriter>(recorder, options);
  server::Scratch s;
  s.args = p.args;
  s.nodes = p.nodes;
  s.node_index.resize(p.nodes.size());
  for (uint32_t i = 0; i < s.node_index.size(); ++i) s.node_index[i] = i;
  s.failed.push_back({p.args.node_names.front(), "rejected"});
  s.snapshot = dir.cache()->snapshot();
  wire::RequestBuffer body;
  const server::HandledExchange exchange{.verb = server::Verb::kFilter,
                                         .profile = *p.profile,
                                         .body = body,
                                         .scratch = s,
                                         .reply = {},
                                         .http_status = 200,
                                         .start = std::chrono::steady_clock::now()};
  for (auto _ : state) {
    writer->OnExchange(exchange);
    if (writer->queued() >= options.queue_size) {
      state.PauseTiming();
      // A new writer: the old one's jobs are dropped unprocessed.
      writer = std::make_unique<explain::PendingEventWriter>(recorder, options);
      state.ResumeTiming();
    }
  }
}

void Register() {
  for (size_t n : kSizes) {
    for (Mode m : {Mode::kNames, Mode::kFull}) {
      const std::string suffix = std::string("/") + ModeName(m) + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(("filter" + suffix).c_str(), Filter, n, m)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("score" + suffix).c_str(), Score, n, m)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("service_filter" + suffix).c_str(), Service, n, m,
                                   server::Verb::kFilter)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("service_prioritize" + suffix).c_str(), Service, n, m,
                                   server::Verb::kPrioritize)
          ->Unit(benchmark::kMicrosecond);
    }
    const std::string names = "/names/" + std::to_string(n);
    benchmark::RegisterBenchmark(("event_enqueue" + names).c_str(), EventEnqueue, n)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("resolve" + names).c_str(), Resolve, n)
        ->Unit(benchmark::kMicrosecond);
    // Wall time and the CPU of both threads.
    benchmark::RegisterBenchmark(("filter_split2" + names).c_str(), FilterSplit2, n, Mode::kNames)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MeasureProcessCPUTime();
  }
}

}  // namespace
}  // namespace schedext::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  schedext::bench::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
