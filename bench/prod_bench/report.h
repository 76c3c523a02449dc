// schedext-prod-bench's report: the checks of the replies before measuring,
// and the tables of summary.md.
#ifndef SCHEDEXT_BENCH_PROD_BENCH_REPORT_H_
#define SCHEDEXT_BENCH_PROD_BENCH_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "prod_bench/measure.h"
#include "prod_bench/options.h"

namespace schedext::bench::prod {

// Milliseconds with 2, 1 or no decimals by size.
std::string Ms(double v);

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

// One table row per (profile, verb) of `condition`.
std::string Table(const std::vector<Run>& runs, const std::string& condition, bool has_go);

// Checks that a filter reply accounts for every node and a prioritize reply
// scores every node; a description for the summary, `ok` false otherwise.
std::string CheckReply(const std::string& verb, const std::string& reply, size_t nodes, bool& ok);


// What summary.md is written from: the run's options, the notes logged on
// the way (markdown list lines), the reply checks, the churn's account, the
// time series' table rows, every measured run, the variants measured (with
// "main" first) and whether the Go floor ran in the idle rounds.
struct Summary {
  const Options& options;
  std::string notes;
  std::string sanity;
  std::string churn;
  std::string traces;
  const std::vector<Run>& runs;
  std::vector<std::string> variants;
  bool go_idle = false;
};
void WriteSummary(const Summary& s, std::ostream& out);

}  // namespace schedext::bench::prod

#endif  // SCHEDEXT_BENCH_PROD_BENCH_REPORT_H_
