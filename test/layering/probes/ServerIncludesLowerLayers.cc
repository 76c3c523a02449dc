// Compiled as part of schedext_server: every layer below it is reachable,
// public headers and private ones alike. The control of the probes above:
// if views were broken for everyone, this one fails.
#include "common/text.h"
#include "schedext/cluster/cache.h"
#include "schedext/model/node_info.h"
#include "schedext/pipeline/profile.h"
#include "schedext/server/service.h"
#include "schedext/status.h"
#include "wire/json_scan.h"

namespace schedext::layering_probe {
int Probe() { return 0; }
}  // namespace schedext::layering_probe
