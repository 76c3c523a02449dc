// Command kube-scheduler is the upstream scheduler of the release pinned in ../go.mod, with no
// out-of-tree plugins, built by scripts/dev k8s for schedext's control-plane tests.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// The upstream command registers these too: --logging-format=json, client-go and version metrics.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
