// Package cpuidreplay is where this build's CPUID instructions go: NFD's
// pkg/cpuid and klauspost/cpuid call Call with their own (unchanged)
// assembly. With a recording loaded it answers from it instead (a leaf it
// does not hold reads as zeros, as kubelet-labeler's replay does);
// without one it runs the instruction and records each leaf asked for.
package cpuidreplay

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

type key struct{ leaf, sub uint32 }

var (
	replay   map[key][4]uint32
	recorded = map[key][4]uint32{}
	// Redetect re-runs klauspost/cpuid's detection (set by the file this
	// build adds to it): it first ran in its init, before Load.
	Redetect func()
)

// Load replays the recording in file (kubelet-labeler.cpuid's format);
// an empty name replays no leaves at all.
func Load(file string) error {
	replay = map[key][4]uint32{}
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "#")
		w := strings.Fields(line)
		if len(w) != 6 {
			continue
		}
		var v [6]uint32
		ok := true
		for i, x := range w {
			n, err := strconv.ParseUint(strings.TrimPrefix(x, "0x"), 16, 32)
			ok = ok && err == nil
			v[i] = uint32(n)
		}
		if ok {
			replay[key{v[0], v[1]}] = [4]uint32{v[2], v[3], v[4], v[5]}
		}
	}
	return s.Err()
}

// Call answers CPUID(eax, ecx).
func Call(real func(eax, ecx uint32) (uint32, uint32, uint32, uint32), eax, ecx uint32) (uint32, uint32, uint32, uint32) {
	if replay != nil {
		r := replay[key{eax, ecx}]
		return r[0], r[1], r[2], r[3]
	}
	a, b, c, d := real(eax, ecx)
	recorded[key{eax, ecx}] = [4]uint32{a, b, c, d}
	return a, b, c, d
}

// Write prints the leaves the instruction gave, in the recording format.
func Write(w io.Writer) {
	keys := make([]key, 0, len(recorded))
	for k := range recorded {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].leaf < keys[j].leaf || keys[i].leaf == keys[j].leaf && keys[i].sub < keys[j].sub
	})
	fmt.Fprintln(w, "# leaf subleaf eax ebx ecx edx (CPUID, hex)")
	for _, k := range keys {
		r := recorded[k]
		fmt.Fprintf(w, "%x %x %08x %08x %08x %08x\n", k.leaf, k.sub, r[0], r[1], r[2], r[3])
	}
}
