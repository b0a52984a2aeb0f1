#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector for the tracing test from Go modules (no prebuilt
# download): go.opentelemetry.io/collector/otelcol with the OTLP receiver
# (go.opentelemetry.io/collector/receiver/otlpreceiver) and the contrib file exporter
# (github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter), wired the way
# the Collector builder (ocb) generates a distribution: a main that hands otelcol.NewCommand the
# component factories and the file config provider.
# Output: $PROMO_CACHE_DIR/otelcol/otelcol-<version>_r<rev>/bin/otelcol, reused when present.
# Not part of `yarn cluster start`: test/otel/collector.ts calls it lazily. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/otelcol/otelcol-${OTELCOL_VERSION}_r${OTELCOL_BUILD_REV}"
bin="$dir/bin/otelcol"
ready() { [[ -x "$bin" ]]; }
print() { echo "$bin"; }
once "$cache_root/otelcol/.build.lock" ready print
require go "install Go >= 1.25"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
work="$dir/src"
rm -rf "$work"
mkdir -p "$work" "$dir/bin"
cat >"$work/main.go" <<GO
// Program otelcol: the smallest collector the kpromo tracing test needs (OTLP in, JSON file out).
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory()); err != nil {
		return f, err
	}
	return f, nil
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "kpromo test collector", Version: "${OTELCOL_VERSION}"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
GO
printf 'module kpromo.local/otelcol\n\ngo 1.25.0\n' >"$work/go.mod"
(
  cd "$work"
  go get "go.opentelemetry.io/collector/otelcol@${OTELCOL_VERSION}" \
    "go.opentelemetry.io/collector/receiver/otlpreceiver@${OTELCOL_VERSION}" \
    "go.opentelemetry.io/collector/service@${OTELCOL_VERSION}" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@${OTELCOL_VERSION}" \
    "go.opentelemetry.io/collector/confmap@${OTELCOL_STABLE_VERSION}" \
    "go.opentelemetry.io/collector/confmap/provider/fileprovider@${OTELCOL_STABLE_VERSION}" \
    "go.opentelemetry.io/collector/component@${OTELCOL_STABLE_VERSION}" \
    "go.opentelemetry.io/collector/exporter@${OTELCOL_STABLE_VERSION}" \
    "go.opentelemetry.io/collector/receiver@${OTELCOL_STABLE_VERSION}" >&2
  go mod tidy >&2
  echo "otel/build.sh: building the collector ${OTELCOL_VERSION} (a few minutes the first time)" >&2
  nice -n 19 go build -gcflags "$test_gcflags" -ldflags "-s -w" -o "$bin.tmp" . >&2
)
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "otel/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
