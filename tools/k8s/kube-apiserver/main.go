// Command kube-apiserver is the upstream API server of the release pinned in ../go.mod, built by
// scripts/dev k8s for schedext's control-plane tests; nothing here changes its behaviour.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// The upstream command registers these too: --logging-format=json, client-go and version metrics.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
