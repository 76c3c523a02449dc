// Compiled as part of GpuShare's library: a policy sees the framework, not
// other policies.
#include "policy/builtin/nodeload/nodeload.h"
