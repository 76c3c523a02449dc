#include "gen/prod_objects.h"

namespace schedext::bench {
namespace {

constexpr std::string_view kGpuResources =
    "\"aliyun.com/gpu-count\":\"4\",\"aliyun.com/gpu-mem\":\"64\",";

// The UUID of HAMi device `device` of `node`.
std::string HamiUuid(std::string_view node, size_t device) {
  return "GPU-" + std::string(node) + "-" + std::to_string(device) +
         "-5c87-89ac-b1a6-7b53aa24b0ec";
}

// HAMi's device plugin registration of 8 A100s of 80 GiB, 10 vGPUs each,
// two NUMA nodes, in its text form.
std::string HamiRegister(std::string_view node) {
  std::string o;
  for (size_t d = 0; d < 8; ++d) {
    o += HamiUuid(node, d) + ",10,81920,100,NVIDIA-A100-SXM4-80GB," + std::to_string(d / 4) +
         ",true," + std::to_string(d) + ",hami-core:";
  }
  return o;
}

// `names_body` with the generator's pod limits replaced by `limits` (keys
// sorted as Go writes them); empty when the pod no longer has that shape.
std::string WithLimits(const std::string& names_body, std::string_view limits) {
  constexpr std::string_view kGenerated = "\"limits\":{\"cpu\":\"2\",\"memory\":\"4Gi\"}";
  std::string body = names_body;
  const size_t at = body.find(kGenerated);
  if (at == std::string::npos) {
    return "";
  }
  body.replace(at, kGenerated.size(), limits);
  return body;
}

}  // namespace

std::string NodeObject(std::string_view generated) {
  std::string o = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",";
  o.append(generated.substr(1));
  const size_t uid = o.find(",\"uid\":\"");
  const size_t labels = o.find(",\"labels\":");
  if (uid != std::string::npos && labels != std::string::npos && uid < labels) {
    o.erase(uid, labels - uid);
  }
  for (std::string_view key : {"\"capacity\":{", "\"allocatable\":{"}) {
    const size_t at = o.find(key);
    if (at != std::string::npos) o.insert(at + key.size(), kGpuResources);
  }
  // Into the generated annotations, between csi.volume... and node.alpha...
  // (sorted); a second "annotations" key would replace the first one.
  constexpr std::string_view kName = "\"name\":\"";
  constexpr std::string_view kAnnotations = "\"annotations\":{";
  constexpr std::string_view kAfter = "\"node.alpha.kubernetes.io/ttl\"";
  const size_t name = o.find(kName);
  const size_t annotations = o.find(kAnnotations);
  if (name != std::string::npos && annotations != std::string::npos) {
    const size_t begin = name + kName.size();
    const std::string node = o.substr(begin, o.find('"', begin) - begin);
    const std::string entry =
        "\"hami.io/node-nvidia-register\":\"" + HamiRegister(node) + "\"";
    const size_t after = o.find(kAfter, annotations);
    if (after != std::string::npos) {
      o.insert(after, entry + ",");
    } else {
      const size_t open = annotations + kAnnotations.size();
      o.insert(open, o[open] == '}' ? entry : entry + ",");
    }
  }
  return o;
}

std::string PodObject(const std::string& name, const std::string& node, size_t index) {
  const bool gpu = index % 2 == 0;
  std::string o = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" + name +
                  "\",\"namespace\":\"default\",\"labels\":{\"app\":\"bench\",\"tier\":\"" +
                  (index % 3 == 0 ? "web" : "batch") + "\"}";
  if (gpu) {
    o += ",\"annotations\":{\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"true\","
         "\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"1710410441000000000\","
         "\"ALIYUN_COM_GPU_MEM_DEV\":\"16\",\"ALIYUN_COM_GPU_MEM_IDX\":\"" +
         std::to_string(index / 2 % 4) + "\",\"ALIYUN_COM_GPU_MEM_POD\":\"4\"," +
         "\"hami.io/vgpu-devices-allocated\":\"" + HamiUuid(node, index / 2 % 8) +
         ",NVIDIA,20000,25:;\"}";
  }
  o += "},\"spec\":{\"nodeName\":\"" + node +
       "\",\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"app\",\"image\":"
       "\"123456789012.dkr.ecr.us-west-2.amazonaws.com/platform/bench:v1.4.2\","
       "\"resources\":{\"requests\":{\"cpu\":\"" +
       std::to_string(250 + 50 * (index % 5)) + "m\",\"memory\":\"512Mi\"},\"limits\":{" +
       (gpu ? std::string("\"aliyun.com/gpu-mem\":\"4\",") : std::string()) +
       "\"cpu\":\"1\",\"memory\":\"1Gi\"}}},{\"name\":\"istio-proxy\",\"image\":"
       "\"docker.io/istio/proxyv2:1.20.3\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
       "\"memory\":\"128Mi\"}}}],\"tolerations\":[{\"key\":\"dedicated\",\"operator\":"
       "\"Exists\"},{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}}";
  return o;
}

std::string WithServerMetadata(std::string_view object, std::string_view uid) {
  constexpr std::string_view kMetadata = "\"metadata\":{";
  std::string o(object);
  const size_t at = o.find(kMetadata);
  if (at != std::string::npos) {
    o.insert(at + kMetadata.size(),
             "\"uid\":\"" + std::string(uid) + "\",\"resourceVersion\":\"1\",");
  }
  return o;
}

std::string HamiNamesBody(const std::string& names_body) {
  return WithLimits(names_body,
                    "\"limits\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"nvidia.com/gpu\":\"1\","
                    "\"nvidia.com/gpucores\":\"30\",\"nvidia.com/gpumem\":\"20000\"}");
}

std::string GpuNamesBody(const std::string& names_body) {
  return WithLimits(names_body,
                    "\"limits\":{\"aliyun.com/gpu-mem\":\"4\",\"cpu\":\"2\",\"memory\":\"4Gi\"}");
}

}  // namespace schedext::bench
