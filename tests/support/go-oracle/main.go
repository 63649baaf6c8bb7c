// Differential oracle for kubelet-labeler's rules::template and rules::regex:
// runs Go's own text/template (missingkey=error, no extra functions) and
// regexp on the cases read as JSON from stdin, and writes the results as JSON.
// Built by tests/rules_go_oracle.rs with GO111MODULE=off (standard library only).
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// NFD's template data types (pkg/apis/nfd/nodefeaturerule): domain →
// feature → matched elements, the feature level typed interface{}. They
// decide what `index` gives for a missing key.
type matchedElement map[string]string

type templateCase struct {
	Src  string                                  `json:"src"`
	Data map[string]map[string][]matchedElement `json:"data"`
}

func nfdData(d map[string]map[string][]matchedElement) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	for dom, feats := range d {
		m := map[string]interface{}{}
		for f, elems := range feats {
			m[f] = elems
		}
		out[dom] = m
	}
	return out
}

type regexCase struct {
	Pattern string   `json:"pattern"`
	Inputs  []string `json:"inputs"`
}

type input struct {
	Templates []templateCase `json:"templates"`
	Regexes   []regexCase    `json:"regexes"`
}

type templateResult struct {
	Ok     bool        `json:"ok"`
	Out    string      `json:"out"`
	Err    string      `json:"err"`
	Map    [][2]string `json:"map"`
	MapErr string      `json:"map_err"`
}

type regexResult struct {
	Ok      bool   `json:"ok"`
	Err     string `json:"err"`
	Matches []bool `json:"matches"`
}

type output struct {
	Templates []templateResult `json:"templates"`
	Regexes   []regexResult    `json:"regexes"`
}

// lines as NFD's ExpandMap reads them: trimmed, empty skipped, key=value.
func expandMap(s string) ([][2]string, string) {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		kv := strings.SplitN(t, "=", 2)
		if len(kv) == 1 {
			return nil, "missing value in " + t
		}
		m[kv[0]] = kv[1]
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := [][2]string{}
	for _, k := range keys {
		out = append(out, [2]string{k, m[k]})
	}
	return out, ""
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	var out output
	for _, c := range in.Templates {
		var r templateResult
		t, err := template.New("").Option("missingkey=error").Parse(c.Src)
		if err != nil {
			r.Err = err.Error()
		} else {
			var buf bytes.Buffer
			if err := t.Execute(&buf, nfdData(c.Data)); err != nil {
				r.Err = err.Error()
			} else {
				r.Ok = true
				r.Out = buf.String()
				r.Map, r.MapErr = expandMap(r.Out)
			}
		}
		out.Templates = append(out.Templates, r)
	}
	for _, c := range in.Regexes {
		var r regexResult
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			r.Err = err.Error()
		} else {
			r.Ok = true
			for _, s := range c.Inputs {
				r.Matches = append(r.Matches, re.MatchString(s))
			}
		}
		out.Regexes = append(out.Regexes, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
