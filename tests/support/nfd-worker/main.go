// nfd-worker-features: the features nfd-worker's own sources (kernel,
// memory, network, local, and cpu's cstate/pstate/coprocessor) discover on
// a node tree, as `kubelet-labeler facts --json` prints them.
//
//	nfd-worker-features TREE   (as root: it chroots into TREE)
//
// Hand-written glue only: the sources are NFD's files, unchanged (build.sh
// takes them from a snapshot). NFD reads some paths without its hostpath
// prefix (/proc/modules, /proc/config.gz, features.d), so the tree is made
// the root with chroot(2) rather than with prefixes: every path is then read
// where nfd-worker reads it on the node.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
	"sigs.k8s.io/node-feature-discovery/source"
	"sigs.k8s.io/node-feature-discovery/source/cpu"
	_ "sigs.k8s.io/node-feature-discovery/source/kernel"
	_ "sigs.k8s.io/node-feature-discovery/source/local"
	_ "sigs.k8s.io/node-feature-discovery/source/memory"
	_ "sigs.k8s.io/node-feature-discovery/source/network"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nfd-worker-features TREE")
		os.Exit(2)
	}
	if err := syscall.Chroot(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "chroot:", err)
		os.Exit(1)
	}
	if err := os.Chdir("/"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, name := range []string{"kernel", "memory", "network", "local"} {
		if err := source.GetFeatureSource(name).Discover(); err != nil {
			fmt.Fprintln(os.Stderr, name, err)
		}
	}
	// Each source's features under `<source>.<feature>` (NFD's own merge).
	out := source.GetAllFeatures()
	// cpu's Discover also runs the CPUID instruction (cpuid, model, rdt,
	// security, sst); these three read sysfs only, set as its Discover
	// sets them: cstate when detected without error, the others always.
	if cstate, err := cpu.DetectCstate(); err == nil {
		out.Attributes["cpu.cstate"] = nfdv1alpha1.NewAttributeFeatures(cstate)
	}
	pstate, _ := cpu.DetectPstate()
	out.Attributes["cpu.pstate"] = nfdv1alpha1.NewAttributeFeatures(pstate)
	out.Attributes["cpu.coprocessor"] = nfdv1alpha1.NewAttributeFeatures(cpu.DiscoverCoprocessor())
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}
