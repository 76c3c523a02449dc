// The real kube-apiserver closes a client's idle keep-alive connection after
// a quiet spell (Go's http.Server IdleTimeout, 90 s in kube-apiserver's
// secure serving); the fake API server never does. A bind arriving after
// such a quiet spell must not fail because schedext's client reused that
// dead connection. A suite of its own: it sleeps, so ctest runs it in
// parallel with the others.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "control_plane/api_objects.h"
#include "control_plane/control_plane_suite.h"
#include "schedext/cluster/kube_binder.h"

namespace schedext::testing {
namespace {

class IdleConnectionTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.namespaces = {"default", "idle"};
    StartSharedControlPlane(std::move(options));
  }
};

TEST_F(IdleConnectionTest, BindsAfterTheApiServerHasClosedTheIdleConnection) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("idle-1")).ok());
  std::string uids[2];
  for (int i = 0; i < 2; ++i) {
    auto created =
        cp().Create("/api/v1/namespaces/idle/pods", PodJson("idle", "p" + std::to_string(i)));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    uids[i] = JsonString(*created, {"metadata", "uid"});
  }
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  cluster::KubeBinder binder(*client);
  Status first = binder.Bind({"idle", "p0", uids[0], "idle-1"});
  ASSERT_TRUE(first.ok()) << first.ToString();
  // Longer than the API server's 90 s idle timeout.
  std::this_thread::sleep_for(std::chrono::seconds(100));
  // The first attempt must succeed: kube-scheduler does not retry a failed
  // extender bind of this pod at once, it requeues the pod.
  Status second = binder.Bind({"idle", "p1", uids[1], "idle-1"});
  EXPECT_TRUE(second.ok()) << second.ToString();
  auto pod = cp().AdminRequest("GET", "/api/v1/namespaces/idle/pods/p1");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(JsonString(pod->body, {"spec", "nodeName"}), "idle-1");
}

}  // namespace
}  // namespace schedext::testing
