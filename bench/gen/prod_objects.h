// The generator's nodes and pods as the production-path benchmarks hand them
// to the API server (bench/prod_bench.cc) or straight to the cluster cache's
// decoder (bench/hot_path.cc): creatable v1 objects, every node with 4 shared
// GPUs of 16 GiB and 8 HAMi vGPU devices, every other pod holding 4 GiB of
// one device as the gpushare device plugin annotates it and one vGPU as
// HAMi's scheduler annotates it.
#ifndef SCHEDEXT_BENCH_GEN_PROD_OBJECTS_H_
#define SCHEDEXT_BENCH_GEN_PROD_OBJECTS_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace schedext::bench {

// `generated` (PayloadSet::node_json) with kind and apiVersion, no
// server-owned metadata, and the GPU resources in capacity and allocatable
// (keys kept sorted as Go writes them), and HAMi's register annotation of 8
// A100s of 80 GiB split 10 ways (the text form).
std::string NodeObject(std::string_view generated);

// A pod bound to `node` (no kubelet runs: it stays as created); `index`
// varies its requests and decides whether it holds GPU memory and a vGPU
// (20,000 MiB, 25 % of one device).
std::string PodObject(const std::string& name, const std::string& node, size_t index);

// `object` with the metadata the API server adds on create (uid,
// resourceVersion), as a LIST returns it.
std::string WithServerMetadata(std::string_view object, std::string_view uid);

// The names-mode body of the GPU profiles: `names_body` (PayloadSet::Body,
// Mode::kNames) with 4 GiB of GPU memory in the pod's limits. Empty when the
// generator's pod no longer has the shape this edits.
std::string GpuNamesBody(const std::string& names_body);
// The names-mode body of the HAMi profiles: one vGPU of 20,000 MiB and 30 %
// of a device's cores in the pod's limits; empty as above.
std::string HamiNamesBody(const std::string& names_body);

}  // namespace schedext::bench

#endif  // SCHEDEXT_BENCH_GEN_PROD_OBJECTS_H_
