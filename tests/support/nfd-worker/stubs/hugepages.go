// Added to the k8s.io/api/core/v1 stub: the one constant NFD's memory
// source uses (k8s.io/api/core/v1/types.go).
package v1

const ResourceHugePagesPrefix = "hugepages-"
