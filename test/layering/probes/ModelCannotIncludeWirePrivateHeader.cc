// Compiled as part of schedext_model: wire/ is above model/, its private
// headers included.
#include "wire/json_scan.h"
