// nfd-worker-features: the features nfd-worker's own sources (kernel,
// memory, network, local, and cpu's cstate/pstate/coprocessor/rdt/security/
// sst) discover on a node tree, as `kubelet-labeler facts --json` prints them.
//
//	nfd-worker-features TREE [RECORD]   (as root: it chroots into TREE)
//
// CPUID: with TREE `/` the instruction runs (and the leaves NFD's code asked
// for are written to RECORD, in kubelet-labeler.cpuid's format); a tree
// holding kubelet-labeler.cpuid has them replayed from it; a tree without
// one has no CPU, so cpu.rdt and cpu.sst are left out and cpu.security
// keeps its sysfs parts (its CPUID parts need leaves 7 and 0x20 and up,
// which then read as zeros), as kubelet-labeler has them.
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
	"path/filepath"
	"syscall"

	"kubelet-labeler.test/cpuidreplay"

	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
	"sigs.k8s.io/node-feature-discovery/source"
	"sigs.k8s.io/node-feature-discovery/source/cpu"
	_ "sigs.k8s.io/node-feature-discovery/source/kernel"
	_ "sigs.k8s.io/node-feature-discovery/source/local"
	_ "sigs.k8s.io/node-feature-discovery/source/memory"
	_ "sigs.k8s.io/node-feature-discovery/source/network"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: nfd-worker-features TREE [RECORD]")
		os.Exit(2)
	}
	cpuKnown := true
	if os.Args[1] != "/" {
		rec := filepath.Join(os.Args[1], "kubelet-labeler.cpuid")
		if _, err := os.Stat(rec); err != nil {
			rec, cpuKnown = "", false
		}
		if err := cpuidreplay.Load(rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	cpuidreplay.Redetect()
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
	// Set always by its Discover, as these are.
	out.Attributes["cpu.security"] = nfdv1alpha1.NewAttributeFeatures(cpu.DiscoverSecurity())
	if cpuKnown {
		out.Attributes["cpu.rdt"] = nfdv1alpha1.NewAttributeFeatures(cpu.DiscoverRDT())
		out.Attributes["cpu.sst"] = nfdv1alpha1.NewAttributeFeatures(cpu.DiscoverSST())
	}
	if len(os.Args) == 3 {
		f, err := os.Create(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cpuidreplay.Write(f)
		f.Close()
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}
