// Compiled as part of schedext_cluster: the server is above the cluster layer.
#include "schedext/server/service.h"
