// Added to the rule oracle's klog stub: NFD's sources also log errors at a
// verbosity (off here, as every V level is).
package klog

func (v Verbose) ErrorS(err error, msg string, kv ...interface{}) {}
