// go-baseline: a minimal Kubernetes scheduler extender written the way typical
// Go extenders are: encoding/json into structs with the Kubernetes field
// names, a filter and a prioritize over the nodes, replies with encoding/json,
// net/http. Standard library only. It is the "typical Go extender" that
// bench/prod and bench/ab measure schedext against, in the same run, on the
// same bodies.
//
//	go-baseline --listen 127.0.0.1:PORT [--directory full-N.json]
//
// --directory loads node objects for node-cache (NodeNames) requests, as a Go
// extender with nodeCacheCapable: true would keep them in an informer cache.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// ---- Kubernetes types (the fields the bodies carry, with their JSON names) ----

type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp *time.Time        `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	ManagedFields     []json.RawMessage `json:"managedFields,omitempty"`
}

type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type ResourceList map[string]string

type Taint struct {
	Key       string     `json:"key"`
	Value     string     `json:"value,omitempty"`
	Effect    string     `json:"effect"`
	TimeAdded *time.Time `json:"timeAdded,omitempty"`
}

type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

type NodeSpec struct {
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	ProviderID    string   `json:"providerID,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []Taint  `json:"taints,omitempty"`
}

type NodeCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	LastHeartbeatTime  time.Time `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}

type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type DaemonEndpoint struct {
	Port int32 `json:"Port"`
}

type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

type NodeSystemInfo struct {
	MachineID               string `json:"machineID"`
	SystemUUID              string `json:"systemUUID"`
	BootID                  string `json:"bootID"`
	KernelVersion           string `json:"kernelVersion"`
	OSImage                 string `json:"osImage"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	KubeletVersion          string `json:"kubeletVersion"`
	KubeProxyVersion        string `json:"kubeProxyVersion"`
	OperatingSystem         string `json:"operatingSystem"`
	Architecture            string `json:"architecture"`
}

type ContainerImage struct {
	Names     []string `json:"names"`
	SizeBytes int64    `json:"sizeBytes,omitempty"`
}

type AttachedVolume struct {
	Name       string `json:"name"`
	DevicePath string `json:"devicePath"`
}

type NodeStatus struct {
	Capacity        ResourceList        `json:"capacity,omitempty"`
	Allocatable     ResourceList        `json:"allocatable,omitempty"`
	Phase           string              `json:"phase,omitempty"`
	Conditions      []NodeCondition     `json:"conditions,omitempty"`
	Addresses       []NodeAddress       `json:"addresses,omitempty"`
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitempty"`
	NodeInfo        NodeSystemInfo      `json:"nodeInfo,omitempty"`
	Images          []ContainerImage    `json:"images,omitempty"`
	VolumesInUse    []string            `json:"volumesInUse,omitempty"`
	VolumesAttached []AttachedVolume    `json:"volumesAttached,omitempty"`
}

type Node struct {
	Metadata ObjectMeta `json:"metadata,omitempty"`
	Spec     NodeSpec   `json:"spec,omitempty"`
	Status   NodeStatus `json:"status,omitempty"`
}

type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

type NodeList struct {
	Metadata ListMeta `json:"metadata"`
	Items    []Node   `json:"items"`
}

type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

type Container struct {
	Name      string               `json:"name"`
	Image     string               `json:"image,omitempty"`
	Command   []string             `json:"command,omitempty"`
	Args      []string             `json:"args,omitempty"`
	Ports     []json.RawMessage    `json:"ports,omitempty"`
	Env       []json.RawMessage    `json:"env,omitempty"`
	Resources ResourceRequirements `json:"resources,omitempty"`
}

type PodSpec struct {
	Volumes           []json.RawMessage `json:"volumes,omitempty"`
	InitContainers    []Container       `json:"initContainers,omitempty"`
	Containers        []Container       `json:"containers"`
	NodeSelector      map[string]string `json:"nodeSelector,omitempty"`
	NodeName          string            `json:"nodeName,omitempty"`
	Affinity          json.RawMessage   `json:"affinity,omitempty"`
	SchedulerName     string            `json:"schedulerName,omitempty"`
	Tolerations       []Toleration      `json:"tolerations,omitempty"`
	PriorityClassName string            `json:"priorityClassName,omitempty"`
	Priority          *int32            `json:"priority,omitempty"`
	Overhead          ResourceList      `json:"overhead,omitempty"`
}

type PodStatus struct {
	Phase    string `json:"phase,omitempty"`
	QOSClass string `json:"qosClass,omitempty"`
}

type Pod struct {
	Metadata ObjectMeta `json:"metadata,omitempty"`
	Spec     PodSpec    `json:"spec,omitempty"`
	Status   PodStatus  `json:"status,omitempty"`
}

// ---- The extender v1 messages ----

type ExtenderArgs struct {
	Pod       *Pod      `json:"Pod"`
	Nodes     *NodeList `json:"Nodes"`
	NodeNames *[]string `json:"NodeNames"`
}

type FailedNodesMap map[string]string

type ExtenderFilterResult struct {
	Nodes                      *NodeList      `json:"Nodes"`
	NodeNames                  *[]string      `json:"NodeNames"`
	FailedNodes                FailedNodesMap `json:"FailedNodes"`
	FailedAndUnresolvableNodes FailedNodesMap `json:"FailedAndUnresolvableNodes"`
	Error                      string         `json:"Error"`
}

type HostPriority struct {
	Host  string `json:"Host"`
	Score int64  `json:"Score"`
}

// ---- Policies: NodeHealth-like and TaintToleration-like ----

func tolerates(t Toleration, taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "Exists":
		return true
	case "", "Equal":
		return t.Value == taint.Value
	}
	return false
}

func tolerated(pod *Pod, taint Taint) bool {
	for _, t := range pod.Spec.Tolerations {
		if tolerates(t, taint) {
			return true
		}
	}
	return false
}

// filterNode returns "" when the node passes, else the reason.
func filterNode(pod *Pod, node *Node) string {
	if node.Spec.Unschedulable {
		return "node(s) were unschedulable"
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" && c.Status != "True" {
			return "node(s) were not ready"
		}
	}
	for _, taint := range node.Spec.Taints {
		if (taint.Effect == "NoSchedule" || taint.Effect == "NoExecute") && !tolerated(pod, taint) {
			return "node(s) had untolerated taint"
		}
	}
	return ""
}

func preferNoScheduleCount(pod *Pod, node *Node) int64 {
	var n int64
	for _, taint := range node.Spec.Taints {
		if taint.Effect == "PreferNoSchedule" && !tolerated(pod, taint) {
			n++
		}
	}
	return n
}

// ---- Server ----

type server struct {
	cache map[string]*Node // node-cache mode
}

// nodes returns the request's nodes: the objects it carried, or the cached
// ones for its names.
func (s *server) nodes(args *ExtenderArgs) ([]*Node, []string) {
	var nodes []*Node
	var unknown []string
	if args.Nodes != nil {
		nodes = make([]*Node, len(args.Nodes.Items))
		for i := range args.Nodes.Items {
			nodes[i] = &args.Nodes.Items[i]
		}
		return nodes, nil
	}
	if args.NodeNames != nil {
		nodes = make([]*Node, 0, len(*args.NodeNames))
		for _, name := range *args.NodeNames {
			if n, ok := s.cache[name]; ok {
				nodes = append(nodes, n)
			} else {
				unknown = append(unknown, name)
			}
		}
	}
	return nodes, unknown
}

func reply(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("encode: %v", err)
	}
}

func (s *server) filter(w http.ResponseWriter, r *http.Request) {
	var args ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := ExtenderFilterResult{FailedNodes: FailedNodesMap{}, FailedAndUnresolvableNodes: FailedNodesMap{}}
	nodes, unknown := s.nodes(&args)
	for _, name := range unknown {
		result.FailedAndUnresolvableNodes[name] = "node(s) unknown"
	}
	var passing []Node
	var passingNames []string
	for _, node := range nodes {
		if reason := filterNode(args.Pod, node); reason != "" {
			result.FailedAndUnresolvableNodes[node.Metadata.Name] = reason
			continue
		}
		if args.Nodes != nil {
			passing = append(passing, *node)
		} else {
			passingNames = append(passingNames, node.Metadata.Name)
		}
	}
	if args.Nodes != nil {
		result.Nodes = &NodeList{Items: passing}
	} else {
		result.NodeNames = &passingNames
	}
	reply(w, &result)
}

func (s *server) prioritize(w http.ResponseWriter, r *http.Request) {
	var args ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	nodes, _ := s.nodes(&args)
	counts := make([]int64, len(nodes))
	var max int64
	for i, node := range nodes {
		counts[i] = preferNoScheduleCount(args.Pod, node)
		if counts[i] > max {
			max = counts[i]
		}
	}
	list := make([]HostPriority, len(nodes))
	for i, node := range nodes {
		score := int64(10)
		if max > 0 {
			score = 10 - counts[i]*10/max
		}
		list[i] = HostPriority{Host: node.Metadata.Name, Score: score}
	}
	reply(w, list)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8890", "loopback address to listen on")
	directory := flag.String("directory", "", "full-mode ExtenderArgs body whose nodes serve node-cache requests")
	flag.Parse()
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || (host != "127.0.0.1" && host != "::1" && host != "localhost") {
		log.Fatalf("--listen must be a loopback address, got %q", *listen)
	}
	s := &server{cache: map[string]*Node{}}
	if *directory != "" {
		f, err := os.Open(*directory)
		if err != nil {
			log.Fatal(err)
		}
		var args ExtenderArgs
		if err := json.NewDecoder(f).Decode(&args); err != nil || args.Nodes == nil {
			log.Fatalf("%s: not a full-mode ExtenderArgs body: %v", *directory, err)
		}
		f.Close()
		for i := range args.Nodes.Items {
			s.cache[args.Nodes.Items[i].Metadata.Name] = &args.Nodes.Items[i]
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", s.filter)
	mux.HandleFunc("/prioritize", s.prioritize)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	// Port 0 lets the caller avoid choosing a free port: the line below names
	// the one bound.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("go-baseline: %d cached nodes, listening on %s", len(s.cache), ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
