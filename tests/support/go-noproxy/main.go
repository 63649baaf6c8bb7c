// Differential oracle for kubelet-labeler's noProxy reading
// (src/cli/iso/fleet/no_proxy.rs): whether Go's HTTP client, given
// HTTP_PROXY and NO_PROXY, fetches each URL through the proxy. Ignition
// hands its ignition.proxy (noProxy joined with ",") to
// golang.org/x/net/http/httpproxy; net/http's ProxyFromEnvironment runs the
// same package (vendored in the standard library) on the environment, read
// once per process. Built by tests/iso_fleet_trust.rs (standard library
// only).
//
// args: URLs. stdout: one line per URL, "proxied" or "direct" (or
// "error: ...").
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	for _, u := range os.Args[1:] {
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		p, err := http.ProxyFromEnvironment(req)
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case p != nil:
			fmt.Println("proxied")
		default:
			fmt.Println("direct")
		}
	}
}
