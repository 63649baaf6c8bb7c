// goyaml3 reads a YAML stream as kustomize does (`kubectl apply -k`, Argo CD,
// Flux): go-yaml v3 (YAML 1.2 scalars: `yes`, `on`, `y` are strings) parses
// each document into a node, which is decoded into a map as kyaml's
// RNode.Map does (sigs.k8s.io/kustomize/kyaml/yaml/rnode.go), then into JSON.
// It prints one JSON array of the documents. Built offline in GOPATH mode
// from Debian's golang-gopkg-yaml.v3-dev by the tests (tests/yaml_readers.rs).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goyaml3 FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	dec := yaml.NewDecoder(f)
	docs := []json.RawMessage{}
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(err)
		}
		var v interface{}
		if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
			m := map[string]interface{}{}
			err = doc.Decode(&m)
			v = m
		} else {
			err = doc.Decode(&v)
		}
		if err != nil {
			fail(err)
		}
		if v == nil {
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			fail(err)
		}
		docs = append(docs, j)
	}
	out, err := json.Marshal(docs)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
