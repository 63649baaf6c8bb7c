// goyaml reads a YAML stream as oc apply and the MCO do: documents split on
// "---" lines (as k8s.io/apimachinery's YAML reader splits them), each read by
// sigs.k8s.io/yaml (go-yaml v2, YAML 1.1 scalars) into JSON. It prints one
// JSON array of the documents. Built offline in GOPATH mode from Debian's
// packages by the tests (see tests/render_goyaml.rs).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goyaml FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	docs := []json.RawMessage{}
	for _, doc := range split(data) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		docs = append(docs, j)
	}
	out, err := json.Marshal(docs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// split cuts a stream as k8s.io/apimachinery's YAMLReader does: at lines
// beginning "---" with nothing after it but spaces or a comment; a line
// beginning "---" with more is an error ("invalid Yaml document separator").
func split(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") {
			trimmed := strings.TrimSpace(line[3:])
			if len(trimmed) > 0 && trimmed[0] != '#' {
				fmt.Fprintf(os.Stderr, "invalid Yaml document separator: %s\n", trimmed)
				os.Exit(1)
			}
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return append(docs, cur.Bytes())
}
