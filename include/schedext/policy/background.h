// BackgroundTask: work a policy runs off the request path (NodeLoad's metrics
// poller, for example). The policy hands it to its PolicyHandle; the handle's
// owner (main, or a test) starts every task once the cluster connection (if
// any) has started, and stops them all before it tears the connection and
// the policies down. No policy starts a thread of its own from its factory,
// and none is ever detached.
//
// Thread-safety: Start and Stop are called once each, in that order, from the
// owner's thread (Stop may come without Start when start-up failed). Stop
// must return promptly (wake any sleep), join what Start started, and leave
// the policy usable: hooks may still run while the server drains, so they
// must cope with data that stopped updating (NodeLoad: stale ⇒ neutral).
#ifndef SCHEDEXT_POLICY_BACKGROUND_H_
#define SCHEDEXT_POLICY_BACKGROUND_H_

#include <string_view>

#include "schedext/status.h"

namespace schedext::policy {

class BackgroundTask {
 public:
  virtual ~BackgroundTask() = default;
  // For logs: "NodeLoad poller".
  virtual std::string_view Name() const = 0;
  // Starts the work (typically one std::thread owned by the task). A non-OK
  // status stops start-up (logged, exit 1).
  virtual Status Start() = 0;
  // Stops and joins. Idempotent; called also when Start was not.
  virtual void Stop() = 0;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BACKGROUND_H_
