// AsNodeStateCodec / AsStateRecorder (policy/recorded_state.h). A query for
// an optional interface: the record and replay paths ask once per sampled or
// replayed request, never the per-node loops.
#include "schedext/policy/recorded_state.h"

namespace schedext::policy {

const NodeStateCodec* AsNodeStateCodec(const NodeAccounting& accounting) {
  return dynamic_cast<const NodeStateCodec*>(&accounting);
}

const RequestStateRecorder* AsStateRecorder(const Policy& policy) {
  return dynamic_cast<const RequestStateRecorder*>(&policy);
}

}  // namespace schedext::policy
