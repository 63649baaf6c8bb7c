// Differential oracle for kubelet-labeler's merge URL check
// (src/cli/render/pointer.rs parse_mcs_url): how Go's net/url, which
// Ignition fetches its merge source with, reads each URL. Built by
// tests/merge_url_go.rs (standard library only).
//
// stdin: a JSON array of URL strings.
// stdout: a JSON array, one object per URL: "err" (the parse error, or
// ""), and the parts Ignition's HTTP fetch uses.
package main

import (
	"encoding/json"
	"net/url"
	"os"
)

type parts struct {
	Err        string `json:"err"`
	Scheme     string `json:"scheme"`
	Opaque     string `json:"opaque"`
	User       bool   `json:"user"`
	Hostname   string `json:"hostname"`
	Port       string `json:"port"`
	Path       string `json:"path"`
	RawPath    string `json:"rawpath"`
	RawQuery   string `json:"query"`
	ForceQuery bool   `json:"forcequery"`
	Fragment   string `json:"fragment"`
}

func main() {
	var in []string
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	out := make([]parts, 0, len(in))
	for _, s := range in {
		u, err := url.Parse(s)
		if err != nil {
			out = append(out, parts{Err: err.Error()})
			continue
		}
		out = append(out, parts{
			Scheme:     u.Scheme,
			Opaque:     u.Opaque,
			User:       u.User != nil,
			Hostname:   u.Hostname(),
			Port:       u.Port(),
			Path:       u.Path,
			RawPath:    u.RawPath,
			RawQuery:   u.RawQuery,
			ForceQuery: u.ForceQuery,
			Fragment:   u.Fragment,
		})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(2)
	}
}
