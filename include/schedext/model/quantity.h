// Kubernetes resource quantities ("500m", "1.5Gi", "1e3"), parsed exactly as
// apimachinery's resource.Quantity does, with integers only (no floating point).
//
// The exact value is kept in nano-units (10^-9), rounded away from zero at parse
// time as Kubernetes does; BinarySI values are capped at 2^63-1 units. Milli()
// and Value() round up (ceil) exactly as MilliValue()/Value() do, but report
// int64 overflow as an error where Go overflows silently.
// Thread-safety: immutable value type.
#ifndef SCHEDEXT_MODEL_QUANTITY_H_
#define SCHEDEXT_MODEL_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "schedext/status.h"

namespace schedext::model {

__extension__ typedef __int128 Int128;

class Quantity {
 public:
  // Parses the canonical or any other valid quantity form. Errors are
  // kInvalidArgument: `invalid quantity "5x"` or `quantity "99999E" is out of range`.
  static StatusOr<Quantity> Parse(std::string_view text);

  Quantity() = default;

  // ceil(value * 1000); kInvalidArgument if it does not fit an int64.
  StatusOr<int64_t> Milli() const;
  // ceil(value); kInvalidArgument if it does not fit an int64.
  StatusOr<int64_t> Value() const;

  Int128 nanos() const { return nanos_; }
  bool is_zero() const { return nanos_ == 0; }

 private:
  explicit Quantity(Int128 nanos) : nanos_(nanos) {}
  Int128 nanos_ = 0;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_QUANTITY_H_
