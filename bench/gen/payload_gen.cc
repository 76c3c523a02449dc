#include "gen/payload_gen.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <initializer_list>
#include <utility>

namespace schedext::bench {
namespace {

// splitmix64: small, fast and the same on every platform (std distributions
// are not), which keeps bodies identical across toolchains.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  uint64_t Range(uint64_t lo, uint64_t hi) { return lo + Next() % (hi - lo + 1); }
  // True with probability `percent` / 100.
  bool Percent(double percent) { return static_cast<double>(Next() % 100000) < percent * 1000; }
  std::string Hex(size_t digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(digits, '0');
    for (char& c : s) {
      c = kHex[Next() & 15];
    }
    return s;
  }
  std::string Uid() {
    return Hex(8) + "-" + Hex(4) + "-4" + Hex(3) + "-" + "89ab"[Next() & 3] + Hex(3) + "-" +
           Hex(12);
  }

 private:
  uint64_t state_;
};

uint64_t Mix(uint64_t a, uint64_t b) {
  Rng r(a * 0x2545f4914f6cdd1dULL ^ (b + 0x632be59bd9b4e019ULL));
  r.Next();
  return r.Next();
}

std::string Num(uint64_t v) { return std::to_string(v); }

// Concatenation without `"literal" + std::string&&`, which trips a false
// -Wrestrict in g++ 12.
std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view p : parts) {
    size += p.size();
  }
  std::string s;
  s.reserve(size);
  for (std::string_view p : parts) {
    s += p;
  }
  return s;
}

// Appends `s` as a JSON string the way Go's encoding/json does: quotes,
// backslashes and control characters escaped, and <, >, & as \u003c \u003e \u0026.
void Str(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

// A map[string]string, keys sorted as Go writes maps.
void StrMap(std::string& out, Pairs pairs) {
  std::sort(pairs.begin(), pairs.end());
  out += '{';
  bool first = true;
  for (const auto& [k, v] : pairs) {
    if (!first) {
      out += ',';
    }
    first = false;
    Str(out, k);
    out += ':';
    Str(out, v);
  }
  out += '}';
}

// ---- The shared image pool ---------------------------------------------------

struct Image {
  std::string repo;    // registry/repository
  std::string digest;  // 64 hex
  std::string tag;
  uint64_t size;
};

std::vector<Image> MakeImagePool(uint64_t seed) {
  static constexpr std::array<std::string_view, 8> kRegistries = {
      "602401143452.dkr.ecr.us-west-2.amazonaws.com",
      "123456789012.dkr.ecr.us-west-2.amazonaws.com",
      "docker.io/library",
      "quay.io/prometheus",
      "registry.k8s.io",
      "public.ecr.aws/eks-distro",
      "ghcr.io/example-org",
      "nvcr.io/nvidia",
  };
  static constexpr std::array<std::string_view, 24> kRepos = {
      "amazon-k8s-cni",  "amazon-k8s-cni-init", "aws-ebs-csi-driver", "kube-proxy",
      "coredns",         "pause",               "node-exporter",      "fluent-bit",
      "istio-proxyv2",   "payments-api",        "checkout-web",       "search-indexer",
      "ml-inference",    "cuda-runtime",        "redis",              "nginx",
      "envoy",           "datadog-agent",       "cluster-autoscaler", "metrics-server",
      "orders-service",  "pytorch-training",    "kafka-connect",      "postgres-exporter"};
  Rng r(Mix(seed, 0xabcdef));
  std::vector<Image> pool;
  pool.reserve(160);
  for (size_t i = 0; i < 160; ++i) {
    Image im;
    const std::string_view registry = kRegistries[r.Next() % kRegistries.size()];
    im.repo = std::string(registry) + "/" + std::string(kRepos[r.Next() % kRepos.size()]);
    if (r.Percent(15)) {
      im.repo += '-';
      im.repo += r.Hex(4);
    }
    im.digest = r.Hex(64);
    im.tag = Cat({"v", Num(r.Range(0, 3)), ".", Num(r.Range(0, 30)), ".", Num(r.Range(0, 12))});
    if (r.Percent(30)) {
      im.tag += Cat({"-eksbuild.", Num(r.Range(1, 5))});
    }
    // 0.3–450 MB, a few CUDA/ML images up to 3.5 GB.
    im.size = r.Percent(6) ? r.Range(1'000'000'000, 3'500'000'000) : r.Range(300'000, 450'000'000);
    pool.push_back(std::move(im));
  }
  return pool;
}

// ---- Nodes --------------------------------------------------------------------

struct Instance {
  std::string_view type;
  int cpu;
  int mem_gib;
  int pods;
  int gpus;
  int percent;
};
constexpr std::array<Instance, 7> kInstances = {{
    {"m5.2xlarge", 8, 32, 58, 0, 30},
    {"m5.4xlarge", 16, 64, 234, 0, 30},
    {"m5.8xlarge", 32, 128, 234, 0, 10},
    {"c5.4xlarge", 16, 32, 234, 0, 10},
    {"r5.4xlarge", 16, 128, 234, 0, 10},
    {"g5.12xlarge", 48, 192, 234, 4, 6},
    {"p4d.24xlarge", 96, 1152, 737, 8, 4},
}};

constexpr std::array<std::string_view, 5> kTeams = {"platform", "data", "payments", "search",
                                                    "ml"};
constexpr std::string_view kRegion = "us-west-2";
constexpr std::string_view kTimestamp = "2024-03-11T08:42:17Z";

std::string NodeName(size_t index) {
  // A bijection of the index onto 24 bits: unique private IPs, spread out.
  const uint32_t v = static_cast<uint32_t>((index * 2654435761ULL) & 0xffffff);
  return Cat({"ip-10-", Num(v >> 16), "-", Num((v >> 8) & 255), "-", Num(v & 255), ".", kRegion,
              ".compute.internal"});
}

std::string NodeIp(const std::string& name) {
  // ip-10-a-b-c.<region>... -> 10.a.b.c
  std::string ip = name.substr(3, name.find('.') - 3);
  std::replace(ip.begin(), ip.end(), '-', '.');
  return ip;
}

void Condition(std::string& out, std::string_view type, std::string_view status,
               std::string_view reason, std::string_view message, bool first) {
  if (!first) {
    out += ',';
  }
  out += "{\"type\":";
  Str(out, type);
  out += ",\"status\":";
  Str(out, status);
  out += ",\"lastHeartbeatTime\":\"2024-03-14T10:21:05Z\",\"lastTransitionTime\":";
  Str(out, kTimestamp);
  out += ",\"reason\":";
  Str(out, reason);
  out += ",\"message\":";
  Str(out, message);
  out += '}';
}

// Quantities in the canonical forms the API server writes.
std::string Memory(uint64_t kib) { return Num(kib) + "Ki"; }

// capacity (allocatable=false) or allocatable: `mem_kib` is the capacity memory,
// `reserved_m` the CPU the kubelet keeps back.
void Resources(std::string& out, const Instance& it, bool allocatable, uint64_t mem_kib,
               uint64_t reserved_m) {
  const uint64_t cpu = static_cast<uint64_t>(it.cpu);
  Pairs p;
  p.reserve(8);
  p.emplace_back("attachable-volumes-aws-ebs", "25");
  if (allocatable) {
    // Mixed canonical forms: millicores, a plain byte count, Ki.
    p.emplace_back("cpu", Cat({Num(cpu * 1000 - reserved_m), "m"}));
    p.emplace_back("ephemeral-storage", "95551679124");
    p.emplace_back("memory", Memory(mem_kib - 1'011'632));
  } else {
    p.emplace_back("cpu", Num(cpu));
    p.emplace_back("ephemeral-storage", "104845292Ki");
    p.emplace_back("memory", Memory(mem_kib));
  }
  p.emplace_back("hugepages-1Gi", "0");
  p.emplace_back("hugepages-2Mi", "0");
  p.emplace_back("pods", Num(static_cast<uint64_t>(it.pods)));
  if (it.gpus > 0) {
    p.emplace_back("nvidia.com/gpu", Num(static_cast<uint64_t>(it.gpus)));
  }
  StrMap(out, std::move(p));
}

struct NodeOut {
  std::string json;
  std::string name;
};

NodeOut MakeNode(uint64_t seed, size_t index, const std::vector<Image>& pool) {
  Rng r(Mix(seed, index + 1));
  NodeOut node;
  node.name = NodeName(index);
  const std::string ip = NodeIp(node.name);
  const std::string instance_id = "i-0" + r.Hex(16);

  int pick = static_cast<int>(r.Range(0, 99));
  const Instance* it = &kInstances[0];
  for (const Instance& candidate : kInstances) {
    it = &candidate;
    if (pick < candidate.percent) {
      break;
    }
    pick -= candidate.percent;
  }
  const bool gpu = it->gpus > 0;
  const std::string zone = std::string(kRegion) + static_cast<char>('a' + r.Range(0, 2));
  const bool spot = r.Percent(20);
  const std::string nodegroup = std::string(gpu ? "gpu-" : "general-") + std::string(it->type) +
                                (spot ? "-spot" : "") + "-" + r.Hex(4);
  const bool unschedulable = r.Percent(3);
  // Taints on ~15 % of the nodes besides GPU ones: dedicated NoSchedule or
  // PreferNoSchedule, and the cordon taint on unschedulable nodes.
  const uint64_t taint_roll = r.Range(0, 999);

  std::string& o = node.json;
  o.reserve(16 * 1024);
  o += "{\"metadata\":{\"name\":";
  Str(o, node.name);
  o += ",\"uid\":";
  Str(o, r.Uid());
  o += ",\"resourceVersion\":";
  Str(o, Num(r.Range(10'000'000, 99'999'999)));
  o += ",\"creationTimestamp\":";
  Str(o, kTimestamp);
  o += ",\"labels\":";
  {
    Pairs l;
    l.reserve(24);
    l.emplace_back("beta.kubernetes.io/arch", "amd64");
    l.emplace_back("beta.kubernetes.io/instance-type", std::string(it->type));
    l.emplace_back("beta.kubernetes.io/os", "linux");
    l.emplace_back("eks.amazonaws.com/capacityType", spot ? "SPOT" : "ON_DEMAND");
    l.emplace_back("eks.amazonaws.com/nodegroup", nodegroup);
    l.emplace_back("eks.amazonaws.com/nodegroup-image", "ami-0" + r.Hex(16));
    l.emplace_back("eks.amazonaws.com/sourceLaunchTemplateId", "lt-0" + r.Hex(16));
    l.emplace_back("eks.amazonaws.com/sourceLaunchTemplateVersion", Num(r.Range(1, 12)));
    l.emplace_back("failure-domain.beta.kubernetes.io/region", std::string(kRegion));
    l.emplace_back("failure-domain.beta.kubernetes.io/zone", zone);
    l.emplace_back("kubernetes.io/arch", "amd64");
    l.emplace_back("kubernetes.io/hostname", node.name);
    l.emplace_back("kubernetes.io/os", "linux");
    l.emplace_back("node.kubernetes.io/instance-type", std::string(it->type));
    l.emplace_back("topology.kubernetes.io/region", std::string(kRegion));
    l.emplace_back("topology.kubernetes.io/zone", zone);
    if (r.Percent(70)) {
      l.emplace_back("topology.ebs.csi.aws.com/zone", zone);
    }
    if (r.Percent(50)) {
      l.emplace_back("k8s.io/cloud-provider-aws", r.Hex(32));
    }
    if (gpu) {
      l.emplace_back("nvidia.com/gpu.present", "true");
      l.emplace_back("nvidia.com/gpu.product", it->gpus == 8 ? "NVIDIA-A100-SXM4-40GB"
                                                             : "NVIDIA-A10G");
    }
    StrMap(o, std::move(l));
  }
  o += ",\"annotations\":";
  {
    Pairs a;
    a.reserve(8);
    a.emplace_back("alpha.kubernetes.io/provided-node-ip", ip);
    // A JSON document inside a string: escaped quotes on every node.
    a.emplace_back("csi.volume.kubernetes.io/nodeid", "{\"ebs.csi.aws.com\":\"" + instance_id + "\"}");
    a.emplace_back("node.alpha.kubernetes.io/ttl", "0");
    a.emplace_back("projectcalico.org/IPv4Address", ip + "/19");
    a.emplace_back("volumes.kubernetes.io/controller-managed-attach-detach", "true");
    StrMap(o, std::move(a));
  }
  o += "},\"spec\":{\"podCIDR\":";
  const std::string cidr = "172.16." + Num(index % 256) + ".0/24";
  Str(o, cidr);
  o += ",\"podCIDRs\":[";
  Str(o, cidr);
  o += "],\"providerID\":";
  Str(o, "aws:///" + zone + "/" + instance_id);
  if (unschedulable) {
    o += ",\"unschedulable\":true";
  }
  std::vector<std::string> taints;
  if (unschedulable) {
    taints.push_back(
        "{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\",\"timeAdded\":"
        "\"2024-03-14T09:00:00Z\"}");
  }
  if (gpu) {
    taints.push_back("{\"key\":\"nvidia.com/gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}");
  } else if (taint_roll < 70) {
    taints.push_back("{\"key\":\"dedicated\",\"value\":\"" +
                     std::string(kTeams[taint_roll % kTeams.size()]) +
                     "\",\"effect\":\"NoSchedule\"}");
  } else if (taint_roll < 135) {
    taints.push_back("{\"key\":\"dedicated\",\"value\":\"" +
                     std::string(kTeams[taint_roll % kTeams.size()]) +
                     "\",\"effect\":\"PreferNoSchedule\"}");
  }
  if (!taints.empty()) {
    o += ",\"taints\":[";
    for (size_t i = 0; i < taints.size(); ++i) {
      o += (i ? "," : "") + taints[i];
    }
    o += ']';
  }
  o += "},\"status\":{\"capacity\":";
  const uint64_t mem_kib =
      static_cast<uint64_t>(it->mem_gib) * 1024 * 1024 - r.Range(200'000, 900'000);
  const uint64_t reserved_m = 70 + 10 * r.Range(0, 6);
  Resources(o, *it, false, mem_kib, reserved_m);
  o += ",\"allocatable\":";
  Resources(o, *it, true, mem_kib, reserved_m);
  o += ",\"conditions\":[";
  Condition(o, "NetworkUnavailable", "False", "CalicoIsUp", "Calico is running on this node",
            true);
  Condition(o, "MemoryPressure", "False", "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available", false);
  Condition(o, "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
            false);
  Condition(o, "PIDPressure", "False", "KubeletHasSufficientPID",
            "kubelet has sufficient PID available", false);
  Condition(o, "Ready", "True", "KubeletReady", "kubelet is posting ready status", false);
  o += "],\"addresses\":[{\"type\":\"InternalIP\",\"address\":";
  Str(o, ip);
  o += '}';
  const bool external = r.Percent(20);
  std::string public_ip;
  if (external) {
    public_ip = "54." + Num(r.Range(0, 255)) + "." + Num(r.Range(0, 255)) + "." +
                Num(r.Range(1, 254));
    o += ",{\"type\":\"ExternalIP\",\"address\":";
    Str(o, public_ip);
    o += '}';
  }
  o += ",{\"type\":\"InternalDNS\",\"address\":";
  Str(o, node.name);
  o += '}';
  if (external) {
    std::string dns = "ec2-" + public_ip + "." + std::string(kRegion) + ".compute.amazonaws.com";
    std::replace(dns.begin(), dns.begin() + 4 + static_cast<long>(public_ip.size()), '.', '-');
    o += ",{\"type\":\"ExternalDNS\",\"address\":";
    Str(o, dns);
    o += '}';
  }
  o += ",{\"type\":\"Hostname\",\"address\":";
  Str(o, node.name);
  o += "}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},\"nodeInfo\":{\"machineID\":";
  Str(o, r.Hex(32));
  o += ",\"systemUUID\":";
  Str(o, "ec2" + r.Hex(5) + "-" + r.Hex(4) + "-" + r.Hex(4) + "-" + r.Hex(4) + "-" + r.Hex(12));
  o += ",\"bootID\":";
  Str(o, r.Uid());
  o += ",\"kernelVersion\":\"5.10.209-198.858.amzn2.x86_64\",\"osImage\":\"Amazon Linux 2\","
       "\"containerRuntimeVersion\":\"containerd://1.7.11\",\"kubeletVersion\":"
       "\"v1.26.12-eks-5e0fdde\",\"kubeProxyVersion\":\"v1.26.12-eks-5e0fdde\","
       "\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"},\"images\":[";
  {
    // 30–50 distinct images of the pool, largest first as the kubelet sorts them.
    const size_t count = r.Range(30, 50);
    std::vector<size_t> chosen;
    while (chosen.size() < count) {
      const size_t k = r.Next() % pool.size();
      if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) {
        chosen.push_back(k);
      }
    }
    std::sort(chosen.begin(), chosen.end(),
              [&](size_t a, size_t b) { return pool[a].size > pool[b].size; });
    for (size_t i = 0; i < chosen.size(); ++i) {
      const Image& im = pool[chosen[i]];
      o += i ? ",{\"names\":[" : "{\"names\":[";
      Str(o, im.repo + "@sha256:" + im.digest);
      o += ',';
      Str(o, im.repo + ":" + im.tag);
      o += "],\"sizeBytes\":" + Num(im.size) + "}";
    }
  }
  o += ']';
  if (r.Percent(40)) {
    const size_t volumes = r.Range(1, 4);
    std::vector<std::string> vols;
    for (size_t i = 0; i < volumes; ++i) {
      vols.push_back("kubernetes.io/csi/ebs.csi.aws.com^vol-0" + r.Hex(16));
    }
    std::sort(vols.begin(), vols.end());
    o += ",\"volumesInUse\":[";
    for (size_t i = 0; i < vols.size(); ++i) {
      o += i ? "," : "";
      Str(o, vols[i]);
    }
    o += "],\"volumesAttached\":[";
    for (size_t i = 0; i < vols.size(); ++i) {
      o += i ? ",{\"name\":" : "{\"name\":";
      Str(o, vols[i]);
      o += ",\"devicePath\":\"\"}";
    }
    o += ']';
  }
  o += "}}";
  return node;
}

// ---- Pods ---------------------------------------------------------------------

// A Deployment pod with an app container and an istio-proxy sidecar, as
// performance.md §2 describes; `victim` pods are running low-priority pods
// (scheduled, smaller: no affinity).
std::string MakePod(uint64_t seed, size_t index, bool victim, std::string_view node_name) {
  Rng r(Mix(seed ^ 0x5eed, index));
  const std::string app = victim ? "batch-worker" : "checkout-api";
  const std::string hash = r.Hex(10);
  const std::string name = app + "-" + hash + "-" + r.Hex(5);
  const std::string token_volume = "kube-api-access-" + r.Hex(5);
  std::string o;
  o.reserve(8 * 1024);
  o += "{\"metadata\":{\"name\":";
  Str(o, name);
  o += ",\"generateName\":";
  Str(o, app + "-" + hash + "-");
  o += ",\"namespace\":\"shop\",\"uid\":";
  Str(o, r.Uid());
  o += ",\"resourceVersion\":";
  Str(o, Num(r.Range(10'000'000, 99'999'999)));
  o += ",\"creationTimestamp\":\"2024-03-14T10:20:41Z\",\"labels\":";
  StrMap(o, {{"app", app},
             {"app.kubernetes.io/name", app},
             {"app.kubernetes.io/part-of", "shop"},
             {"pod-template-hash", hash},
             {"security.istio.io/tlsMode", "istio"},
             {"service.istio.io/canonical-name", app},
             {"service.istio.io/canonical-revision", "v3"},
             {"version", "v3"}});
  o += ",\"annotations\":";
  StrMap(o, {{"kubectl.kubernetes.io/default-container", "app"},
             {"kubectl.kubernetes.io/restartedAt", "2024-03-12T16:02:11Z"},
             {"prometheus.io/port", "15020"},
             {"prometheus.io/scrape", "true"},
             // An escaped JSON document with <, > and & in it.
             {"sidecar.istio.io/status",
              "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],"
              "\"volumes\":[\"workload-socket\",\"istio-envoy\",\"istio-data\",\"istio-podinfo\","
              "\"istio-token\",\"istiod-ca-cert\"],\"imagePullSecrets\":null,"
              "\"revision\":\"default\",\"match\":\"weight>50 && zone<c\"}"}});
  o += ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":";
  Str(o, app + "-" + hash);
  o += ",\"uid\":";
  Str(o, r.Uid());
  o += ",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"volumes\":[{\"name\":"
       "\"config\",\"configMap\":{\"name\":";
  Str(o, app + "-config");
  o += ",\"defaultMode\":420}},{\"name\":";
  Str(o, token_volume);
  o += ",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,"
       "\"path\":\"token\"}},{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":"
       "\"ca.crt\",\"path\":\"ca.crt\"}]}},{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\","
       "\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}]}}],"
       "\"defaultMode\":420}}],\"containers\":[{\"name\":\"app\",\"image\":";
  Str(o, "123456789012.dkr.ecr.us-west-2.amazonaws.com/platform/" + app + ":v3.14.2");
  o += ",\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"},{\"name\":"
       "\"metrics\",\"containerPort\":9090,\"protocol\":\"TCP\"}],\"env\":[{\"name\":"
       "\"SERVICE_NAME\",\"value\":";
  Str(o, app);
  o += "},{\"name\":\"UPSTREAM_URL\",\"value\":";
  Str(o, "https://inventory.shop.svc.cluster.local:8443/v1/stock?region=us-west-2&tier=gold");
  o += "},{\"name\":\"POD_IP\",\"valueFrom\":{\"fieldRef\":{"
       "\"apiVersion\":\"v1\",\"fieldPath\":\"status.podIP\"}}}],\"resources\":{\"limits\":{"
       "\"cpu\":\"2\",\"memory\":\"4Gi\"},\"requests\":{\"cpu\":\"500m\",\"memory\":\"2Gi\"}},"
       "\"volumeMounts\":[{\"name\":\"config\",\"readOnly\":true,\"mountPath\":\"/etc/app\"},{"
       "\"name\":";
  Str(o, token_volume);
  o += ",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
       "\"livenessProbe\":{\"httpGet\":{\"path\":\"/app-health/app/livez\",\"port\":15020,"
       "\"scheme\":\"HTTP\"},\"initialDelaySeconds\":10,\"timeoutSeconds\":2,\"periodSeconds\":"
       "10,\"successThreshold\":1,\"failureThreshold\":3},\"readinessProbe\":{\"httpGet\":{"
       "\"path\":\"/app-health/app/readyz\",\"port\":15020,\"scheme\":\"HTTP\"},"
       "\"initialDelaySeconds\":5,\"timeoutSeconds\":2,\"periodSeconds\":5,\"successThreshold\":"
       "1,\"failureThreshold\":3},\"terminationMessagePath\":\"/dev/termination-log\","
       "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\","
       "\"securityContext\":{\"runAsUser\":1000,\"runAsNonRoot\":true,"
       "\"allowPrivilegeEscalation\":false}},{\"name\":\"istio-proxy\",\"image\":"
       "\"docker.io/istio/proxyv2:1.20.3\",\"args\":[\"proxy\",\"sidecar\",\"--domain\","
       "\"$(POD_NAMESPACE).svc.cluster.local\",\"--proxyLogLevel=warning\","
       "\"--log_output_level=default:info\"],"
       "\"ports\":[{\"name\":\"http-envoy-prom\",\"containerPort\":15090,\"protocol\":\"TCP\"}],"
       "\"env\":[{\"name\":\"PILOT_CERT_PROVIDER\",\"value\":\"istiod\"},{\"name\":"
       "\"CA_ADDR\",\"value\":\"istiod.istio-system.svc:15012\"}],\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":"
       "\"1Gi\"},\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}},\"volumeMounts\":[{"
       "\"name\":\"istio-envoy\",\"mountPath\":\"/etc/istio/proxy\"},{\"name\":";
  Str(o, token_volume);
  o += ",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
       "\"readinessProbe\":{\"httpGet\":{\"path\":\"/healthz/ready\",\"port\":15021,"
       "\"scheme\":\"HTTP\"},\"initialDelaySeconds\":1,\"timeoutSeconds\":3,\"periodSeconds\":"
       "2,\"successThreshold\":1,\"failureThreshold\":30},\"terminationMessagePath\":"
       "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
       "\"IfNotPresent\",\"securityContext\":{\"capabilities\":{\"drop\":[\"ALL\"]},"
       "\"privileged\":false,\"runAsUser\":1337,\"runAsGroup\":1337,\"runAsNonRoot\":true,"
       "\"readOnlyRootFilesystem\":true,\"allowPrivilegeEscalation\":false}}],"
       "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
       "\"ClusterFirst\",\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"},"
       "\"serviceAccountName\":\"checkout\",\"serviceAccount\":\"checkout\"";
  if (victim) {
    o += ",\"nodeName\":";
    Str(o, node_name);
  }
  o += ",\"securityContext\":{\"fsGroup\":1000}";
  if (!victim) {
    o += ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
         "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
         "\"node.kubernetes.io/instance-type\",\"operator\":\"In\",\"values\":[\"m5.2xlarge\","
         "\"m5.4xlarge\",\"m5.8xlarge\",\"c5.4xlarge\"]},{\"key\":"
         "\"eks.amazonaws.com/capacityType\",\"operator\":\"NotIn\",\"values\":[\"SPOT\"]}]}]},"
         "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":50,\"preference\":{"
         "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
         "\"values\":[\"us-west-2a\"]}]}}]},\"podAntiAffinity\":{"
         "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
         "\"podAffinityTerm\":{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"app\","
         "\"operator\":\"In\",\"values\":[";
    Str(o, app);
    o += "]}]},\"topologyKey\":\"kubernetes.io/hostname\"}}]}}";
  }
  o += ",\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":\"dedicated\","
       "\"operator\":\"Equal\",\"value\":\"platform\",\"effect\":\"NoSchedule\"},{\"key\":"
       "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
       "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
       "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]";
  o += victim ? ",\"priorityClassName\":\"batch-low\",\"priority\":-10" : ",\"priority\":0";
  o += ",\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
       "\"status\":{\"phase\":";
  o += victim ? "\"Running\"" : "\"Pending\"";
  o += ",\"qosClass\":\"Burstable\"}}";
  return o;
}

std::string PodUid(std::string_view pod) {
  const size_t at = pod.find("\"uid\":\"");
  return std::string(pod.substr(at + 7, 36));
}

}  // namespace

PayloadSet::PayloadSet(uint64_t seed, size_t max_nodes) : seed_(seed) {
  pod_ = MakePod(seed, 0, false, "");
  const std::vector<Image> pool = MakeImagePool(seed);
  nodes_.reserve(max_nodes);
  names_.reserve(max_nodes);
  for (size_t i = 0; i < max_nodes; ++i) {
    NodeOut n = MakeNode(seed, i, pool);
    nodes_.push_back(std::move(n.json));
    names_.push_back(std::move(n.name));
  }
}

std::string PayloadSet::Body(size_t n, Mode mode, Verb verb) const {
  n = std::min(n, nodes_.size());
  std::string o;
  if (verb != Verb::kPreempt) {
    size_t bytes = pod_.size() + 64;
    for (size_t i = 0; i < n; ++i) {
      bytes += (mode == Mode::kFull ? nodes_[i].size() : names_[i].size()) + 3;
    }
    o.reserve(bytes);
    o += "{\"Pod\":";
    o += pod_;
    if (mode == Mode::kFull) {
      o += ",\"Nodes\":{\"metadata\":{},\"items\":[";
      for (size_t i = 0; i < n; ++i) {
        if (i) {
          o += ',';
        }
        o += nodes_[i];
      }
      o += "]},\"NodeNames\":null}";
    } else {
      o += ",\"Nodes\":null,\"NodeNames\":[";
      for (size_t i = 0; i < n; ++i) {
        if (i) {
          o += ',';
        }
        Str(o, names_[i]);
      }
      o += "]}";
    }
    return o;
  }
  // ExtenderPreemptionArgs: a map keyed by node name, so sorted by name.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return names_[a] < names_[b]; });
  o += "{\"Pod\":";
  o += pod_;
  o += mode == Mode::kFull ? ",\"NodeNameToVictims\":{" : ",\"NodeNameToVictims\":null,"
                                                          "\"NodeNameToMetaVictims\":{";
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    if (k) {
      o += ',';
    }
    Str(o, names_[i]);
    o += ":{\"Pods\":[";
    const size_t victims = 1 + (Mix(seed_, i) & 1);
    for (size_t v = 0; v < victims; ++v) {
      if (v) {
        o += ',';
      }
      const std::string pod = MakePod(seed_, 1000 + i * 2 + v, true, names_[i]);
      if (mode == Mode::kFull) {
        o += pod;
      } else {
        o += "{\"UID\":";
        Str(o, PodUid(pod));
        o += '}';
      }
    }
    o += "],\"NumPDBViolations\":0}";
  }
  o += mode == Mode::kFull ? "},\"NodeNameToMetaVictims\":null}" : "}}";
  return o;
}

NodeStats PayloadSet::Stats(size_t n) const {
  NodeStats s;
  n = std::min(n, nodes_.size());
  s.count = n;
  if (n == 0) {
    return s;
  }
  std::vector<size_t> sizes;
  size_t images = 0;
  s.min_name = SIZE_MAX;
  for (size_t i = 0; i < n; ++i) {
    const std::string& j = nodes_[i];
    sizes.push_back(j.size());
    s.tainted += j.find("\"taints\":") != std::string::npos;
    s.unschedulable += j.find("\"unschedulable\":true") != std::string::npos;
    s.gpu += j.find("\"nvidia.com/gpu.present\"") != std::string::npos;
    for (size_t at = j.find("{\"names\":"); at != std::string::npos;
         at = j.find("{\"names\":", at + 1)) {
      ++images;
    }
    s.min_name = std::min(s.min_name, names_[i].size());
    s.max_name = std::max(s.max_name, names_[i].size());
  }
  std::sort(sizes.begin(), sizes.end());
  s.min_bytes = sizes.front();
  s.median_bytes = sizes[n / 2];
  s.max_bytes = sizes.back();
  s.mean_images = static_cast<double>(images) / static_cast<double>(n);
  return s;
}

bool ParseMode(std::string_view text, Mode& out) {
  if (text == "full") {
    out = Mode::kFull;
  } else if (text == "names") {
    out = Mode::kNames;
  } else {
    return false;
  }
  return true;
}

bool ParseVerb(std::string_view text, Verb& out) {
  if (text == "filter") {
    out = Verb::kFilter;
  } else if (text == "prioritize") {
    out = Verb::kPrioritize;
  } else if (text == "preempt") {
    out = Verb::kPreempt;
  } else {
    return false;
  }
  return true;
}

}  // namespace schedext::bench
