// NodeLoad's metric families, written once for all its instances.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_METRICS_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_METRICS_H_

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"

namespace schedext::policy::nodeload {

// The metric families of every NodeLoad instance (one writer for all, shared
// through PolicyHandle::Shared, so each family appears once), labelled
// policy="profiles[i].policies[j]":
//   schedext_nodeload_polls_total, schedext_nodeload_query_errors_total,
//   schedext_nodeload_sample_age_seconds, schedext_nodeload_nodes_with_data,
//   schedext_nodeload_recent_binds.
// Thread-safety: Add from factories, Write from any thread.
class NodeLoadMetrics {
 public:
  void Add(std::string instance, std::shared_ptr<const LoadPoller> poller,
           std::shared_ptr<const BindLedger> ledger);
  // Appends the families in the Prometheus text format.
  void Write(std::string& out) const;

 private:
  struct Instance {
    std::string name;
    std::shared_ptr<const LoadPoller> poller;
    std::shared_ptr<const BindLedger> ledger;
  };
  mutable std::mutex mu_;
  std::vector<Instance> instances_;
};

// "profiles[0].policies[1].args" → "profiles[0].policies[1]": the name of one
// NodeLoad instance in the policy label, with '"', '\\' and newlines as '_'.
std::string InstanceName(std::string_view args_path);

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_METRICS_H_
