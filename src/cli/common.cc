// Helpers shared by the offline subcommands (cli.h).
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "schedext/cli/commands.h"
#include "schedext/model/owned.h"
#include "schedext/pipeline/profile_set.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::cli {

StatusOr<LoadedConfig> LoadProfiles(const std::string& path) {
  SCHEDEXT_ASSIGN_OR_RETURN(config::Config config, config::LoadConfigFile(path));
  LoadedConfig loaded;
  loaded.host = std::make_unique<policy::PolicyHost>();
  policy::Registry registry;
  SCHEDEXT_RETURN_IF_ERROR(policy::RegisterBuiltinPolicies(registry));
  auto built = pipeline::BuildProfileSet(config, registry, loaded.host.get(), /*intern=*/false);
  if (!built.ok()) {
    return built.status().WithContext(path);
  }
  loaded.profiles = std::move(built->profiles);
  loaded.default_profile = built->default_profile;
  loaded.config = std::move(config);
  return loaded;
}

namespace {

// `text` as a List page the object decoder reads: a List's items, or a bare
// array of objects.
StatusOr<std::string> AsListPage(std::string_view text, std::string_view what) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  nlohmann::json items;
  if (doc.is_array()) {
    items = doc;
  } else if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    items = doc["items"];
  } else {
    return InvalidArgumentError(std::string(what) +
                                ": expected a List ({\"items\":[...]}) or an array of objects");
  }
  return nlohmann::json{{"metadata", {{"resourceVersion", "1"}}}, {"items", std::move(items)}}
      .dump();
}

}  // namespace

StatusOr<std::unique_ptr<cluster::ClusterCache>> OfflineCache(std::string_view nodes_json,
                                                              std::string_view pods_json,
                                                              const config::Config& /*config*/,
                                                              const policy::PolicyHost* host) {
  cluster::CacheOptions options;
  options.assume_ttl = std::chrono::milliseconds(0);
  if (host != nullptr) {
    options.accountings = host->accountings();
    options.summaries = host->summaries();
    for (const policy::PolicyHost::WatchEntry& watch : host->watches()) {
      options.watches.push_back(watch.handler);
    }
  }
  auto cache = std::make_unique<cluster::ClusterCache>(options);
  wire::ObjectDecoder decoder;
  wire::ListMeta meta;
  std::vector<cluster::InformerObject> nodes;
  if (!nodes_json.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::string page, AsListPage(nodes_json, "nodes"));
    const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(page);
    SCHEDEXT_RETURN_IF_ERROR(decoder.DecodeNodeList(buffer, meta, [&](const wire::NodeObject& o) {
      nodes.push_back(
          {std::make_shared<const model::OwnedNode>(o.info, o.resource_version), {}, {}});
      return true;
    }));
  }
  std::vector<cluster::InformerObject> pods;
  if (!pods_json.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::string page, AsListPage(pods_json, "pods"));
    const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(page);
    SCHEDEXT_RETURN_IF_ERROR(decoder.DecodePodList(buffer, meta, [&](const wire::PodObject& o) {
      pods.push_back({{}, std::make_shared<const model::OwnedPod>(o.info, o.resource_version), {}});
      return true;
    }));
  }
  cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache->OnReplace(cluster::ResourceKind::kPods, std::move(pods));
  // The policies' extra watches have nothing offline: synced empty.
  for (size_t i = 0; i < options.watches.size(); ++i) {
    cache->WatchFeed(i).OnReplace(cluster::ResourceKind::kObjects, {});
  }
  return cache;
}

}  // namespace schedext::cli
