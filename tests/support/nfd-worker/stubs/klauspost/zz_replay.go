// Added to klauspost/cpuid (build.sh): its CPUID calls go through
// cpuidreplay; main re-runs Detect once a recording is loaded.
package cpuid

import "kubelet-labeler.test/cpuidreplay"

func init() {
	realEx := cpuidex
	cpuidex = func(op, op2 uint32) (uint32, uint32, uint32, uint32) {
		return cpuidreplay.Call(realEx, op, op2)
	}
	// Its asm for one argument zeroes ECX first.
	cpuid = func(op uint32) (uint32, uint32, uint32, uint32) {
		return cpuidreplay.Call(realEx, op, 0)
	}
	cpuidreplay.Redetect = Detect
}
