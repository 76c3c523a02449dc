// Raw objects for tests of policy watches: what the informer of a watch
// hands the cache (cluster::InformerObject with an OwnedObject), made from
// JSON by the real wire::ObjectDecoder.
#ifndef SCHEDEXT_TEST_TESTING_RAW_OBJECTS_H_
#define SCHEDEXT_TEST_TESTING_RAW_OBJECTS_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "schedext/cluster/informer.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::testing {

// The object `json` (one Kubernetes object) as a watch informer delivers it.
inline cluster::InformerObject RawInformerObject(std::string_view json) {
  const std::string page = R"({"metadata":{"resourceVersion":"1"},"items":[)" +
                           std::string(json) + "]}";
  wire::ObjectDecoder decoder;
  wire::ListMeta meta;
  std::shared_ptr<const cluster::OwnedObject> owned;
  const Status status = decoder.DecodeObjectList(
      wire::RequestBuffer::CopyOf(page), meta, [&](const wire::RawObject& object) {
        owned = std::make_shared<const cluster::OwnedObject>(object);
        return true;
      });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return {nullptr, nullptr, std::move(owned)};
}

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_RAW_OBJECTS_H_
