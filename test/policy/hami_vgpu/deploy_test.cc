// deploy/hami: the schedext configuration loads and builds with HamiVgpu,
// and the scheduler configuration sends HAMi's pods to that profile with
// the extender settings a HAMi switch-over needs.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "schedext/config/config.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"

namespace schedext {
namespace {

const std::string kDir = std::string(SCHEDEXT_SOURCE_DIR) + "/deploy/hami";

TEST(HamiDeployTest, SchedextConfigBuildsTheHamiProfile) {
  StatusOr<config::Config> cfg = config::LoadConfigFile(kDir + "/schedext.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->UsesPolicy("HamiVgpu"));
  policy::Registry registry;
  ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  policy::PolicyHost host;
  bool found = false;
  for (size_t i = 0; i < cfg->profiles.size(); ++i) {
    StatusOr<std::shared_ptr<const pipeline::Profile>> profile = pipeline::Profile::Build(
        cfg->profiles[i], registry, "profiles[" + std::to_string(i) + "]", &host);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    if ((*profile)->name() == "hami") {
      found = true;
      ASSERT_FALSE((*profile)->policies().empty());
      EXPECT_EQ((*profile)->policies()[0]->Name(), "HamiVgpu");
    }
  }
  EXPECT_TRUE(found) << "a profile named hami";
}

TEST(HamiDeployTest, SchedulerSendsHamiPodsToTheHamiProfile) {
  const YAML::Node doc = YAML::LoadFile(kDir + "/kube-scheduler-config.yaml");
  EXPECT_EQ(doc["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(doc["profiles"][0]["schedulerName"].as<std::string>(), "hami-scheduler");
  ASSERT_EQ(doc["extenders"].size(), 1U);
  const YAML::Node e = doc["extenders"][0];
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "http://schedext.schedext-system.svc:8888/hami");
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  // Without it kube-scheduler would evict vGPU pods by nvidia.com/gpu alone.
  EXPECT_EQ(e["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  // kube-scheduler checks the count the nodes advertise and leaves the
  // per-vGPU amounts, which no node advertises, to schedext.
  std::set<std::string> checked;
  std::set<std::string> ignored;
  for (const YAML::Node& r : e["managedResources"]) {
    (r["ignoredByScheduler"].as<bool>() ? ignored : checked).insert(r["name"].as<std::string>());
  }
  EXPECT_EQ(checked, (std::set<std::string>{"nvidia.com/gpu"}));
  EXPECT_EQ(ignored, (std::set<std::string>{"nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                                            "nvidia.com/gpucores"}));
}

}  // namespace
}  // namespace schedext
