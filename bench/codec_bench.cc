// Codec micro-benchmarks: decode (with simdjson's DOM parse of the same body as
// the raw-parse reference), and the three reply encoders, at every size and
// node mode. Names: <what>/<mode>/<nodes>, so `--benchmark_filter=/100$` runs
// the smallest size (what CTest does). Timings are never asserted.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <string>
#include <string_view>

#include "gen/payload_gen.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "support/bench_support.h"

namespace schedext::bench {
namespace {

const char* ModeName(Mode m) { return m == Mode::kFull ? "full" : "names"; }

void Fail(benchmark::State& state, const Status& s) {
  state.SkipWithError(s.message().c_str());
}

// RequestDecoder::DecodeExtenderArgs, in place from the padded buffer, with one
// reused decoder and view as a server worker has.
void Decode(benchmark::State& state, size_t n, Mode mode) {
  const wire::RequestBuffer& body = Payloads::Get().Body(n, mode, Verb::kFilter);
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  for (auto _ : state) {
    Status s = decoder.DecodeExtenderArgs(body, args);
    if (!s.ok()) {
      Fail(state, s);
      break;
    }
    benchmark::DoNotOptimize(args.node_names.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["nodes"] = static_cast<double>(args.node_names.size());
}

// The reference: simdjson's full parse of the same bytes (stage 1 + tape), no
// extraction at all, with a reused parser and no copy.
void RawParse(benchmark::State& state, size_t n, Mode mode) {
  const wire::RequestBuffer& body = Payloads::Get().Body(n, mode, Verb::kFilter);
  simdjson::dom::parser parser;
  for (auto _ : state) {
    auto doc = parser.parse(reinterpret_cast<const uint8_t*>(body.data()), body.size(),
                            /*realloc_if_needed=*/false);
    if (doc.error()) {
      state.SkipWithError(simdjson::error_message(doc.error()));
      break;
    }
    benchmark::DoNotOptimize(doc.value_unsafe());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

// The filter reply: passing names (names mode) or the passing nodes' raw JSON
// (full mode), with the rejected nodes and reasons.
void EncodeFilter(benchmark::State& state, size_t n, Mode mode) {
  const Prepared& p = Prepare(n, mode);
  const wire::FilterResultView result = p.FilterResult();
  std::string out;
  for (auto _ : state) {
    out.clear();
    wire::AppendFilterResult(result, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
  state.counters["reply_bytes"] = static_cast<double>(out.size());
}

// The prioritize reply: one {"Host","Score"} per node.
void EncodePriorities(benchmark::State& state, size_t n) {
  const Prepared& p = Prepare(n, Mode::kNames);
  std::string out;
  for (auto _ : state) {
    out.clear();
    wire::AppendHostPriorityList(p.host_scores, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
  state.counters["reply_bytes"] = static_cast<double>(out.size());
}

// ---- hostile bodies: one structure made huge ----

// The structures a client can make huge, each decoded at 1x, 10x and 100x
// (the issue-41 sizes at 100x: a pod with 32,000 annotations, 256 KB of them;
// 100,000 labels, 1.4 MB; 60,000 extended resources; 100,000 victim nodes,
// 6.3 MB). Time per element must stay flat (docs/benchmarks.md).
enum class Hostile { kAnnotations, kLabels, kResources, kVictims };

// {"<prefix>0":<value>,...}
std::string JsonMap(size_t n, std::string_view prefix, std::string_view value) {
  std::string out = "{";
  for (size_t i = 0; i < n; ++i) {
    out.append(i == 0 ? "\"" : ",\"").append(prefix).append(std::to_string(i));
    out.append("\":").append(value);
  }
  return out + "}";
}

std::string HostileBody(Hostile what, size_t n) {
  std::string meta = R"("name":"p","namespace":"d","uid":"u")";
  std::string requests = R"({"cpu":"100m"})";
  switch (what) {
    case Hostile::kAnnotations:
      meta += R"(,"annotations":)" + JsonMap(n, "a.example.com/k", "\"1\"");
      break;
    case Hostile::kLabels:
      meta += R"(,"labels":)" + JsonMap(n, "l", "\"1\"");
      break;
    case Hostile::kResources:
      requests = JsonMap(n, "example.com/r", "\"1\"");
      break;
    case Hostile::kVictims:
      break;
  }
  const std::string pod = R"({"metadata":{)" + meta +
                          R"(},"spec":{"containers":[{"name":"c","resources":{"requests":)" +
                          requests + "}}]}}";
  if (what != Hostile::kVictims) {
    return R"({"Pod":)" + pod + R"(,"NodeNames":["n1"]})";
  }
  std::string body = R"({"Pod":)" + pod + R"(,"NodeNameToMetaVictims":{)";
  for (size_t i = 0; i < n; ++i) {
    body += i == 0 ? "\"" : ",\"";
    body += "node-" + std::to_string(i) +
            R"(":{"Pods":[{"UID":"00000000-0000-0000-0000-000000000000"}],"NumPDBViolations":0})";
  }
  return body + "}}";
}

void DecodeHostile(benchmark::State& state, Hostile what, size_t n) {
  const wire::RequestBuffer body = wire::RequestBuffer::CopyOf(HostileBody(what, n));
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  wire::PreemptionArgsView preemption;
  for (auto _ : state) {
    const Status s = what == Hostile::kVictims ? decoder.DecodePreemptionArgs(body, preemption)
                                               : decoder.DecodeExtenderArgs(body, args);
    if (!s.ok()) {
      Fail(state, s);
      break;
    }
    benchmark::DoNotOptimize(args.pod.labels.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
  // Seconds per element (shown in the unit of the run: us per element).
  state.counters["per_element"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Register() {
  const struct {
    const char* name;
    Hostile what;
    size_t base;
  } hostile[] = {{"annotations", Hostile::kAnnotations, 320},
                 {"labels", Hostile::kLabels, 1000},
                 {"resources", Hostile::kResources, 600},
                 {"victims", Hostile::kVictims, 1000}};
  for (const auto& h : hostile) {
    for (const size_t scale : {1, 10, 100}) {
      const size_t n = h.base * scale;
      benchmark::RegisterBenchmark(
          ("hostile/" + std::string(h.name) + "/" + std::to_string(n)).c_str(), DecodeHostile,
          h.what, n)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (size_t n : kSizes) {
    for (Mode m : {Mode::kNames, Mode::kFull}) {
      const std::string suffix = std::string("/") + ModeName(m) + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(("decode" + suffix).c_str(), Decode, n, m)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("raw_parse" + suffix).c_str(), RawParse, n, m)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("encode_filter" + suffix).c_str(), EncodeFilter, n, m)
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("encode_priorities/names/" + std::to_string(n)).c_str(),
                                 EncodePriorities, n)
        ->Unit(benchmark::kMicrosecond);
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
