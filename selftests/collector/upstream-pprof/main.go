// SPDX-License-Identifier: GPL-2.0
// The standalone pprof: github.com/google/pprof's driver with its default
// fetcher, built from the copy the Go toolchain vendors (Makefile).  `go tool
// pprof` accepts -tls_cert/-tls_key/-tls_ca but fetches with its own client
// (cmd/pprof/pprof.go: only https+insecure), so it cannot present a client
// certificate; this driver does (serve_tls_test.sh).
package main

import (
	"fmt"
	"os"

	"github.com/google/pprof/driver"
)

func main() {
	if err := driver.PProf(&driver.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(2)
	}
}
