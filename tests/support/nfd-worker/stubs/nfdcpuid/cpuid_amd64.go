// Replaces NFD's pkg/cpuid/cpuid_amd64.go (its cpuid_amd64.s, the
// instruction, is taken unchanged): the same API, each call through
// cpuidreplay so that a recording can stand in for the CPU.
package cpuid

import "kubelet-labeler.test/cpuidreplay"

type ReturnValue struct {
	EAX, EBX, ECX, EDX uint32
}

func Cpuid(eax, ecx uint32) *ReturnValue {
	r := &ReturnValue{}
	r.EAX, r.EBX, r.ECX, r.EDX = cpuidreplay.Call(cpuidAsm, eax, ecx)
	return r
}

func cpuidAsm(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
